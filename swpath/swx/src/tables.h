/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control plane's side of one SWX pipeline's tables: the data plane
 * reads one table-state array while changes go into the other, which is then
 * published, and the first is brought level once no packet in flight reads
 * it any more. This is what rte_swx_ctl does, but for one thing: its
 * table_entry_add() looks for a duplicate key by walking a list of every
 * entry of the table (rte_swx_ctl.c: table_entries_find), so each add costs
 * O(entries), and a NAT with 64k sessions per direction would take about
 * 30 us of key compares per new entry. Here duplicates are the caller's
 * business (the P4Runtime layer keeps every entry in a hash index), and an
 * exact-match add is the table's own O(1) add, about 16 ns measured.
 *
 * Regular tables whose type adds incrementally (exact match) get two table
 * objects, one per array, each changed by the same operations in the same
 * order (so an entry has the same entry id in both: direct counters index
 * by it). The others (wildcard, LPM) are rebuilt from their entry list on
 * a change and the object is shared once both arrays have it. Selector
 * tables get two objects, changed group by group. Learner tables are the
 * data plane's and one object serves both arrays.
 *
 * "No packet in flight reads it": each of the pipeline's internal packet
 * threads takes the table-state array at its rx (rte_swx_pipeline_internal.h),
 * so after publishing, the old array is free once every thread has taken
 * the new one. rte_swx_ctl sleeps 100 us instead, at the end of each commit;
 * this waits for the fact, and only at the start of the next commit, which
 * first brings the retired array level: a commit returns once its changes
 * are published, without waiting for a pipeline thread to get a CPU.
 *
 * Not thread-safe: one control thread calls all of these.
 */
#ifndef SWX_TABLES_H
#define SWX_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rte_swx_pipeline;
struct swx_tables;

/* One entry of a regular table, in the table's own layout (info.h). */
struct swx_entry {
	uint32_t table;		/* pipeline table id */
	const uint8_t *key;	/* key_size bytes */
	const uint8_t *mask;	/* key_size bytes; NULL: every key bit */
	uint32_t priority;	/* wildcard and LPM: 0 is the highest */
	uint32_t action;	/* pipeline action id */
	const uint8_t *data;	/* action data, the action's size */
};

struct swx_tables *swx_tables_create(struct rte_swx_pipeline *p);
void swx_tables_free(struct swx_tables *t);

/*
 * Changes, staged until swx_tables_commit. add() inserts, or replaces the
 * entry with the same key (and mask and priority, for a wildcard table);
 * delete() removes one (a key that is not there is no error). Each returns
 * an index into the commit's results, or -1 (out of memory, bad table).
 */
int swx_tables_add(struct swx_tables *t, const struct swx_entry *e);
int swx_tables_delete(struct swx_tables *t, const struct swx_entry *e);
int swx_tables_set_default(struct swx_tables *t, uint32_t table, uint32_t action,
			   const uint8_t *data);
/* A selector's group: member ids with their weights (n 0: the group is empty). */
int swx_tables_set_group(struct swx_tables *t, uint32_t selector, uint32_t group,
			 const uint32_t *members, const uint32_t *weights, uint32_t n);

/*
 * Applies the staged changes: result[i] is 0 or a negative errno for the
 * i-th change (-ENOSPC: the table is full); a failed change is left out,
 * the others take effect together. Returns how many failed. result may be
 * NULL. The data plane forwards throughout: a packet that arrives after
 * the call returned sees every change; one already in the pipeline may
 * finish with the tables as they were.
 */
int swx_tables_commit(struct swx_tables *t, int *result, size_t n_result);
/* Changes staged and not committed. */
size_t swx_tables_staged(const struct swx_tables *t);

/* The table's default action now (committed): its id, and its data
 * (the table's action_data_size bytes) into data. -1: no such table. */
int swx_tables_get_default(const struct swx_tables *t, uint32_t table, uint32_t *action,
			   uint8_t *data);

/* The entry id the data plane gives this exact-match key (a direct
 * counter's index), after it was committed; -1 when it is not there. */
int64_t swx_tables_entry_id(struct swx_tables *t, uint32_t table, const uint8_t *key);

/* The flag that says a thread runs this pipeline (swx_runner.running): while
 * it is false, a commit does not wait for packets in flight (there are
 * none). NULL: nothing runs it. */
void swx_tables_watch(struct swx_tables *t, const bool *running);

#endif /* SWX_TABLES_H */
