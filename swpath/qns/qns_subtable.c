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
	/* Cache-line aligned, so no 32-byte slot straddles two lines. */
	s = aligned_alloc(QNS_CACHE_LINE, size);
	if (unlikely(s == NULL))
		return NULL;
	memset(s, 0, size); /* all slots empty: rule id 0 */
	s->mask = capacity - 1;
	s->shift = (uint32_t)(64 - __builtin_ctz(capacity));
	return s;
}

struct qns_rule *
qns_slots_insert(struct qns_slots *s, uint64_t key, uint64_t hash,
		 const struct qns_rule *rule)
{
	uint32_t i = (uint32_t)(hash >> s->shift);
	struct qns_slot *slot;

	/*
	 * Only empty slots are filled: reusing a tombstone would rewrite a rule
	 * that a reader may still hold.
	 */
	while (s->slot[i].rule.id != 0)
		i = (i + 1) & s->mask;
	slot = &s->slot[i];
	/* Everything but the id, which readers load to see whether it is used. */
	memcpy((char *)&slot->rule + sizeof(rule->id),
	       (const char *)rule + sizeof(rule->id),
	       sizeof(*rule) - sizeof(rule->id));
	atomic_store_explicit(&slot->key, key, memory_order_relaxed);
	__atomic_store_n(&slot->rule.id, rule->id, __ATOMIC_RELEASE);
	return &slot->rule;
}

void
qns_slots_copy_live(struct qns_slots *dst, const struct qns_slots *src,
		    unsigned int table)
{
	uint32_t capacity = qns_slots_capacity(src);
	uint32_t i;

	for (i = 0; i < capacity; i++) {
		const struct qns_slot *slot = &src->slot[i];
		uint64_t key =
			atomic_load_explicit(&slot->key, memory_order_relaxed);

		if (slot->rule.id != 0 && key != QNS_KEY_TOMBSTONE)
			qns_slots_insert(dst, key, qns_key_hash(table, key),
					 &slot->rule);
	}
}
