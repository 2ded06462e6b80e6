/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A hash index over records that hold their own keys (sessions, mappings,
 * hosts, bindings): buckets of chained record numbers, 4 bytes per bucket and
 * per record (8 per record when doubly linked). The caller walks a bucket and
 * compares its key with each record's fields.
 *
 * Why not rte_hash, as everywhere else: rte_hash keeps its own copy of every
 * key with a data pointer, a free-slot ring and, with the extendable table
 * that keeps it from refusing a key below capacity, twice its buckets: about
 * 54 bytes per 16-byte flow key and 38 per 8-byte key. A worker's tables
 * held six such keys per session, 414 bytes in all (docs/benchmarks.md); the
 * records already hold every key, so the index needs only the links. A hit
 * reads the bucket head and then the record, which the caller reads anyway
 * (rte_hash reads bucket, key slot, then the record), and an insert is two
 * stores, never a refusal: every record has its link, so an index sized for
 * its records cannot fill.
 *
 * Used by one thread (a worker's own tables): no locks, no atomics.
 */
#ifndef SP_HASH_INDEX_H
#define SP_HASH_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/env.h"

#define SP_HIX_NONE UINT32_MAX

struct sp_hix {
	uint64_t seed;          /* random: no key set collides by design */
	uint32_t mask;          /* buckets - 1 (buckets: a power of two) */
	uint32_t *head;         /* [buckets]: first record, or SP_HIX_NONE */
	uint32_t *next;         /* [records]: next record in the bucket */
	uint32_t *prev;         /* [records], or NULL when singly linked */
};

/*
 * An index of records 0..records-1 with at least min_buckets buckets.
 * Doubly linked when records of one key may be many (removal in O(1));
 * singly linked removal walks the bucket. Returns 0 or -ENOMEM.
 * Everything is written here, so the memory is touched (faulted in) now.
 */
int sp_hix_init(struct sp_hix *ix, const struct sp_env *env, const char *name,
		uint32_t records, uint32_t min_buckets, bool doubly, int socket);
void sp_hix_free(struct sp_hix *ix, const struct sp_env *env);

/*
 * The hash of a key given as two words (a key's fields packed by its
 * owner): each word goes through a multiply and a fold before the next is
 * mixed in, then a final multiply and fold (as murmur3's and splitmix64's
 * finalizers), with a per-index random seed. Not CRC32, as rte_hash uses:
 * CRC is linear, so keys that collide do so whatever the seed. And not one
 * multiply over the words XORed together: a word's bits that land on the
 * other's after a shift are lost (the bench's reply keys, external address
 * and port, filled buckets twice as deep as random). test_sp_nat checks the
 * spread on structured key sets.
 */
static inline uint32_t
sp_hix_hash(const struct sp_hix *ix, uint64_t a, uint64_t b)
{
	uint64_t h = (a ^ ix->seed) * 0x9e3779b97f4a7c15ull;

	h ^= h >> 32;
	h = (h ^ b) * 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	h *= 0x94d049bb133111ebull;
	return (uint32_t)(h >> 32);
}

static inline uint32_t
sp_hix_first(const struct sp_hix *ix, uint32_t hash)
{
	return ix->head[hash & ix->mask];
}

static inline uint32_t
sp_hix_next(const struct sp_hix *ix, uint32_t rec)
{
	return ix->next[rec];
}

static inline void
sp_hix_prefetch(const struct sp_hix *ix, uint32_t hash)
{
	__builtin_prefetch(&ix->head[hash & ix->mask]);
}

/* Puts rec, not in the index, first in its bucket. */
static inline void
sp_hix_insert(struct sp_hix *ix, uint32_t rec, uint32_t hash)
{
	uint32_t *head = &ix->head[hash & ix->mask];

	ix->next[rec] = *head;
	if (ix->prev != NULL) {
		ix->prev[rec] = SP_HIX_NONE;
		if (*head != SP_HIX_NONE)
			ix->prev[*head] = rec;
	}
	*head = rec;
}

/* Takes rec, inserted with the same hash, out of the index. */
static inline void
sp_hix_remove(struct sp_hix *ix, uint32_t rec, uint32_t hash)
{
	uint32_t *link = &ix->head[hash & ix->mask];
	uint32_t next = ix->next[rec];

	if (ix->prev != NULL) {
		uint32_t prev = ix->prev[rec];

		if (prev != SP_HIX_NONE)
			link = &ix->next[prev];
		if (next != SP_HIX_NONE)
			ix->prev[next] = prev;
		*link = next;
		return;
	}
	while (*link != rec && *link != SP_HIX_NONE)
		link = &ix->next[*link];
	if (*link == rec)
		*link = next;
}

#endif /* SP_HASH_INDEX_H */
