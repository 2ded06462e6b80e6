/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writer side of the QNS slot arrays: allocation, sizing, insertion and
 * rebuilding. See qns_subtable.h for the publication protocol.
 */
#include <stdlib.h>
#include <string.h>

#include "qns_subtable.h"

#define QNS_CACHE_LINE 64u

/* Largest capacity whose mask still fits the 32-bit index. */
#define QNS_SLOTS_MAX_CAPACITY (1u << 31)

const struct qns_rule qns_tombstone;

size_t
qns_slots_size(uint32_t capacity)
{
	size_t size = sizeof(struct qns_slots) +
		      (size_t)capacity * sizeof(struct qns_slot);

	/* aligned_alloc() wants a multiple of the alignment. */
	return (size + QNS_CACHE_LINE - 1) & ~(size_t)(QNS_CACHE_LINE - 1);
}

uint32_t
qns_slots_capacity_for(uint32_t live)
{
	uint64_t capacity = QNS_SLOTS_MIN_CAPACITY;

	/*
	 * A rebuild leaves the load at 1/4 or less, and inserts rebuild above
	 * 3/8 (QNS_SLOTS_MAX_LOAD_*): at least capacity/8 changes separate two
	 * rebuilds, so their cost is amortised, and growth by insertion doubles
	 * the capacity. Short probe sequences matter more than the memory: a
	 * probe that runs on is a dependent load and a mispredicted branch.
	 */
	while (capacity < ((uint64_t)live + 1) * 4) {
		if (unlikely(capacity >= QNS_SLOTS_MAX_CAPACITY))
			return 0;
		capacity *= 2;
	}
	return (uint32_t)capacity;
}

struct qns_slots *
qns_slots_alloc(uint32_t capacity)
{
	size_t size = qns_slots_size(capacity);
	struct qns_slots *s;

	if (unlikely(capacity == 0))
		return NULL;
	/* Cache-line aligned, so no 16-byte slot straddles two lines. */
	s = aligned_alloc(QNS_CACHE_LINE, size);
	if (unlikely(s == NULL))
		return NULL;
	memset(s, 0, size); /* all slots empty: NULL rule pointers */
	s->mask = capacity - 1;
	s->shift = (uint32_t)(64 - __builtin_ctz(capacity));
	return s;
}

void
qns_slots_insert(struct qns_slots *s, uint64_t key, uint64_t hash,
		 const struct qns_rule *rule)
{
	uint32_t i = (uint32_t)(hash >> s->shift);

	/*
	 * Only empty slots are filled: reusing a tombstone would rewrite a key
	 * that a reader holding the old rule pointer may be comparing.
	 */
	while (atomic_load_explicit(&s->slot[i].rule, memory_order_relaxed) != NULL)
		i = (i + 1) & s->mask;
	s->slot[i].key = key;
	atomic_store_explicit(&s->slot[i].rule, rule, memory_order_release);
}

void
qns_slots_copy_live(struct qns_slots *dst, const struct qns_slots *src,
		    unsigned int table)
{
	uint32_t capacity = qns_slots_capacity(src);
	uint32_t i;

	for (i = 0; i < capacity; i++) {
		const struct qns_rule *rule = atomic_load_explicit(
			&src->slot[i].rule, memory_order_relaxed);
		uint64_t key = src->slot[i].key;

		if (rule != NULL && rule != QNS_TOMBSTONE)
			qns_slots_insert(dst, key, qns_key_hash(table, key), rule);
	}
}

struct qns_slot *
qns_slots_find_rule(struct qns_slots *s, uint64_t hash,
		    const struct qns_rule *rule)
{
	uint32_t i = (uint32_t)(hash >> s->shift);

	for (;;) {
		const struct qns_rule *here = atomic_load_explicit(
			&s->slot[i].rule, memory_order_relaxed);

		if (here == NULL)
			return NULL;
		if (here == rule)
			return &s->slot[i];
		i = (i + 1) & s->mask;
	}
}
