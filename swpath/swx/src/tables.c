/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <rte_atomic.h>
#include <rte_swx_pipeline.h>
#include <rte_swx_table.h>
#include <rte_swx_table_selector.h>

/* The packet threads' table-state pointers (see tables.h). The header is
 * the installed DPDK's own, from its source package (make deps). */
#include <rte_swx_pipeline_internal.h>

#include "info.h"
#include "tables.h"

enum swx_op_kind { OP_ADD, OP_DEL, OP_DEFAULT, OP_GROUP };

struct swx_op {
	enum swx_op_kind kind;
	uint32_t id;			/* table or selector */
	struct rte_swx_table_entry *entry; /* ADD, DEL, DEFAULT (action, data) */
	uint32_t group;			/* GROUP */
	struct rte_swx_table_selector_group *members;
	int result;
};

struct swx_table_ctl {
	struct rte_swx_table_ops ops;
	struct rte_swx_table_params params;
	bool incremental;		/* ops.add: one object per array */
	struct rte_swx_table_entry_list entries; /* not incremental: all */
	uint32_t n_entries;
	struct rte_swx_table_entry_list next; /* this commit's list */
	uint32_t n_next;
	bool dirty;			/* next differs from entries */
	void *built;			/* the object built from next */
	uint8_t *probe;			/* a key buffer for entry ids */
	void *mailbox;
};

struct swx_tables {
	struct rte_swx_pipeline *p;
	struct swx_info info;
	uint32_t n_states;		/* tables + selectors + learners */
	struct rte_swx_table_state *ts[2];
	unsigned active;		/* ts[active] is published */
	struct swx_table_ctl *tables;
	struct rte_swx_table_selector_params *selectors;
	struct swx_op *ops;		/* staged for the next commit */
	size_t n_ops, cap_ops;
	/* The last commit's changes: published, and not yet in the retired
	 * array, which packets in flight may still read (settle() waits for
	 * them, then applies these). */
	struct swx_op *retired_ops;
	size_t n_retired_ops, cap_retired_ops;
	const bool *running;
};

/* The entry's action data is the table's size, not its action's: a table
 * type's create() copies params.action_data_size bytes of every entry (as
 * DPDK's own rte_swx_ctl allocates them), past a smaller action's
 * arguments, which stay zero. */
static struct rte_swx_table_entry *
entry_copy(const struct swx_table_layout *l, const struct swx_entry *e, uint32_t data_size)
{
	struct rte_swx_table_entry *c = calloc(1, sizeof(*c));
	uint32_t room = RTE_MAX(RTE_MAX(l->action_data_size, data_size), 1u);

	if (c == NULL)
		return NULL;
	c->key = calloc(1, l->key_size ? l->key_size : 1);
	c->action_data = calloc(1, room);
	if (e->mask != NULL)
		c->key_mask = calloc(1, l->key_size ? l->key_size : 1);
	if (c->key == NULL || c->action_data == NULL || (e->mask != NULL && c->key_mask == NULL)) {
		free(c->key);
		free(c->key_mask);
		free(c->action_data);
		free(c);
		return NULL;
	}
	if (e->key != NULL)
		memcpy(c->key, e->key, l->key_size);
	if (e->mask != NULL)
		memcpy(c->key_mask, e->mask, l->key_size);
	if (e->data != NULL && data_size)
		memcpy(c->action_data, e->data, data_size);
	c->key_priority = e->priority;
	c->action_id = e->action;
	return c;
}

static void
entry_free(struct rte_swx_table_entry *e)
{
	if (e == NULL)
		return;
	free(e->key);
	free(e->key_mask);
	free(e->action_data);
	free(e);
}

static void
list_free(struct rte_swx_table_entry_list *list)
{
	struct rte_swx_table_entry *e;

	while ((e = TAILQ_FIRST(list)) != NULL) {
		TAILQ_REMOVE(list, e, node);
		entry_free(e);
	}
}

/* Same key, mask and priority: the same entry of a wildcard table. */
static bool
same_match(const struct swx_table_ctl *t, const struct rte_swx_table_entry *a,
	   const struct rte_swx_table_entry *b)
{
	size_t n = t->params.key_size;

	if (memcmp(a->key, b->key, n) != 0 || a->key_priority != b->key_priority)
		return false;
	if (a->key_mask == NULL || b->key_mask == NULL)
		return a->key_mask == b->key_mask;
	return memcmp(a->key_mask, b->key_mask, n) == 0;
}

static int
init_tables(struct swx_tables *t)
{
	const struct rte_swx_ctl_pipeline_info *pi = &t->info.pipeline;
	struct rte_swx_table_state *ts0 = t->ts[0], *ts1 = t->ts[1];

	for (uint32_t i = 0; i < pi->n_tables; i++) {
		struct swx_table_layout *l = &t->info.tables[i];
		struct swx_table_ctl *tb = &t->tables[i];
		int stub;

		TAILQ_INIT(&tb->entries);
		TAILQ_INIT(&tb->next);
		if (rte_swx_ctl_table_ops_get(t->p, i, &tb->ops, &stub) != 0)
			return -1;
		tb->params = (struct rte_swx_table_params){
			.match_type = l->match,
			.key_size = l->key_size,
			.key_offset = l->key_offset,
			.key_mask0 = l->key_mask0,
			.action_data_size = l->action_data_size,
			.hash_func = l->hash_func,
			.n_keys_max = l->size,
		};
		tb->incremental = !stub && tb->ops.add != NULL;
		ts1[i].default_action_id = ts0[i].default_action_id;
		if (l->action_data_size) {
			ts1[i].default_action_data = malloc(l->action_data_size);
			if (ts1[i].default_action_data == NULL)
				return -1;
			memcpy(ts1[i].default_action_data, ts0[i].default_action_data,
			       l->action_data_size);
		}
		if (stub)
			continue;
		if (tb->incremental) {
			ts1[i].obj = tb->ops.create(&tb->params, NULL, l->args, t->p->numa_node);
			tb->probe = calloc(1, l->key_offset + l->key_size + 8);
			if (tb->ops.mailbox_size_get)
				tb->mailbox = calloc(1, tb->ops.mailbox_size_get() + 8);
			if (ts1[i].obj == NULL || tb->probe == NULL ||
			    (tb->ops.mailbox_size_get && tb->mailbox == NULL))
				return -1;
		} else {
			ts1[i].obj = ts0[i].obj;
		}
	}
	return 0;
}

/* The bytes the pipeline gave a learner's default action data: its own
 * actions' largest (rte_swx_pipeline_build), which may be fewer than the
 * program's largest action has; a copy of more reads past them. */
static size_t
learner_data_size(const struct swx_tables *t, uint32_t learner)
{
	struct rte_swx_ctl_learner_info li;
	size_t size = 0;

	if (rte_swx_ctl_learner_info_get(t->p, learner, &li) != 0)
		return 0;
	for (uint32_t a = 0; a < li.n_actions; a++) {
		struct rte_swx_ctl_table_action_info ai;

		if (rte_swx_ctl_learner_action_info_get(t->p, learner, a, &ai) == 0 &&
		    t->info.actions[ai.action_id].data_size > size)
			size = t->info.actions[ai.action_id].data_size;
	}
	return size;
}

static int
init_others(struct swx_tables *t)
{
	const struct rte_swx_ctl_pipeline_info *pi = &t->info.pipeline;
	struct rte_swx_table_state *ts0 = t->ts[0], *ts1 = t->ts[1];
	uint32_t base = pi->n_tables;

	t->selectors = calloc(pi->n_selectors + 1, sizeof(*t->selectors));
	if (t->selectors == NULL)
		return -1;
	for (uint32_t s = 0; s < pi->n_selectors; s++) {
		const struct swx_selector_layout *l = &t->info.selectors[s];

		t->selectors[s] = (struct rte_swx_table_selector_params){
			.group_id_offset = l->group_id_offset,
			.selector_size = l->selector_size,
			.selector_offset = l->selector_offset,
			.selector_mask = l->selector_mask,
			.member_id_offset = l->member_id_offset,
			.n_groups_max = l->n_groups_max,
			.n_members_per_group_max = l->n_members_per_group_max,
		};
		ts1[base + s].obj = rte_swx_table_selector_create(&t->selectors[s], NULL,
								  t->p->numa_node);
		if (ts1[base + s].obj == NULL)
			return -1;
	}
	/* Learners: the data plane's, one object for both arrays. Their
	 * default action data is per array. */
	base += pi->n_selectors;
	for (uint32_t l = 0; l < pi->n_learners; l++) {
		ts1[base + l] = ts0[base + l];
		ts1[base + l].default_action_data = NULL;
		if (ts0[base + l].default_action_data != NULL) {
			size_t size = learner_data_size(t, l);

			ts1[base + l].default_action_data = calloc(1, size + 1);
			if (ts1[base + l].default_action_data == NULL)
				return -1;
			memcpy(ts1[base + l].default_action_data,
			       ts0[base + l].default_action_data, size);
		}
	}
	return 0;
}

struct swx_tables *
swx_tables_create(struct rte_swx_pipeline *p)
{
	struct swx_tables *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->p = p;
	if (swx_info_read(p, &t->info) < 0)
		goto fail;
	t->n_states = t->info.pipeline.n_tables + t->info.pipeline.n_selectors +
		      t->info.pipeline.n_learners;
	if (rte_swx_pipeline_table_state_get(p, &t->ts[0]) != 0)
		goto fail;
	t->ts[1] = calloc(t->n_states + 1, sizeof(struct rte_swx_table_state));
	t->tables = calloc(t->info.pipeline.n_tables + 1, sizeof(*t->tables));
	if (t->ts[1] == NULL || t->tables == NULL)
		goto fail;
	if (init_tables(t) < 0 || init_others(t) < 0)
		goto fail;
	return t;
fail:
	swx_tables_free(t);
	return NULL;
}

static void
ops_free(struct swx_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		entry_free(ops[i].entry);
		free(ops[i].members);
	}
}

/* Frees the array that is not published, but what it shares with the one
 * that is (the pipeline frees that one: rte_swx_pipeline_free). Changes
 * the retired array still lacked go with it. */
void
swx_tables_free(struct swx_tables *t)
{
	const struct rte_swx_ctl_pipeline_info *pi;
	struct rte_swx_table_state *mine, *live;

	if (t == NULL)
		return;
	pi = &t->info.pipeline;
	mine = t->ts[!t->active];
	live = t->ts[t->active];
	for (uint32_t i = 0; mine != NULL && t->tables != NULL && i < t->n_states; i++) {
		if (mine[i].obj != NULL && mine[i].obj != live[i].obj) {
			if (i < pi->n_tables)
				t->tables[i].ops.free(mine[i].obj);
			else if (i < pi->n_tables + pi->n_selectors)
				rte_swx_table_selector_free(mine[i].obj);
		}
		free(mine[i].default_action_data);
	}
	if (mine != t->ts[0])
		free(mine);
	for (uint32_t i = 0; t->tables != NULL && i < pi->n_tables; i++) {
		list_free(&t->tables[i].entries);
		list_free(&t->tables[i].next);
		free(t->tables[i].probe);
		free(t->tables[i].mailbox);
	}
	ops_free(t->ops, t->n_ops);
	ops_free(t->retired_ops, t->n_retired_ops);
	free(t->ops);
	free(t->retired_ops);
	free(t->tables);
	free(t->selectors);
	swx_info_free(&t->info);
	free(t);
}

void
swx_tables_watch(struct swx_tables *t, const bool *running)
{
	t->running = running;
}

size_t
swx_tables_staged(const struct swx_tables *t)
{
	return t->n_ops;
}

static struct swx_op *
op_new(struct swx_tables *t, enum swx_op_kind kind, uint32_t id)
{
	if (t->n_ops == t->cap_ops) {
		size_t cap = t->cap_ops ? 2 * t->cap_ops : 256;
		struct swx_op *ops = realloc(t->ops, cap * sizeof(*ops));

		if (ops == NULL)
			return NULL;
		t->ops = ops;
		t->cap_ops = cap;
	}
	t->ops[t->n_ops] = (struct swx_op){ .kind = kind, .id = id };
	return &t->ops[t->n_ops];
}

static int
stage_entry(struct swx_tables *t, enum swx_op_kind kind, const struct swx_entry *e)
{
	struct swx_op *o;
	uint32_t size;

	if (e->table >= t->info.pipeline.n_tables || e->action >= t->info.pipeline.n_actions)
		return -1;
	o = op_new(t, kind, e->table);
	if (o == NULL)
		return -1;
	size = kind == OP_DEFAULT ? t->info.tables[e->table].action_data_size
				  : t->info.actions[e->action].data_size;
	o->entry = entry_copy(&t->info.tables[e->table], e, size);
	if (o->entry == NULL)
		return -1;
	return (int)t->n_ops++;
}

int
swx_tables_add(struct swx_tables *t, const struct swx_entry *e)
{
	return stage_entry(t, OP_ADD, e);
}

int
swx_tables_delete(struct swx_tables *t, const struct swx_entry *e)
{
	return stage_entry(t, OP_DEL, e);
}

int
swx_tables_set_default(struct swx_tables *t, uint32_t table, uint32_t action,
		       const uint8_t *data)
{
	struct swx_entry e = { .table = table, .action = action, .data = data };

	return stage_entry(t, OP_DEFAULT, &e);
}

int
swx_tables_set_group(struct swx_tables *t, uint32_t selector, uint32_t group,
		     const uint32_t *members, const uint32_t *weights, uint32_t n)
{
	struct rte_swx_table_selector_group *g;
	struct swx_op *o;

	if (selector >= t->info.pipeline.n_selectors)
		return -1;
	/* the group and its members in one allocation */
	g = calloc(1, sizeof(*g) + n * sizeof(struct rte_swx_table_selector_member));
	o = g ? op_new(t, OP_GROUP, selector) : NULL;
	if (o == NULL) {
		free(g);
		return -1;
	}
	TAILQ_INIT(&g->members);
	for (uint32_t i = 0; i < n; i++) {
		struct rte_swx_table_selector_member *m =
			(struct rte_swx_table_selector_member *)(g + 1) + i;

		m->member_id = members[i];
		m->member_weight = weights ? weights[i] : 1;
		TAILQ_INSERT_TAIL(&g->members, m, node);
	}
	o->group = group;
	o->members = g;
	return (int)t->n_ops++;
}

/* A non-incremental table's list for this commit: a copy of its entries
 * the first time this commit changes it. */
static int
next_list(struct swx_table_ctl *tb, const struct swx_table_layout *l, const struct swx_info *info)
{
	struct rte_swx_table_entry *e;

	if (tb->dirty)
		return 0;
	TAILQ_FOREACH(e, &tb->entries, node) {
		struct swx_entry se = { .key = e->key, .mask = e->key_mask,
					.priority = e->key_priority, .action = (uint32_t)e->action_id,
					.data = e->action_data };
		struct rte_swx_table_entry *c =
			entry_copy(l, &se, info->actions[e->action_id].data_size);

		if (c == NULL)
			return -ENOMEM;
		TAILQ_INSERT_TAIL(&tb->next, c, node);
	}
	tb->n_next = tb->n_entries;
	tb->dirty = true;
	return 0;
}

static int
list_apply(struct swx_tables *t, struct swx_op *o)
{
	struct swx_table_ctl *tb = &t->tables[o->id];
	struct rte_swx_table_entry *e;
	int status = next_list(tb, &t->info.tables[o->id], &t->info);

	if (status)
		return status;
	TAILQ_FOREACH(e, &tb->next, node)
		if (same_match(tb, e, o->entry))
			break;
	if (o->kind == OP_DEL) {
		if (e != NULL) {
			TAILQ_REMOVE(&tb->next, e, node);
			entry_free(e);
			tb->n_next--;
		}
		return 0;
	}
	if (e == NULL && tb->n_next >= tb->params.n_keys_max)
		return -ENOSPC;
	{
		struct swx_entry se = { .key = o->entry->key, .mask = o->entry->key_mask,
					.priority = o->entry->key_priority,
					.action = (uint32_t)o->entry->action_id,
					.data = o->entry->action_data };
		struct rte_swx_table_entry *c = entry_copy(
			&t->info.tables[o->id], &se,
			t->info.actions[o->entry->action_id].data_size);

		if (c == NULL)
			return -ENOMEM;
		if (e != NULL) {
			TAILQ_INSERT_AFTER(&tb->next, e, c, node);
			TAILQ_REMOVE(&tb->next, e, node);
			entry_free(e);
		} else {
			TAILQ_INSERT_TAIL(&tb->next, c, node);
			tb->n_next++;
		}
	}
	return 0;
}

static void
set_default(struct swx_tables *t, struct rte_swx_table_state *ts, const struct swx_op *o)
{
	uint32_t size = t->info.tables[o->id].action_data_size;

	ts[o->id].default_action_id = o->entry->action_id;
	if (size)
		memcpy(ts[o->id].default_action_data, o->entry->action_data, size);
}

/* Phase 1: every change into the array that is not published; what fails
 * is marked and left out. */
static void
apply_standby(struct swx_tables *t, struct rte_swx_table_state *ts)
{
	uint32_t base = t->info.pipeline.n_tables;

	for (size_t i = 0; i < t->n_ops; i++) {
		struct swx_op *o = &t->ops[i];
		struct swx_table_ctl *tb = o->kind == OP_GROUP ? NULL : &t->tables[o->id];

		switch (o->kind) {
		case OP_ADD:
		case OP_DEL:
			if (!tb->incremental)
				o->result = list_apply(t, o);
			else if (o->kind == OP_ADD)
				o->result = tb->ops.add(ts[o->id].obj, o->entry);
			else
				o->result = tb->ops.del(ts[o->id].obj, o->entry);
			break;
		case OP_DEFAULT:
			set_default(t, ts, o);
			break;
		case OP_GROUP:
			o->result = rte_swx_table_selector_group_set(ts[base + o->id].obj, o->group,
								     o->members);
			break;
		}
	}
	for (uint32_t i = 0; i < t->info.pipeline.n_tables; i++) {
		struct swx_table_ctl *tb = &t->tables[i];

		if (!tb->dirty)
			continue;
		tb->built = tb->ops.create(&tb->params, &tb->next, t->info.tables[i].args,
					   t->p->numa_node);
		if (tb->built == NULL) {
			/* the table keeps what it had: every change to it fails */
			for (size_t k = 0; k < t->n_ops; k++)
				if (t->ops[k].kind <= OP_DEL && t->ops[k].id == i)
					t->ops[k].result = -ENOMEM;
			list_free(&tb->next);
			tb->dirty = false;
			continue;
		}
		ts[i].obj = tb->built;
	}
}

/* Every packet thread of the pipeline has taken ts at its rx. */
static bool
drained(const struct rte_swx_pipeline *p, const struct rte_swx_table_state *ts)
{
	for (unsigned i = 0; i < RTE_SWX_PIPELINE_THREADS_MAX; i++)
		if (__atomic_load_n(&p->threads[i].table_state, __ATOMIC_ACQUIRE) != ts)
			return false;
	return true;
}

static void
publish(struct swx_tables *t)
{
	rte_smp_wmb(); /* the changes before the pointer */
	rte_swx_pipeline_table_state_set(t->p, t->ts[!t->active]);
	t->active = !t->active;
}

/* Phase 2: the array retired by the last commit gets that commit's
 * changes that took. */
static void
apply_retired(struct swx_tables *t, struct rte_swx_table_state *ts)
{
	uint32_t base = t->info.pipeline.n_tables;

	for (size_t i = 0; i < t->n_retired_ops; i++) {
		struct swx_op *o = &t->retired_ops[i];
		struct swx_table_ctl *tb = o->kind == OP_GROUP ? NULL : &t->tables[o->id];

		if (o->result != 0)
			continue;
		if (o->kind == OP_ADD && tb->incremental)
			tb->ops.add(ts[o->id].obj, o->entry);
		else if (o->kind == OP_DEL && tb->incremental)
			tb->ops.del(ts[o->id].obj, o->entry);
		else if (o->kind == OP_DEFAULT)
			set_default(t, ts, o);
		else if (o->kind == OP_GROUP)
			rte_swx_table_selector_group_set(ts[base + o->id].obj, o->group,
							 o->members);
	}
	for (uint32_t i = 0; i < t->info.pipeline.n_tables; i++) {
		struct swx_table_ctl *tb = &t->tables[i];

		if (!tb->dirty)
			continue;
		if (ts[i].obj != tb->built)
			tb->ops.free(ts[i].obj);
		ts[i].obj = tb->built;
		list_free(&tb->entries);
		TAILQ_CONCAT(&tb->entries, &tb->next, node);
		tb->n_entries = tb->n_next;
		tb->dirty = false;
		tb->built = NULL;
	}
}

/* The retired array brought level with the published one: once no packet
 * in flight reads it (every packet thread took the published array at its
 * rx; nothing in flight when no thread runs the pipeline), the last
 * commit's changes go in. Done at the start of the next commit rather than
 * at the end of the last, so a Write does not wait for the pipeline
 * threads: by the time the next one comes they have long moved on
 * (issue #33: the wait was a third of the write path's CPU, more on a
 * loaded machine where the pipeline thread waits for a CPU). */
static void
settle(struct swx_tables *t)
{
	while (t->running != NULL && __atomic_load_n(t->running, __ATOMIC_SEQ_CST) &&
	       !drained(t->p, t->ts[t->active]))
		sched_yield();
	apply_retired(t, t->ts[!t->active]);
	ops_free(t->retired_ops, t->n_retired_ops);
	t->n_retired_ops = 0;
}

int
swx_tables_commit(struct swx_tables *t, int *result, size_t n_result)
{
	struct swx_op *spare = t->retired_ops;
	size_t spare_cap = t->cap_retired_ops;
	int failed = 0;

	if (t->n_ops == 0)
		return 0;
	settle(t);
	apply_standby(t, t->ts[!t->active]);
	publish(t);
	for (size_t i = 0; i < t->n_ops; i++) {
		failed += t->ops[i].result != 0;
		if (result != NULL && i < n_result)
			result[i] = t->ops[i].result;
	}
	/* this commit's changes wait for the next settle(); the emptied array
	 * takes the next commit's */
	t->retired_ops = t->ops;
	t->cap_retired_ops = t->cap_ops;
	t->n_retired_ops = t->n_ops;
	t->ops = spare;
	t->cap_ops = spare_cap;
	t->n_ops = 0;
	return failed;
}

int64_t
swx_tables_entry_id(struct swx_tables *t, uint32_t table, const uint8_t *key)
{
	struct swx_table_ctl *tb;
	uint8_t *probe, *data;
	uint64_t action;
	size_t id;
	int hit = 0;

	if (table >= t->info.pipeline.n_tables || !t->tables[table].incremental)
		return -1;
	tb = &t->tables[table];
	memcpy(tb->probe + tb->params.key_offset, key, tb->params.key_size);
	probe = tb->probe;
	/* the published array's object: the retired one may still lack the
	 * last commit (settle); a lookup only reads, beside the data plane */
	while (tb->ops.lkp(t->ts[t->active][table].obj, tb->mailbox, &probe, &action, &data,
			   &id, &hit) == 0)
		;
	return hit ? (int64_t)id : -1;
}

int
swx_tables_get_default(const struct swx_tables *t, uint32_t table, uint32_t *action,
		       uint8_t *data)
{
	const struct rte_swx_table_state *ts = t->ts[t->active];
	uint32_t size;

	if (table >= t->info.pipeline.n_tables)
		return -1;
	size = t->info.tables[table].action_data_size;
	*action = (uint32_t)ts[table].default_action_id;
	if (size && data != NULL)
		memcpy(data, ts[table].default_action_data, size);
	return 0;
}
