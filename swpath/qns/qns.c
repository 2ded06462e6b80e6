/* SPDX-License-Identifier: Apache-2.0 */
/*
 * QNS: the sub-tables of docs/qns.md, their lock-free lookup and the single
 * writer's add and delete. The slot arrays are in qns_subtable.[ch], the
 * filter that lets lookups pass over sub-tables in qns_filter.[ch], the id
 * index in qns_id_index.[ch].
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "qns.h"
#include "qns_compiler.h"
#include "qns_filter.h"
#include "qns_id_index.h"
#include "qns_subtable.h"

#define QNS_PLENS (QNS_PLEN_MAX + 1)

/* Capacity of the shared array that stands for every empty sub-table. */
#define QNS_EMPTY_CAPACITY 2u

_Static_assert(QNS_PLENS <= 64, "one bitmap word per kind");

/* What lookups read of a sub-table: 8 bytes, all 66 in 9 cache lines. */
struct qns_subtable {
	_Atomic(struct qns_slots *) slots; /* never NULL */
};

/* The writer's counts for a sub-table. */
struct qns_subtable_stats {
	uint32_t used; /* full slots and tombstones of the current array */
	uint32_t live; /* full slots */
};

/*
 * Lookups visit sub-tables from the longest prefix down, so they number
 * them by rank = 32 - plen: the lowest set bit of a bitmap indexed by rank
 * is the next sub-table to visit, and a rank's netmask and hash salt come
 * from these tables rather than from shifts by a variable amount.
 */
#define QNS_RANK_PLEN(rank) (QNS_PLEN_MAX - (rank))

/* A rank's netmask, and its hash salt (qns_hash_addr()'s high half) per kind. */
#define QNS_M(r) ((uint32_t)(~0ull << (r)))
static const uint32_t qns_rank_netmask[QNS_PLENS] = {
	QNS_M(0), QNS_M(1), QNS_M(2), QNS_M(3), QNS_M(4), QNS_M(5), QNS_M(6),
	QNS_M(7), QNS_M(8), QNS_M(9), QNS_M(10), QNS_M(11), QNS_M(12),
	QNS_M(13), QNS_M(14), QNS_M(15), QNS_M(16), QNS_M(17), QNS_M(18),
	QNS_M(19), QNS_M(20), QNS_M(21), QNS_M(22), QNS_M(23), QNS_M(24),
	QNS_M(25), QNS_M(26), QNS_M(27), QNS_M(28), QNS_M(29), QNS_M(30),
	QNS_M(31), QNS_M(32),
};
#undef QNS_M

#define QNS_S(k, r) ((uint64_t)((k) * QNS_PLENS + QNS_RANK_PLEN(r)) << 32)
#define QNS_SALTS(k)                                                          \
	{                                                                     \
		QNS_S(k, 0), QNS_S(k, 1), QNS_S(k, 2), QNS_S(k, 3),           \
		QNS_S(k, 4), QNS_S(k, 5), QNS_S(k, 6), QNS_S(k, 7),           \
		QNS_S(k, 8), QNS_S(k, 9), QNS_S(k, 10), QNS_S(k, 11),         \
		QNS_S(k, 12), QNS_S(k, 13), QNS_S(k, 14), QNS_S(k, 15),       \
		QNS_S(k, 16), QNS_S(k, 17), QNS_S(k, 18), QNS_S(k, 19),       \
		QNS_S(k, 20), QNS_S(k, 21), QNS_S(k, 22), QNS_S(k, 23),       \
		QNS_S(k, 24), QNS_S(k, 25), QNS_S(k, 26), QNS_S(k, 27),       \
		QNS_S(k, 28), QNS_S(k, 29), QNS_S(k, 30), QNS_S(k, 31),       \
		QNS_S(k, 32),                                                 \
	}
static const uint64_t qns_rank_salt[QNS_KINDS][QNS_PLENS] = {
	QNS_SALTS(QNS_SNAT),
	QNS_SALTS(QNS_DNAT),
};
#undef QNS_SALTS
#undef QNS_S

struct qns {
	/* Read by lookups. */
	_Atomic(struct qns_filter *) filter; /* never NULL */
	_Atomic uint64_t nonempty[QNS_KINDS]; /* bit 32 - plen: has rules */
	struct qns_subtable sub[QNS_KINDS][QNS_PLENS];

	/*
	 * Writer only, on its own cache lines so that updates do not evict
	 * the lines that every lookup reads.
	 */
	alignas(64) struct qns_subtable_stats stats[QNS_KINDS][QNS_PLENS];
	struct qns_id_index index;
	/*
	 * A never-written all-empty array shared by the empty sub-tables, so
	 * that lookups need no NULL check even if they see a sub-table's
	 * nonempty bit before its array pointer.
	 */
	struct qns_slots *empty;
	qns_reclaim_fn reclaim;
	void *reclaim_ctx;
};

static inline int
qns_packet_has_ports(uint8_t proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP;
}

static inline uint64_t
qns_rule_key(const struct qns_rule *rule)
{
	return qns_key(rule->prefix, rule->has_port ? rule->port : 0,
		       rule->proto, rule->has_port);
}

static inline unsigned int
qns_rule_table(const struct qns_rule *rule)
{
	return qns_table_number(rule->kind, rule->plen);
}

/* The filter number of a port part (port | 1, or 0 for no port). */
static inline unsigned int
qns_port_filter_pos(uint32_t port_part)
{
	return qns_filter_port_pos(qns_hash_low(port_part));
}

/*
 * Probes a sub-table that the filter let through: the port part the packet
 * has a filter hit for, exact port before wildcard, each walk finding the
 * exact protocol before any.
 */
static inline const struct qns_rule *
qns_probe_subtable(const struct qns_subtable *st, uint64_t port_hit,
		   uint64_t noport_hit, uint32_t masked, uint64_t addr_hash,
		   uint64_t port_hash, uint8_t proto, uint16_t port)
{
	const struct qns_slots *slots =
		atomic_load_explicit(&st->slots, memory_order_acquire);
	const struct qns_rule *rule;

	if (port_hit) {
		rule = qns_slots_probe_protos(slots, qns_key(masked, port, proto, 1),
					      addr_hash ^ port_hash);
		if (rule != NULL)
			return rule;
	}
	if (noport_hit)
		return qns_slots_probe_protos(slots, qns_key(masked, 0, proto, 0),
					      addr_hash ^ qns_hash_low(0));
	return NULL;
}

/*
 * The first match within one kind: the non-empty sub-tables from the longest
 * prefix down, of those the block table leaves. Most cannot match, and the
 * filter says so for the price of a multiplication, one load and two bit
 * tests, without touching the sub-table.
 */
static inline const struct qns_rule *
qns_lookup_in_kind(const struct qns *q, struct qns_filter_view filter,
		   unsigned int kind, uint8_t proto, uint32_t addr,
		   uint16_t port)
{
	uint64_t todo =
		atomic_load_explicit(&q->nonempty[kind], memory_order_relaxed) &
		qns_filter_ranks(filter, kind, addr);
	const uint64_t *salt = qns_rank_salt[kind];
	const int ported = qns_packet_has_ports(proto);
	const uint64_t port_hash =
		qns_hash_low(qns_key_port_part(qns_key(0, port, 0, 1)));
	const uint64_t noport_bit = 1ull << qns_port_filter_pos(0);
	/* A packet without ports has no port bit to test. */
	const uint64_t port_bit =
		ported ? 1ull << qns_filter_port_pos(port_hash) : 0;
	const uint64_t both_bits = port_bit | noport_bit;

	while (todo != 0) {
		/* Zero-extended: the index needs no sign extension. */
		uint64_t rank = (unsigned int)__builtin_ctzll(todo);
		uint32_t masked = addr & qns_rank_netmask[rank];
		uint64_t addr_hash = qns_hash_addr_salted(salt[rank], masked);
		uint64_t word = qns_filter_word(filter, addr_hash);
		const struct qns_rule *rule;

		todo &= todo - 1;
		if (likely((word & qns_filter_key_bits(addr_hash, both_bits)) == 0))
			continue;
		rule = qns_probe_subtable(
			&q->sub[kind][QNS_RANK_PLEN(rank)],
			word & qns_filter_key_bits(addr_hash, port_bit),
			word & qns_filter_key_bits(addr_hash, noport_bit), masked,
			addr_hash, port_hash, proto, port);
		if (rule != NULL)
			return rule;
	}
	return NULL;
}

const struct qns_rule *
qns_lookup(const struct qns *q, uint8_t proto, uint32_t src, uint16_t sport,
	   uint32_t dst, uint16_t dport)
{
	struct qns_filter_view filter = qns_filter_view(
		atomic_load_explicit(&q->filter, memory_order_acquire));
	const struct qns_rule *rule;

	rule = qns_lookup_in_kind(q, filter, QNS_DNAT, proto, dst, dport);
	if (rule != NULL)
		return rule;
	return qns_lookup_in_kind(q, filter, QNS_SNAT, proto, src, sport);
}

const struct qns_rule *
qns_lookup_kind(const struct qns *q, enum qns_kind kind, uint8_t proto,
		uint32_t addr, uint16_t port)
{
	if (unlikely((unsigned int)kind >= QNS_KINDS))
		return NULL;
	return qns_lookup_in_kind(
		q,
		qns_filter_view(atomic_load_explicit(&q->filter,
						     memory_order_acquire)),
		kind, proto, addr, port);
}

static size_t
qns_struct_size(void)
{
	return (sizeof(struct qns) + 63) & ~(size_t)63;
}

struct qns *
qns_create(const struct qns_params *params)
{
	size_t size = qns_struct_size();
	struct qns_filter *filter;
	unsigned int kind, plen;
	struct qns *q;

	q = aligned_alloc(64, size);
	if (unlikely(q == NULL))
		return NULL;
	memset(q, 0, size);
	q->empty = qns_slots_alloc(QNS_EMPTY_CAPACITY);
	if (unlikely(q->empty == NULL))
		goto fail_empty;
	if (unlikely(qns_id_index_init(&q->index) != 0))
		goto fail_index;
	filter = qns_filter_alloc(qns_filter_words_for(0));
	if (unlikely(filter == NULL))
		goto fail_filter;
	atomic_init(&q->filter, filter);
	if (params != NULL) {
		q->reclaim = params->reclaim;
		q->reclaim_ctx = params->reclaim_ctx;
	}
	for (kind = 0; kind < QNS_KINDS; kind++)
		for (plen = 0; plen < QNS_PLENS; plen++)
			atomic_init(&q->sub[kind][plen].slots, q->empty);
	return q;

fail_filter:
	qns_id_index_fini(&q->index);
fail_index:
	free(q->empty);
fail_empty:
	free(q);
	return NULL;
}

void
qns_free(struct qns *q)
{
	unsigned int kind, plen;

	if (q == NULL)
		return;
	for (kind = 0; kind < QNS_KINDS; kind++) {
		for (plen = 0; plen < QNS_PLENS; plen++) {
			struct qns_slots *slots = atomic_load_explicit(
				&q->sub[kind][plen].slots, memory_order_relaxed);

			if (slots != q->empty)
				free(slots);
		}
	}
	qns_id_index_fini(&q->index);
	free(atomic_load_explicit(&q->filter, memory_order_relaxed));
	free(q->empty);
	free(q);
}

/* Hands memory that lookups in flight may still read to the reclaim callback. */
static void
qns_retire(struct qns *q, void *ptr)
{
	if (q->reclaim != NULL)
		q->reclaim(q->reclaim_ctx, ptr);
	else
		free(ptr);
}

/* Swaps in a rebuilt array (or the shared empty one) and retires the old. */
static void
qns_subtable_replace(struct qns *q, unsigned int kind, unsigned int plen,
		     struct qns_slots *fresh)
{
	struct qns_subtable *st = &q->sub[kind][plen];
	struct qns_subtable_stats *stats = &q->stats[kind][plen];
	struct qns_slots *old =
		atomic_load_explicit(&st->slots, memory_order_relaxed);

	if (fresh != q->empty) {
		uint32_t i;

		qns_slots_copy_live(fresh, old, qns_table_number(kind, plen));
		/* The rules moved with their slots: so do their index entries. */
		for (i = 0; i < qns_slots_capacity(fresh); i++)
			if (fresh->slot[i].rule.id != 0)
				qns_id_index_repoint(&q->index,
						     &fresh->slot[i].rule);
	}
	atomic_store_explicit(&st->slots, fresh, memory_order_release);
	stats->used = stats->live;
	if (old != q->empty)
		qns_retire(q, old);
}

/* Republishes which sub-tables hold rules. */
static void
qns_subtable_update_masks(struct qns *q, unsigned int kind, unsigned int plen)
{
	const struct qns_subtable_stats *stats = &q->stats[kind][plen];
	uint64_t nonempty =
		atomic_load_explicit(&q->nonempty[kind], memory_order_relaxed);

	if (stats->live > 0)
		nonempty |= 1ull << (QNS_PLEN_MAX - plen);
	else
		nonempty &= ~(1ull << (QNS_PLEN_MAX - plen));
	atomic_store_explicit(&q->nonempty[kind], nonempty, memory_order_release);
}

/* Sets a rule's bit in the filter. */
static void
qns_filter_add_rule(struct qns_filter *filter, const struct qns_rule *rule)
{
	uint64_t key = qns_rule_key(rule);

	qns_filter_add(filter, qns_hash_addr(qns_rule_table(rule), rule->prefix),
		       qns_port_filter_pos(qns_key_port_part(key)));
	qns_filter_add_block(filter, rule->kind, rule->prefix, rule->plen);
}

/* Fills a new filter from the live rules, swaps it in, retires the old one. */
static void
qns_filter_replace(struct qns *q, struct qns_filter *fresh)
{
	struct qns_filter *old =
		atomic_load_explicit(&q->filter, memory_order_relaxed);
	uint32_t i;

	for (i = 0; i < qns_id_index_capacity(&q->index); i++)
		if (q->index.slot[i] != NULL)
			qns_filter_add_rule(fresh, q->index.slot[i]);
	atomic_store_explicit(&q->filter, fresh, memory_order_release);
	qns_retire(q, old);
}

static int
qns_rule_is_valid(const struct qns_rule *rule)
{
	if (unlikely(rule->id == 0 || rule->kind >= QNS_KINDS ||
		     rule->plen > QNS_PLEN_MAX || rule->has_port > 1))
		return 0;
	if (unlikely((rule->prefix & ~qns_plen_mask(rule->plen)) != 0))
		return 0;
	/* Only TCP and UDP packets have ports (docs/qns.md). */
	if (unlikely(rule->has_port && rule->proto != IPPROTO_TCP &&
		     rule->proto != IPPROTO_UDP && rule->proto != QNS_PROTO_ANY))
		return 0;
	return 1;
}

int
qns_add(struct qns *q, const struct qns_rule *rule)
{
	struct qns_subtable *st;
	struct qns_subtable_stats *stats;
	struct qns_slots *slots, *fresh = NULL;
	struct qns_filter *filter, *fresh_filter = NULL;
	struct qns_rule *stored;
	uint64_t key, hash;

	if (unlikely(!qns_rule_is_valid(rule)))
		return -EINVAL;
	if (unlikely(qns_id_index_find(&q->index, rule->id) != NULL))
		return -EEXIST;
	st = &q->sub[rule->kind][rule->plen];
	stats = &q->stats[rule->kind][rule->plen];
	slots = atomic_load_explicit(&st->slots, memory_order_relaxed);
	key = qns_rule_key(rule);
	hash = qns_key_hash(qns_rule_table(rule), key);
	if (unlikely(qns_slots_probe(slots, key, hash) != NULL))
		return -EEXIST;

	/* Allocate everything first, so that -ENOMEM leaves QNS unchanged. */
	/* Tombstones count: the load limit keeps probe sequences short. */
	if (slots == q->empty ||
	    ((uint64_t)stats->used + 1) * QNS_SLOTS_MAX_LOAD_DEN >
		    (uint64_t)qns_slots_capacity(slots) * QNS_SLOTS_MAX_LOAD_NUM) {
		fresh = qns_slots_alloc(qns_slots_capacity_for(stats->live + 1));
		if (unlikely(fresh == NULL))
			return -ENOMEM;
	}
	filter = atomic_load_explicit(&q->filter, memory_order_relaxed);
	if (qns_filter_full(filter)) {
		fresh_filter = qns_filter_alloc(
			qns_filter_words_for(q->index.count + 1));
		if (unlikely(fresh_filter == NULL))
			goto fail_filter;
	}
	if (unlikely(qns_id_index_reserve(&q->index, q->index.count + 1) != 0))
		goto fail_index;

	if (fresh != NULL) {
		qns_subtable_replace(q, rule->kind, rule->plen, fresh);
		slots = fresh;
	}
	if (fresh_filter != NULL) {
		qns_filter_replace(q, fresh_filter);
		filter = fresh_filter;
	}
	/* The filter bits first: a reader that finds the slot must pass. */
	qns_filter_add_rule(filter, rule);
	stored = qns_slots_insert(slots, key, hash, rule);
	stats->used++;
	stats->live++;
	qns_subtable_update_masks(q, rule->kind, rule->plen);
	qns_id_index_insert(&q->index, stored);
	return 0;

fail_index:
	free(fresh_filter);
fail_filter:
	free(fresh);
	return -ENOMEM;
}

int
qns_del(struct qns *q, uint32_t id)
{
	struct qns_subtable_stats *stats;
	struct qns_slots *slots;
	struct qns_filter *filter;
	struct qns_rule *rule;
	unsigned int kind, plen;
	uint32_t capacity;

	rule = qns_id_index_remove(&q->index, id);
	if (unlikely(rule == NULL))
		return -ENOENT;
	/* The rule lives in its slot, which a rebuild below may retire. */
	kind = rule->kind;
	plen = rule->plen;
	stats = &q->stats[kind][plen];
	slots = atomic_load_explicit(&q->sub[kind][plen].slots,
				     memory_order_relaxed);
	/* The tombstone keeps its rule for readers that hold it, and its id
	 * keeps the slot used, so probes run on past it. */
	atomic_store_explicit(&qns_slot_of(rule)->key, QNS_KEY_TOMBSTONE,
			      memory_order_release);
	stats->live--;
	qns_subtable_update_masks(q, kind, plen);

	/*
	 * Give memory back: an emptied sub-table returns to the shared empty
	 * array, a mostly empty one is rebuilt smaller. Shrinking is optional,
	 * so an allocation failure here only keeps the larger array.
	 */
	capacity = qns_slots_capacity(slots);
	if (stats->live == 0) {
		qns_subtable_replace(q, kind, plen, q->empty);
	} else if (capacity > QNS_SLOTS_MIN_CAPACITY &&
		   (uint64_t)stats->live * QNS_SLOTS_SHRINK_BELOW < capacity) {
		struct qns_slots *fresh =
			qns_slots_alloc(qns_slots_capacity_for(stats->live));

		if (likely(fresh != NULL))
			qns_subtable_replace(q, kind, plen, fresh);
	}
	/* The filter keeps the rule's bits; a filter 4 times too big is rebuilt. */
	filter = atomic_load_explicit(&q->filter, memory_order_relaxed);
	if (qns_filter_words(filter) >= 4 * qns_filter_words_for(q->index.count)) {
		struct qns_filter *fresh =
			qns_filter_alloc(qns_filter_words_for(q->index.count));

		if (likely(fresh != NULL))
			qns_filter_replace(q, fresh);
	}
	return 0;
}

const struct qns_rule *
qns_get(const struct qns *q, uint32_t id)
{
	return qns_id_index_find(&q->index, id);
}

size_t
qns_count(const struct qns *q)
{
	return q->index.count;
}

size_t
qns_memory(const struct qns *q)
{
	const struct qns_filter *filter =
		atomic_load_explicit(&q->filter, memory_order_relaxed);
	size_t bytes = qns_struct_size() + qns_slots_size(QNS_EMPTY_CAPACITY) +
		       qns_filter_size(qns_filter_words(filter)) +
		       qns_id_index_memory(&q->index);
	unsigned int kind, plen;

	for (kind = 0; kind < QNS_KINDS; kind++) {
		for (plen = 0; plen < QNS_PLENS; plen++) {
			const struct qns_slots *slots = atomic_load_explicit(
				&q->sub[kind][plen].slots, memory_order_relaxed);

			if (slots != q->empty)
				bytes += qns_slots_size(qns_slots_capacity(slots));
		}
	}
	return bytes;
}

void
qns_foreach(const struct qns *q,
	    void (*fn)(const struct qns_rule *rule, void *arg), void *arg)
{
	uint32_t i;

	for (i = 0; i < qns_id_index_capacity(&q->index); i++)
		if (q->index.slot[i] != NULL)
			fn(q->index.slot[i], arg);
}
