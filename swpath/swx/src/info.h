/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a built SWX pipeline holds, read once through rte_swx_ctl's info
 * calls, in the form the control plane uses: each table's key layout (where
 * each match field sits in the key, in which byte order), each action's
 * argument layout, selectors, learners, register and meter arrays, ports.
 *
 * Byte order, as the pipeline has it: header fields are in network order
 * (they are the packet's bytes), metadata fields and action arguments in
 * host order, but for arguments the spec marks network order.
 */
#ifndef SWX_INFO_H
#define SWX_INFO_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_swx_ctl.h>

struct rte_swx_pipeline;

struct swx_field {
	enum rte_swx_table_match_type match;
	bool network_order;	/* a header field */
	uint32_t n_bits;
	uint32_t offset;	/* bytes into the table's key */
};

struct swx_table_layout {
	char name[RTE_SWX_CTL_NAME_SIZE];
	char args[RTE_SWX_CTL_NAME_SIZE]; /* the table type's create() arguments */
	enum rte_swx_table_match_type match; /* EXACT when every field is */
	uint32_t key_size;	/* bytes */
	uint32_t key_offset;	/* bytes into the header or metadata area */
	uint8_t *key_mask0;	/* key_size bytes: 0xff where a field is */
	uint32_t action_data_size; /* the largest of its actions' */
	rte_swx_hash_func_t hash_func;
	uint32_t size;		/* most entries */
	bool default_is_const;
	uint32_t n_fields;
	struct swx_field *fields;
	uint32_t n_actions;
	uint32_t *actions;	/* pipeline action ids */
	bool *action_for_entries;
	bool *action_for_default;
};

struct swx_arg {
	char name[RTE_SWX_CTL_NAME_SIZE];
	uint32_t n_bits;
	uint32_t offset;	/* bytes into the action data */
	bool network_order;
};

struct swx_action_layout {
	char name[RTE_SWX_CTL_NAME_SIZE];
	uint32_t data_size;	/* bytes */
	uint32_t n_args;
	struct swx_arg *args;
};

struct swx_selector_layout {
	char name[RTE_SWX_CTL_NAME_SIZE];
	uint32_t group_id_offset;	/* bytes into the metadata */
	uint32_t member_id_offset;
	uint32_t selector_offset;
	uint32_t selector_size;
	uint8_t *selector_mask;
	uint32_t n_groups_max;
	uint32_t n_members_per_group_max;
};

struct swx_array_layout {	/* a register array or a meter array */
	char name[RTE_SWX_CTL_NAME_SIZE];
	uint32_t size;
};

struct swx_info {
	struct rte_swx_ctl_pipeline_info pipeline;
	struct swx_table_layout *tables;
	struct swx_action_layout *actions;
	struct swx_selector_layout *selectors;
	char (*learners)[RTE_SWX_CTL_NAME_SIZE];
	struct swx_array_layout *regarrays;
	struct swx_array_layout *metarrays;
};

/* 0, or -1 (a call failed, or out of memory). */
int swx_info_read(struct rte_swx_pipeline *p, struct swx_info *info);
void swx_info_free(struct swx_info *info);

/* Ids by name; -1 when there is none. */
int swx_info_table(const struct swx_info *info, const char *name);
/* A learner table's index (the data plane adds its entries), or -1. */
int swx_info_learner(const struct swx_info *info, const char *name);
int swx_info_action(const struct swx_info *info, const char *name);
int swx_info_selector(const struct swx_info *info, const char *name);
int swx_info_regarray(const struct swx_info *info, const char *name);
int swx_info_metarray(const struct swx_info *info, const char *name);

#endif /* SWX_INFO_H */
