/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A worker's NAT tables: its sessions (core/session.h), mappings and hosts,
 * the indexes that find them by key (core/hash_index.h), its share of the
 * pools (core/allocator.h) and its timer wheel; how their keys are hashed
 * and linked; and the lookups the fast path inlines. Every file of the core
 * works on these; nat.h, lifecycle.h, mapping.h and adopt.h say what each
 * does with them (docs/swpath.md, "Source tour").
 *
 * A session is the paper's pair of connection records: two keys in the
 * flow index, one per direction, both pointing at one struct sp_session that
 * holds the rewrite and is itself what the keys are compared with. SNAT and
 * inbound sessions share an endpoint-independent mapping (RFC 4787 REQ-1)
 * that owns the external port; the port is released when the mapping's last
 * session expires. Used by its worker only: no locks.
 *
 * The core is plain C: no DPDK header, no I/O. What it needs of the
 * platform comes through struct sp_env (core/env.h), what it reads of the
 * shared configuration through struct sp_nat_shared, what it reports
 * through its observer (core/observer.h).
 */
#ifndef SP_TABLE_H
#define SP_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/allocator.h"
#include "core/counters.h"
#include "core/env.h"
#include "core/hash_index.h"
#include "core/observer.h"
#include "core/runtime.h"
#include "core/session.h"

struct qns;

/*
 * Wheel geometry: 8192 slots of 128 ms, about 17 minutes per turn. A session
 * is looked at again at least every SP_WHEEL_RECHECK_MS, so a timeout
 * shortened at run time applies within that time.
 */
#define SP_WHEEL_SLOT_SHIFT 7
#define SP_WHEEL_SLOTS 8192u
#define SP_WHEEL_RECHECK_MS 60000u
#define SP_WHEEL_HEAD 0x80000000u   /* prev of a slot's first session */

struct sp_mapping {
	uint32_t int_addr;      /* host order */
	uint16_t int_port;
	uint8_t proto;
	uint8_t pi;
	uint32_t sessions;
	uint32_t next_free;
	struct sp_alloc ext;
	/* learn mode: when the last lease of a session an operator deleted
	 * ends (valid when leased): its port is held until then (lifecycle.h) */
	uint32_t lease_end;
	uint8_t leased;
};

/* An inside host's session count (sessions_per_host). */
struct sp_host {
	uint32_t addr;          /* host order */
	uint32_t sessions;
	uint32_t next_free;
	/* quota events logged since the host last closed a session: one line
	 * per episode at a limit, not one per refused packet */
	uint32_t limits_logged; /* 1 << SP_EVENT_QUOTA_* */
};

/*
 * What a worker's NAT reads that the control thread writes: the rules
 * (QNS: lock-free readers, retired memory under RCU), the pools (published
 * one by one with a release store, never freed while workers run) and the
 * RSS partition (fixed). The pointers are fixed at init.
 */
struct sp_nat_shared {
	const struct qns *qns;
	struct sp_pool *const *pools;   /* [SP_MAX_POOLS] */
	const struct sp_rss *rss;
};

struct sp_nat {
	unsigned worker;
	unsigned n_workers;
	uint32_t max_sessions;
	uint32_t n_sessions;
	uint32_t free_session;
	uint32_t n_mappings;
	uint32_t free_mapping;
	uint32_t next_id;
	uint64_t *cnt;                  /* the worker's counters */
	const struct sp_env *env;
	struct sp_nat_shared shared;
	struct sp_nat_observer obs;     /* obs.session NULL: nobody listens */
	uint32_t free_host;
	struct sp_session *sessions;    /* [max_sessions] */
	struct sp_mapping *mappings;    /* [max_sessions]: one per session at most */
	struct sp_host *hosts;          /* [max_sessions]: one per session at most */
	/* Indexes of those records by their keys (hash_index.h): */
	struct sp_hix flows;            /* flow key -> session << 1 | dir */
	struct sp_hix map_int;          /* (proto, internal endpoint) -> mapping */
	struct sp_hix map_ext;          /* (proto, external endpoint) -> mapping */
	struct sp_hix remotes;          /* (mapping, remote addr) -> its sessions */
	struct sp_hix host_ix;          /* internal addr -> host */
	struct sp_alloc_ctx alloc;
	/* timer wheel */
	uint32_t wheel_cursor;          /* slot being processed */
	uint32_t wheel_time;            /* start (ms) of that slot; the
					 * control thread reads it (below) */
	uint32_t *wheel;                /* slot heads */
	/* Each route slot's generation (session.h), or NULL: no routes */
	const uint8_t *route_gen;
};

struct sp_nat_params {
	unsigned worker;
	unsigned n_workers;
	uint32_t max_sessions;
	uint64_t *counters;             /* the worker's, [SP_CNT_MAX] */
	int socket;                     /* NUMA node of the tables */
	uint32_t now_ms;
	const struct sp_env *env;
	struct sp_nat_shared shared;
	struct sp_nat_observer observer;
	const uint8_t *route_gen;       /* [SP_ROUTE_SLOTS], or NULL */
};

/* Result of a new-flow decision. */
#define SP_NAT_OK 0
#define SP_NAT_HANDOFF (-1)
/* otherwise: the counter (enum sp_counter) that says why it was refused */

/* Allocates and links the tables (their memory is touched now, not on the
 * packet path). Returns 0 or -ENOMEM. */
int sp_nat_init(struct sp_nat *nat, const struct sp_nat_params *p);
void sp_nat_free(struct sp_nat *nat);

/* -- lookups (the fast path's) ------------------------------------------------- */

static inline uint32_t
sp_flow_hash(const struct sp_nat *nat, const struct sp_flow_key *k)
{
	uint64_t w1, w0 = sp_flow_key_words(k, &w1);

	return sp_hix_hash(&nat->flows, w0, w1);
}

/* Whether entry e (session << 1 | dir) of the flow index is key. */
static inline int
sp_flow_matches(const struct sp_nat *nat, uint32_t e,
		const struct sp_flow_key *key)
{
	uint64_t w1, k1, w0 = sp_session_key_words(&nat->sessions[e >> 1],
						   e & 1, &w1);

	return w0 == sp_flow_key_words(key, &k1) && w1 == k1;
}

static inline uint32_t
sp_flow_find(const struct sp_nat *nat, const struct sp_flow_key *key,
	     uint32_t e)
{
	while (e != SP_HIX_NONE && !sp_flow_matches(nat, e, key))
		e = sp_hix_next(&nat->flows, e);
	return e;
}

/* The session index and direction of a key (session << 1 | dir), or -1. */
static inline int64_t
sp_nat_lookup(const struct sp_nat *nat, const struct sp_flow_key *key)
{
	uint32_t e = sp_flow_find(nat, key,
				  sp_hix_first(&nat->flows,
					       sp_flow_hash(nat, key)));

	return e == SP_HIX_NONE ? -1 : (int64_t)e;
}

/*
 * The same for n keys (at most 64) at once, the fast path's: hashes and
 * bucket heads of the whole burst are fetched before the sessions.
 * found[j] is session << 1 | dir, or SP_NONE.
 */
static inline void
sp_nat_lookup_bulk(const struct sp_nat *nat, const struct sp_flow_key *keys,
		   unsigned n, uint32_t *found)
{
	uint32_t hash[64];

	for (unsigned j = 0; j < n; j++) {
		hash[j] = sp_flow_hash(nat, &keys[j]);
		sp_hix_prefetch(&nat->flows, hash[j]);
	}
	for (unsigned j = 0; j < n; j++) {
		found[j] = sp_hix_first(&nat->flows, hash[j]);
		if (found[j] != SP_HIX_NONE)
			__builtin_prefetch(&nat->sessions[found[j] >> 1]);
	}
	for (unsigned j = 0; j < n; j++)
		found[j] = sp_flow_find(nat, &keys[j], found[j]);
}

/* -- between the core's files ---------------------------------------------------- */

/* A mapping's endpoint key: (proto, address, port), host order. */
static inline uint32_t
sp_endpoint_hash(const struct sp_hix *ix, uint8_t proto, uint32_t addr,
		 uint16_t port)
{
	return sp_hix_hash(ix, addr, (uint64_t)port | (uint64_t)proto << 16);
}

static inline uint32_t
sp_remote_hash(const struct sp_nat *nat, uint32_t mapping, uint32_t rem_addr)
{
	return sp_hix_hash(&nat->remotes, rem_addr, mapping);
}

/* The hash of a session's key in one direction. */
static inline uint32_t
sp_session_hash(const struct sp_nat *nat, const struct sp_session *s,
		unsigned dir)
{
	uint64_t w1, w0 = sp_session_key_words(s, dir, &w1);

	return sp_hix_hash(&nat->flows, w0, w1);
}

/* A pool as the control thread published it (NULL: not yet). */
static inline struct sp_pool *
sp_nat_pool(const struct sp_nat *nat, uint16_t index)
{
	return __atomic_load_n(&nat->shared.pools[index], __ATOMIC_ACQUIRE);
}

/* Whether the observer listens now to what `when` names (observer.h). */
static inline bool
sp_nat_listens(const struct sp_nat *nat, uint32_t when)
{
	return nat->obs.listening == NULL ||
	       (__atomic_load_n(nat->obs.listening, __ATOMIC_RELAXED) &
		when) != 0;
}

/* Tells the observer what happened to session sidx. */
static inline void
sp_nat_notify(struct sp_nat *nat, uint32_t sidx, enum sp_session_event ev,
	      uint32_t now)
{
	if (nat->obs.session != NULL &&
	    sp_nat_listens(nat, nat->obs.session_when[ev]))
		nat->obs.session(nat->obs.ctx, &nat->sessions[sidx], sidx, ev,
				 now);
}

/* Whether a mapping event would be heard: not built when not. */
static inline bool
sp_nat_events_heard(const struct sp_nat *nat)
{
	return nat->obs.event != NULL &&
	       sp_nat_listens(nat, nat->obs.events_when);
}

static inline void
sp_nat_event(struct sp_nat *nat, const struct sp_event *ev)
{
	if (sp_nat_events_heard(nat))
		nat->obs.event(nat->obs.ctx, ev);
}

/*
 * The fast path, per translated packet: counts it towards the runtime's
 * after_packets, and at that packet announces the session (the stream's
 * "opened"; never in learn mode, core/learn.h). One compare once it is announced.
 */
static inline void
sp_nat_count_packet(struct sp_nat *nat, const struct sp_runtime *rt,
		    struct sp_session *s, uint32_t now)
{
	if (__builtin_expect(s->pkts >= rt->after_packets, 1))
		return;
	if (++s->pkts == rt->after_packets && s->pkts > 1 && !rt->learn)
		sp_nat_notify(nat, (uint32_t)(s - nat->sessions),
			      SP_SESSION_ANNOUNCED, now);
}

/*
 * At each of the wheel's looks at a session (at least every
 * SP_WHEEL_RECHECK_MS): a cached route whose slot has changed generation
 * since is forgotten. So no session, however long idle, holds a generation
 * for longer than that after the slot left it, and the control thread can
 * give a slot a generation again once every worker's wheel_time has passed
 * that time (control/routes.c).
 */
static inline void
sp_session_route_recheck(const struct sp_nat *nat, struct sp_session *s)
{
	if (nat->route_gen == NULL)
		return;
	for (unsigned dir = 0; dir < 2; dir++) {
		uint16_t c = s->route[dir];

		if (!(c & SP_ROUTE_NOT_CACHED) &&
		    __atomic_load_n(&nat->route_gen[c & (SP_ROUTE_SLOTS - 1)],
				    __ATOMIC_RELAXED) !=
			    c >> SP_ROUTE_SLOT_BITS)
			s->route[dir] = SP_ROUTE_UNSET;
	}
}

/* Puts session sidx, off the wheel, in the slot of expire (ms). */
static inline void
sp_wheel_insert(struct sp_nat *nat, uint32_t sidx, uint32_t expire)
{
	int32_t delta = (int32_t)(expire - nat->wheel_time);
	struct sp_session *s = &nat->sessions[sidx];
	uint32_t offset, slot, head;

	/* never the slot being processed; looked at again within a minute */
	if (delta > (int32_t)SP_WHEEL_RECHECK_MS)
		delta = (int32_t)SP_WHEEL_RECHECK_MS;
	if (delta < (int32_t)(1u << SP_WHEEL_SLOT_SHIFT))
		offset = 1;
	else
		offset = (uint32_t)delta >> SP_WHEEL_SLOT_SHIFT;
	slot = (nat->wheel_cursor + offset) % SP_WHEEL_SLOTS;
	head = nat->wheel[slot];
	s->next = head;
	s->prev = SP_WHEEL_HEAD | slot;
	if (head != SP_NONE)
		nat->sessions[head].prev = sidx;
	nat->wheel[slot] = sidx;
}

static inline void
sp_wheel_unlink(struct sp_nat *nat, uint32_t sidx)
{
	struct sp_session *s = &nat->sessions[sidx];

	if (s->prev & SP_WHEEL_HEAD)
		nat->wheel[s->prev & ~SP_WHEEL_HEAD] = s->next;
	else
		nat->sessions[s->prev].next = s->next;
	if (s->next != SP_NONE)
		nat->sessions[s->next].prev = s->prev;
}

/*
 * The next session due at now, taken off the wheel, or SP_NONE when none is
 * (or the walk's bounds are spent). The wheel is walked slot by slot up to
 * now; a session found in its slot that was refreshed since it was put there
 * (lazy refresh: the fast path only writes last_seen) goes to the slot of its
 * real expiry. Each session looked at costs one of *budget; empty slots cost
 * one of *steps, bounded after a long stall. sp_nat_age's walk, shared with
 * swpath/bench/bench_timers.c so that the wheel measured is this one.
 */
static inline uint32_t
sp_wheel_pop_due(struct sp_nat *nat, const struct sp_runtime *rt,
		 uint32_t now, unsigned *budget, unsigned *steps)
{
	const uint32_t slot_ms = 1u << SP_WHEEL_SLOT_SHIFT;

	while (*budget > 0 && *steps < SP_WHEEL_SLOTS) {
		uint32_t sidx = nat->wheel[nat->wheel_cursor];
		uint32_t expiry;

		if ((int32_t)(now - nat->wheel_time) < (int32_t)slot_ms)
			break;
		if (sidx == SP_NONE) {
			nat->wheel_cursor = (nat->wheel_cursor + 1) %
					    SP_WHEEL_SLOTS;
			nat->wheel_time += slot_ms;
			(*steps)++;
			continue;
		}
		sp_wheel_unlink(nat, sidx);
		(*budget)--;
		sp_session_route_recheck(nat, &nat->sessions[sidx]);
		expiry = nat->sessions[sidx].last_seen +
			 sp_session_timeout_ms(rt, &nat->sessions[sidx]);
		if ((int32_t)(now - expiry) < 0) {
			sp_wheel_insert(nat, sidx, expiry);
			continue;
		}
		return sidx;
	}
	return SP_NONE;
}

#endif /* SP_TABLE_H */
