/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "info.h"

static int
read_fields(struct rte_swx_pipeline *p, uint32_t id, struct swx_table_layout *t)
{
	uint32_t first = UINT32_MAX, last = 0, exact = 0;
	struct rte_swx_ctl_table_match_field_info mf;

	t->fields = calloc(t->n_fields ? t->n_fields : 1, sizeof(*t->fields));
	if (t->fields == NULL)
		return -1;
	/* The key is the span from the first field to the end of the last:
	 * the pipeline lays a table's fields out together (p4c-dpdk copies
	 * them into one metadata struct when they come from several places). */
	for (uint32_t i = 0; i < t->n_fields; i++) {
		if (rte_swx_ctl_table_match_field_info_get(p, id, i, &mf) != 0)
			return -1;
		t->fields[i].match = mf.match_type;
		t->fields[i].network_order = mf.is_header != 0;
		t->fields[i].n_bits = mf.n_bits;
		t->fields[i].offset = mf.offset; /* bits, made relative below */
		if (mf.offset < first)
			first = mf.offset;
		if (mf.offset + mf.n_bits > last)
			last = mf.offset + mf.n_bits;
		exact += mf.match_type == RTE_SWX_TABLE_MATCH_EXACT;
	}
	t->match = exact == t->n_fields ? RTE_SWX_TABLE_MATCH_EXACT : RTE_SWX_TABLE_MATCH_WILDCARD;
	if (t->n_fields == 0)
		return 0;
	t->key_offset = first / 8;
	t->key_size = (last - first) / 8;
	t->key_mask0 = calloc(1, t->key_size);
	if (t->key_mask0 == NULL)
		return -1;
	for (uint32_t i = 0; i < t->n_fields; i++) {
		t->fields[i].offset = (t->fields[i].offset - first) / 8;
		memset(&t->key_mask0[t->fields[i].offset], 0xff, t->fields[i].n_bits / 8);
	}
	return 0;
}

static int
read_table(struct rte_swx_pipeline *p, const struct swx_info *info, uint32_t id,
	   struct swx_table_layout *t)
{
	struct rte_swx_ctl_table_info ti;
	struct rte_swx_ctl_table_action_info ta;

	if (rte_swx_ctl_table_info_get(p, id, &ti) != 0)
		return -1;
	memcpy(t->name, ti.name, sizeof(t->name));
	memcpy(t->args, ti.args, sizeof(t->args));
	t->hash_func = ti.hash_func;
	t->size = ti.size;
	t->default_is_const = ti.default_action_is_const != 0;
	t->n_fields = ti.n_match_fields;
	t->n_actions = ti.n_actions;
	if (read_fields(p, id, t) < 0)
		return -1;
	t->actions = calloc(t->n_actions + 1, sizeof(*t->actions));
	t->action_for_entries = calloc(t->n_actions + 1, sizeof(bool));
	t->action_for_default = calloc(t->n_actions + 1, sizeof(bool));
	if (t->actions == NULL || t->action_for_entries == NULL || t->action_for_default == NULL)
		return -1;
	for (uint32_t i = 0; i < t->n_actions; i++) {
		if (rte_swx_ctl_table_action_info_get(p, id, i, &ta) != 0)
			return -1;
		t->actions[i] = ta.action_id;
		t->action_for_entries[i] = ta.action_is_for_table_entries != 0;
		t->action_for_default[i] = ta.action_is_for_default_entry != 0;
		if (info->actions[ta.action_id].data_size > t->action_data_size)
			t->action_data_size = info->actions[ta.action_id].data_size;
	}
	return 0;
}

static int
read_action(struct rte_swx_pipeline *p, uint32_t id, struct swx_action_layout *a)
{
	struct rte_swx_ctl_action_info ai;
	struct rte_swx_ctl_action_arg_info arg;

	if (rte_swx_ctl_action_info_get(p, id, &ai) != 0)
		return -1;
	memcpy(a->name, ai.name, sizeof(a->name));
	a->n_args = ai.n_args;
	a->args = calloc(ai.n_args ? ai.n_args : 1, sizeof(*a->args));
	if (a->args == NULL)
		return -1;
	for (uint32_t i = 0; i < ai.n_args; i++) {
		if (rte_swx_ctl_action_arg_info_get(p, id, i, &arg) != 0)
			return -1;
		memcpy(a->args[i].name, arg.name, sizeof(a->args[i].name));
		a->args[i].n_bits = arg.n_bits;
		a->args[i].offset = a->data_size;
		a->args[i].network_order = arg.is_network_byte_order != 0;
		a->data_size += arg.n_bits / 8;
	}
	return 0;
}

static int
read_selector(struct rte_swx_pipeline *p, uint32_t id, struct swx_selector_layout *s)
{
	struct rte_swx_ctl_selector_info si;
	struct rte_swx_ctl_table_match_field_info f;
	uint32_t first = UINT32_MAX, last = 0;

	if (rte_swx_ctl_selector_info_get(p, id, &si) != 0)
		return -1;
	memcpy(s->name, si.name, sizeof(s->name));
	s->n_groups_max = si.n_groups_max;
	s->n_members_per_group_max = si.n_members_per_group_max;
	if (rte_swx_ctl_selector_group_id_field_info_get(p, id, &f) != 0)
		return -1;
	s->group_id_offset = f.offset / 8;
	if (rte_swx_ctl_selector_member_id_field_info_get(p, id, &f) != 0)
		return -1;
	s->member_id_offset = f.offset / 8;
	for (uint32_t i = 0; i < si.n_selector_fields; i++) {
		if (rte_swx_ctl_selector_field_info_get(p, id, i, &f) != 0)
			return -1;
		if (f.offset < first)
			first = f.offset;
		if (f.offset + f.n_bits > last)
			last = f.offset + f.n_bits;
	}
	if (si.n_selector_fields == 0)
		return -1;
	s->selector_offset = first / 8;
	s->selector_size = (last - first) / 8;
	s->selector_mask = calloc(1, s->selector_size);
	if (s->selector_mask == NULL)
		return -1;
	for (uint32_t i = 0; i < si.n_selector_fields; i++) {
		if (rte_swx_ctl_selector_field_info_get(p, id, i, &f) != 0)
			return -1;
		memset(&s->selector_mask[(f.offset - first) / 8], 0xff, f.n_bits / 8);
	}
	return 0;
}

static int
read_arrays(struct rte_swx_pipeline *p, struct swx_info *info)
{
	const struct rte_swx_ctl_pipeline_info *pi = &info->pipeline;

	info->regarrays = calloc(pi->n_regarrays + 1, sizeof(*info->regarrays));
	info->metarrays = calloc(pi->n_metarrays + 1, sizeof(*info->metarrays));
	info->learners = calloc(pi->n_learners + 1, sizeof(*info->learners));
	if (info->regarrays == NULL || info->metarrays == NULL || info->learners == NULL)
		return -1;
	for (uint32_t i = 0; i < pi->n_regarrays; i++) {
		struct rte_swx_ctl_regarray_info r;

		if (rte_swx_ctl_regarray_info_get(p, i, &r) != 0)
			return -1;
		memcpy(info->regarrays[i].name, r.name, sizeof(r.name));
		info->regarrays[i].size = r.size;
	}
	for (uint32_t i = 0; i < pi->n_metarrays; i++) {
		struct rte_swx_ctl_metarray_info m;

		if (rte_swx_ctl_metarray_info_get(p, i, &m) != 0)
			return -1;
		memcpy(info->metarrays[i].name, m.name, sizeof(m.name));
		info->metarrays[i].size = m.size;
	}
	for (uint32_t i = 0; i < pi->n_learners; i++) {
		struct rte_swx_ctl_learner_info l;

		if (rte_swx_ctl_learner_info_get(p, i, &l) != 0)
			return -1;
		memcpy(info->learners[i], l.name, sizeof(l.name));
	}
	return 0;
}

int
swx_info_read(struct rte_swx_pipeline *p, struct swx_info *info)
{
	struct rte_swx_ctl_pipeline_info *pi = &info->pipeline;

	memset(info, 0, sizeof(*info));
	if (rte_swx_ctl_pipeline_info_get(p, pi) != 0)
		goto fail;
	info->actions = calloc(pi->n_actions + 1, sizeof(*info->actions));
	info->tables = calloc(pi->n_tables + 1, sizeof(*info->tables));
	info->selectors = calloc(pi->n_selectors + 1, sizeof(*info->selectors));
	if (info->actions == NULL || info->tables == NULL || info->selectors == NULL)
		goto fail;
	for (uint32_t i = 0; i < pi->n_actions; i++)
		if (read_action(p, i, &info->actions[i]) < 0)
			goto fail;
	for (uint32_t i = 0; i < pi->n_tables; i++)
		if (read_table(p, info, i, &info->tables[i]) < 0)
			goto fail;
	for (uint32_t i = 0; i < pi->n_selectors; i++)
		if (read_selector(p, i, &info->selectors[i]) < 0)
			goto fail;
	if (read_arrays(p, info) < 0)
		goto fail;
	return 0;
fail:
	swx_info_free(info);
	return -1;
}

void
swx_info_free(struct swx_info *info)
{
	if (info->tables)
		for (uint32_t i = 0; i < info->pipeline.n_tables; i++) {
			struct swx_table_layout *t = &info->tables[i];

			free(t->fields);
			free(t->key_mask0);
			free(t->actions);
			free(t->action_for_entries);
			free(t->action_for_default);
		}
	if (info->actions)
		for (uint32_t i = 0; i < info->pipeline.n_actions; i++)
			free(info->actions[i].args);
	if (info->selectors)
		for (uint32_t i = 0; i < info->pipeline.n_selectors; i++)
			free(info->selectors[i].selector_mask);
	free(info->tables);
	free(info->actions);
	free(info->selectors);
	free(info->learners);
	free(info->regarrays);
	free(info->metarrays);
	memset(info, 0, sizeof(*info));
}

#define FIND(list, count, name)                                         \
	do {                                                            \
		for (uint32_t i_ = 0; i_ < (count); i_++)               \
			if (strcmp((list)[i_].name, (name)) == 0)       \
				return (int)i_;                         \
		return -1;                                              \
	} while (0)

int
swx_info_table(const struct swx_info *info, const char *name)
{
	FIND(info->tables, info->pipeline.n_tables, name);
}

int
swx_info_learner(const struct swx_info *info, const char *name)
{
	for (uint32_t i = 0; i < info->pipeline.n_learners; i++)
		if (strcmp(info->learners[i], name) == 0)
			return (int)i;
	return -1;
}

int
swx_info_action(const struct swx_info *info, const char *name)
{
	FIND(info->actions, info->pipeline.n_actions, name);
}

int
swx_info_selector(const struct swx_info *info, const char *name)
{
	FIND(info->selectors, info->pipeline.n_selectors, name);
}

int
swx_info_regarray(const struct swx_info *info, const char *name)
{
	FIND(info->regarrays, info->pipeline.n_regarrays, name);
}

int
swx_info_metarray(const struct swx_info *info, const char *name)
{
	FIND(info->metarrays, info->pipeline.n_metarrays, name);
}
