/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>

#include "qns_compiler.h"
#include "qns_id_index.h"

#define QNS_ID_INDEX_MIN_CAPACITY 16u
#define QNS_ID_INDEX_MAX_CAPACITY (1u << 31)

/* Fibonacci hashing: consecutive ids, the common case, spread evenly. */
static inline uint32_t
qns_id_home(const struct qns_id_index *ix, uint32_t id)
{
	return (uint32_t)(((uint64_t)id * 0x9e3779b97f4a7c15ull) >> ix->shift);
}

static int
qns_id_index_alloc(struct qns_id_index *ix, uint32_t capacity)
{
	ix->slot = calloc(capacity, sizeof(*ix->slot));
	if (unlikely(ix->slot == NULL))
		return -ENOMEM;
	ix->mask = capacity - 1;
	ix->shift = 64u - (unsigned int)__builtin_ctz(capacity);
	ix->count = 0;
	return 0;
}

int
qns_id_index_init(struct qns_id_index *ix)
{
	return qns_id_index_alloc(ix, QNS_ID_INDEX_MIN_CAPACITY);
}

void
qns_id_index_fini(struct qns_id_index *ix)
{
	free(ix->slot);
	ix->slot = NULL;
}

size_t
qns_id_index_memory(const struct qns_id_index *ix)
{
	return (size_t)qns_id_index_capacity(ix) * sizeof(*ix->slot);
}

struct qns_rule *
qns_id_index_find(const struct qns_id_index *ix, uint32_t id)
{
	uint32_t i = qns_id_home(ix, id);

	while (ix->slot[i] != NULL) {
		if (ix->slot[i]->id == id)
			return ix->slot[i];
		i = (i + 1) & ix->mask;
	}
	return NULL;
}

void
qns_id_index_insert(struct qns_id_index *ix, struct qns_rule *rule)
{
	uint32_t i = qns_id_home(ix, rule->id);

	while (ix->slot[i] != NULL)
		i = (i + 1) & ix->mask;
	ix->slot[i] = rule;
	ix->count++;
}

void
qns_id_index_repoint(struct qns_id_index *ix, struct qns_rule *rule)
{
	uint32_t i = qns_id_home(ix, rule->id);

	while (ix->slot[i]->id != rule->id)
		i = (i + 1) & ix->mask;
	ix->slot[i] = rule;
}

int
qns_id_index_reserve(struct qns_id_index *ix, uint32_t count)
{
	uint64_t capacity = qns_id_index_capacity(ix);
	struct qns_id_index grown;
	uint32_t i;

	/* Load at most 1/2. */
	if ((uint64_t)count * 2 <= capacity)
		return 0;
	while (capacity < (uint64_t)count * 2) {
		if (unlikely(capacity >= QNS_ID_INDEX_MAX_CAPACITY))
			return -ENOMEM;
		capacity *= 2;
	}
	if (unlikely(qns_id_index_alloc(&grown, (uint32_t)capacity) != 0))
		return -ENOMEM;
	for (i = 0; i < qns_id_index_capacity(ix); i++)
		if (ix->slot[i] != NULL)
			qns_id_index_insert(&grown, ix->slot[i]);
	free(ix->slot);
	*ix = grown;
	return 0;
}

struct qns_rule *
qns_id_index_remove(struct qns_id_index *ix, uint32_t id)
{
	uint32_t hole = qns_id_home(ix, id);
	struct qns_rule *removed;
	uint32_t j;

	while (ix->slot[hole] != NULL && ix->slot[hole]->id != id)
		hole = (hole + 1) & ix->mask;
	removed = ix->slot[hole];
	if (removed == NULL)
		return NULL;
	ix->slot[hole] = NULL;
	ix->count--;

	/*
	 * Backward-shift deletion: move later entries of the cluster into the
	 * hole unless their home lies cyclically in (hole, j], where moving them
	 * would put them before their home and hide them from find().
	 */
	for (j = (hole + 1) & ix->mask; ix->slot[j] != NULL;
	     j = (j + 1) & ix->mask) {
		uint32_t home = qns_id_home(ix, ix->slot[j]->id);
		int stays = hole <= j ? (hole < home && home <= j)
				      : (hole < home || home <= j);

		if (stays)
			continue;
		ix->slot[hole] = ix->slot[j];
		ix->slot[j] = NULL;
		hole = j;
	}
	return removed;
}
