/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The slot arrays of the QNS sub-tables: open addressing with linear probing,
 * searched by lock-free readers while one writer changes them. A slot holds
 * its rule itself, so a lookup's last load is the slot it matches: there is
 * no rule to fetch behind it.
 *
 * Publication protocol (docs/qns.md, "Run-time updates"):
 * - A slot is empty (rule.id 0), full, or a tombstone (a non-zero id and key
 *   QNS_KEY_TOMBSTONE, which no rule's key equals).
 * - The writer fills an empty slot by writing the rule's other fields and the
 *   key, then storing rule.id with release order; readers load rule.id with
 *   acquire order before they read the key or the rule, so they never see a
 *   key without its rule.
 * - A full slot changes only to a tombstone (its key alone: the rule stays as
 *   it was, for readers that already hold it), and a tombstone never changes.
 * - Growing, shrinking or purging tombstones builds a new array, which is
 *   published by one release store of the sub-table's array pointer; the old
 *   array is never written again and goes to the reclaim callback, with the
 *   rules that readers may still hold.
 * - The capacity is read from the array itself, so a reader always probes
 *   within the array it loaded.
 */
#ifndef QUICKNAT_QNS_SUBTABLE_H
#define QUICKNAT_QNS_SUBTABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "qns.h"
#include "qns_compiler.h"

/* Smallest array allocated for a sub-table that holds rules. */
#define QNS_SLOTS_MIN_CAPACITY 16u

/* An insert rebuilds an array whose full slots and tombstones would pass 3/8. */
#define QNS_SLOTS_MAX_LOAD_NUM 3u
#define QNS_SLOTS_MAX_LOAD_DEN 8u

/*
 * A delete rebuilds an array smaller once fewer than 1/16 of its slots are
 * live; a rebuild leaves the load at 1/8 or more, so the two never chase.
 */
#define QNS_SLOTS_SHRINK_BELOW 16u

/* The key of a deleted slot: a real key's low byte is 0 or 1 (qns_key()). */
#define QNS_KEY_TOMBSTONE UINT64_MAX

struct qns_slot {
	_Atomic uint64_t key;  /* written before rule.id publishes the slot */
	struct qns_rule rule;  /* rule.id: 0 while empty, stored last */
};

struct qns_slots {
	uint32_t mask;        /* capacity - 1, capacity a power of two */
	uint32_t shift;       /* 64 - log2(capacity): top hash bits pick a slot */
	uint64_t reserved[3]; /* keeps slot[] 32-byte aligned: no slot spans lines */
	struct qns_slot slot[];
};

_Static_assert(sizeof(struct qns_slot) == 32, "two slots per cache line");
_Static_assert(sizeof(struct qns_slots) == 32, "slot[] starts at 32 bytes");
_Static_assert(offsetof(struct qns_rule, id) == 0, "id is published alone");

/* Reader side: whether the slot holds a rule (or a tombstone). */
static inline int
qns_slot_used(const struct qns_slot *slot)
{
	return __atomic_load_n(&slot->rule.id, __ATOMIC_ACQUIRE) != 0;
}

/* The netmask of a prefix length, 0 for /0 (a 64-bit shift avoids UB at 32). */
static inline uint32_t
qns_plen_mask(unsigned int plen)
{
	return (uint32_t)(~0ull << (32 - plen));
}

/* Sub-tables are numbered kind * (QNS_PLEN_MAX + 1) + plen. */
static inline unsigned int
qns_table_number(unsigned int kind, unsigned int plen)
{
	return kind * (QNS_PLEN_MAX + 1) + plen;
}

/*
 * A sub-table key: masked address | port | protocol | has-port flag. The kind
 * and the prefix length are implied by the sub-table. A wildcard port is
 * stored as port 0 with the flag clear, so it differs from a real port 0.
 */
static inline uint64_t
qns_key(uint32_t masked_addr, uint16_t port, uint8_t proto, int has_port)
{
	return (uint64_t)masked_addr << 32 | (uint64_t)port << 16 |
	       (uint64_t)proto << 8 | (uint64_t)(has_port != 0);
}

/* The port part of a key's low half: what the filter looks at. */
static inline uint32_t
qns_key_port_part(uint64_t key)
{
	return (uint32_t)key & 0xffff0001u;
}

/*
 * A key's hash is hash_addr(sub-table, masked address) ^ hash_low(port
 * part): a lookup hashes the address once per sub-table, for the filter and
 * for the probes alike, and its port part once. Both are multiplicative
 * (Fibonacci) hashes read from the top bits, which depend on every input
 * bit. The protocol is left out, so the keys that differ only in it (at
 * most tcp, udp and any for a port) share a probe sequence, and one walk
 * finds a packet's exact-protocol and any-protocol rule alike.
 */
static inline uint64_t
qns_hash_addr_salted(uint64_t table_salt, uint32_t masked_addr)
{
	return (table_salt | masked_addr) * 0x9e3779b97f4a7c15ull;
}

static inline uint64_t
qns_hash_addr(unsigned int table, uint32_t masked_addr)
{
	return qns_hash_addr_salted((uint64_t)table << 32, masked_addr);
}

static inline uint64_t
qns_hash_low(uint32_t low)
{
	return ((uint64_t)low ^ 0x2545f491u) * 0xc2b2ae3d27d4eb4full;
}

static inline uint64_t
qns_key_hash(unsigned int table, uint64_t key)
{
	return qns_hash_addr(table, (uint32_t)(key >> 32)) ^
	       qns_hash_low(qns_key_port_part(key));
}

static inline uint32_t
qns_slots_capacity(const struct qns_slots *s)
{
	return s->mask + 1;
}

/* The key of the same address and port with protocol any. */
static inline uint64_t
qns_key_any_proto(uint64_t key)
{
	return key & ~(uint64_t)0xff00;
}

/* The live rule stored under exactly key (whose hash is given), or NULL. */
static inline const struct qns_rule *
qns_slots_probe(const struct qns_slots *s, uint64_t key, uint64_t hash)
{
	uint32_t i = (uint32_t)(hash >> s->shift);

	for (;;) {
		const struct qns_slot *slot = &s->slot[i];

		/* Load limit < 1: every probe sequence reaches an empty slot. */
		if (!qns_slot_used(slot))
			return NULL;
		if (atomic_load_explicit(&slot->key, memory_order_relaxed) == key)
			return &slot->rule;
		i = (i + 1) & s->mask;
	}
}

/*
 * Reader side: the live rule under key, else the one under its any-protocol
 * twin, else NULL: the probe forms "exact protocol" then "protocol any" of
 * one port part (docs/qns.md) in one walk, as they share a probe sequence.
 */
static inline const struct qns_rule *
qns_slots_probe_protos(const struct qns_slots *s, uint64_t key, uint64_t hash)
{
	const uint64_t any = qns_key_any_proto(key);
	const struct qns_rule *found = NULL;
	uint32_t i = (uint32_t)(hash >> s->shift);

	for (;;) {
		const struct qns_slot *slot = &s->slot[i];
		uint64_t here;

		/* Load limit < 1: every probe sequence reaches an empty slot. */
		if (!qns_slot_used(slot))
			return found;
		here = atomic_load_explicit(&slot->key, memory_order_relaxed);
		if (here == key)
			return &slot->rule;
		if (here == any)
			found = &slot->rule;
		i = (i + 1) & s->mask;
	}
}

/* Writer side, in qns_subtable.c. */

size_t qns_slots_size(uint32_t capacity);

/* The capacity to rebuild into for live entries, leaving room to insert. */
uint32_t qns_slots_capacity_for(uint32_t live);

/* A zeroed (all empty) array, or NULL. Free it with free(). */
struct qns_slots *qns_slots_alloc(uint32_t capacity);

/*
 * Publishes a copy of *rule under key in the first empty slot of its probe
 * sequence, and returns the copy.
 */
struct qns_rule *qns_slots_insert(struct qns_slots *s, uint64_t key,
				  uint64_t hash, const struct qns_rule *rule);

/*
 * Inserts every live entry of src, an array of sub-table number table, into
 * dst, which no reader sees yet.
 */
void qns_slots_copy_live(struct qns_slots *dst, const struct qns_slots *src,
			 unsigned int table);

/* The slot of a rule that qns_slots_insert() returned. */
static inline struct qns_slot *
qns_slot_of(struct qns_rule *rule)
{
	return (struct qns_slot *)((char *)rule - offsetof(struct qns_slot, rule));
}

#endif /* QUICKNAT_QNS_SUBTABLE_H */
