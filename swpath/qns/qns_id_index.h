/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The id -> rule index behind qns_del(), qns_get() and qns_foreach(): it
 * points at the rules in their slots (the writer repoints it when a rebuild
 * moves them) and owns nothing. Only the writer uses it, so it is a plain
 * open-addressing table with linear probing and backward-shift deletion (no
 * tombstones, no atomics).
 */
#ifndef QUICKNAT_QNS_ID_INDEX_H
#define QUICKNAT_QNS_ID_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "qns.h"

struct qns_id_index {
	struct qns_rule **slot; /* NULL: empty */
	uint32_t mask;          /* capacity - 1 */
	uint32_t shift;         /* 64 - log2(capacity) */
	uint32_t count;
};

/* Returns 0 or -ENOMEM. */
int qns_id_index_init(struct qns_id_index *ix);

/* Frees the index. */
void qns_id_index_fini(struct qns_id_index *ix);

size_t qns_id_index_memory(const struct qns_id_index *ix);

struct qns_rule *qns_id_index_find(const struct qns_id_index *ix, uint32_t id);

/* Makes room for count rules, so that inserting them cannot fail. 0 or -ENOMEM. */
int qns_id_index_reserve(struct qns_id_index *ix, uint32_t count);

/* Inserts a rule whose id is absent; room must have been reserved. */
void qns_id_index_insert(struct qns_id_index *ix, struct qns_rule *rule);

/* Points the entry of rule->id, which must exist, at rule: the rule moved. */
void qns_id_index_repoint(struct qns_id_index *ix, struct qns_rule *rule);

/* Removes and returns the rule with this id, or NULL. */
struct qns_rule *qns_id_index_remove(struct qns_id_index *ix, uint32_t id);

static inline uint32_t
qns_id_index_capacity(const struct qns_id_index *ix)
{
	return ix->mask + 1;
}

#endif /* QUICKNAT_QNS_ID_INDEX_H */
