/* SPDX-License-Identifier: Apache-2.0 */
/*
 * New-flow decisions and session life cycle of one worker: core.py's
 * new_flow / _outbound / _inbound / _dnat / remove, with the same refusals
 * (each one a counter), plus the timer wheel that ages sessions out.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_malloc.h>

#include "dataplane/sp.h"
#include "persist/events.h"
#include "persist/session_store.h"
#include "persist/session_stream.h"
#include "qns.h"

/* -- keys of the indexes (hash_index.h) ------------------------------------ */

/* A mapping's endpoint key: (proto, address, port), host order. */
static inline uint32_t
endpoint_hash(const struct sp_hix *ix, uint8_t proto, uint32_t addr,
	      uint16_t port)
{
	return sp_hix_hash(ix, addr, (uint64_t)port | (uint64_t)proto << 16);
}

static inline uint32_t
remote_hash(const struct sp_nat *nat, uint32_t mapping, uint32_t rem_addr)
{
	return sp_hix_hash(&nat->remotes, rem_addr, mapping);
}

static inline uint32_t
host_hash(const struct sp_nat *nat, uint32_t addr)
{
	return sp_hix_hash(&nat->host_ix, addr, 0);
}

/* The free lists of a record array: record i links to i + 1. */
#define LINK_FREE(array, n, field)                                        \
	do {                                                              \
		for (uint32_t i_ = 0; i_ < (n); i_++)                     \
			(array)[i_].field = i_ + 1 < (n) ? i_ + 1 : SP_NONE; \
	} while (0)

int
sp_nat_init(struct sp_nat *nat, unsigned worker, unsigned n_workers,
	    uint32_t max_sessions, uint64_t *counters, int socket,
	    uint32_t now_ms)
{
	memset(nat, 0, sizeof(*nat));
	nat->worker = worker;
	nat->n_workers = n_workers;
	nat->max_sessions = max_sessions;
	nat->cnt = counters;
	nat->sessions = rte_zmalloc_socket("sp_sessions",
					   (size_t)max_sessions *
						   sizeof(struct sp_session),
					   RTE_CACHE_LINE_SIZE, socket);
	nat->mappings = rte_zmalloc_socket("sp_mappings",
					   (size_t)max_sessions *
						   sizeof(struct sp_mapping),
					   RTE_CACHE_LINE_SIZE, socket);
	nat->hosts = rte_zmalloc_socket("sp_hosts",
					(size_t)max_sessions *
						sizeof(struct sp_host),
					RTE_CACHE_LINE_SIZE, socket);
	nat->wheel = rte_malloc_socket("sp_wheel",
				       SP_WHEEL_SLOTS * sizeof(uint32_t),
				       RTE_CACHE_LINE_SIZE, socket);
	/*
	 * Flows: twice as many buckets as keys, so a bucket holds half a key
	 * on average and a hit rarely reads a second session. The others
	 * are off the established path: one bucket per record.
	 */
	if (nat->sessions == NULL || nat->mappings == NULL ||
	    nat->hosts == NULL || nat->wheel == NULL ||
	    sp_hix_init(&nat->flows, "sp_flows", 2 * max_sessions,
			4 * max_sessions, false, socket) < 0 ||
	    sp_hix_init(&nat->map_int, "sp_map_int", max_sessions,
			max_sessions, false, socket) < 0 ||
	    sp_hix_init(&nat->map_ext, "sp_map_ext", max_sessions,
			max_sessions, false, socket) < 0 ||
	    /* many sessions of one mapping may share a remote address */
	    sp_hix_init(&nat->remotes, "sp_remotes", max_sessions,
			max_sessions, true, socket) < 0 ||
	    sp_hix_init(&nat->host_ix, "sp_host_ix", max_sessions,
			max_sessions, false, socket) < 0 ||
	    sp_alloc_ctx_init(&nat->alloc, worker, max_sessions, socket) < 0) {
		sp_nat_free(nat);
		return -ENOMEM;
	}
	/* (these loops also fault the records' memory in now) */
	LINK_FREE(nat->sessions, max_sessions, next);
	LINK_FREE(nat->mappings, max_sessions, next_free);
	LINK_FREE(nat->hosts, max_sessions, next_free);
	nat->free_host = 0;
	for (uint32_t i = 0; i < SP_WHEEL_SLOTS; i++)
		nat->wheel[i] = SP_NONE;
	nat->wheel_time = now_ms;
	nat->next_id = 0;
	return 0;
}

void
sp_nat_free(struct sp_nat *nat)
{
	sp_hix_free(&nat->flows);
	sp_hix_free(&nat->map_int);
	sp_hix_free(&nat->map_ext);
	sp_hix_free(&nat->remotes);
	sp_hix_free(&nat->host_ix);
	sp_alloc_ctx_free(&nat->alloc);
	rte_free(nat->sessions);
	rte_free(nat->mappings);
	rte_free(nat->hosts);
	rte_free(nat->wheel);
	memset(nat, 0, sizeof(*nat));
}

/* -- hosts, mappings, remotes ------------------------------------------------- */

static struct sp_host *
host_find(const struct sp_nat *nat, uint32_t addr, uint32_t hash)
{
	for (uint32_t h = sp_hix_first(&nat->host_ix, hash); h != SP_NONE;
	     h = sp_hix_next(&nat->host_ix, h))
		if (nat->hosts[h].addr == addr)
			return &nat->hosts[h];
	return NULL;
}

static uint32_t
host_sessions(const struct sp_nat *nat, uint32_t addr)
{
	const struct sp_host *h = host_find(nat, addr, host_hash(nat, addr));

	return h == NULL ? 0 : h->sessions;
}

/* One session more for addr: a host per session at most, so never full. */
static void
host_add_session(struct sp_nat *nat, uint32_t addr)
{
	uint32_t hash = host_hash(nat, addr);
	struct sp_host *h = host_find(nat, addr, hash);

	if (h == NULL) {
		uint32_t i = nat->free_host;

		h = &nat->hosts[i];
		nat->free_host = h->next_free;
		h->addr = addr;
		h->sessions = 0;
		h->limits_logged = 0;
		sp_hix_insert(&nat->host_ix, i, hash);
	}
	h->sessions++;
}

static void
host_remove_session(struct sp_nat *nat, uint32_t addr)
{
	uint32_t hash = host_hash(nat, addr);
	struct sp_host *h = host_find(nat, addr, hash);
	uint32_t i;

	if (h == NULL)
		return;
	h->limits_logged = 0;   /* below its limits again: log the next episode */
	if (--h->sessions != 0)
		return;
	i = (uint32_t)(h - nat->hosts);
	sp_hix_remove(&nat->host_ix, i, hash);
	h->next_free = nat->free_host;
	nat->free_host = i;
}

/* The mapping of an internal (side 0) or external (side 1) endpoint. */
static struct sp_mapping *
mapping_find(const struct sp_nat *nat, uint8_t side, uint8_t proto,
	     uint32_t addr, uint16_t port, uint32_t *idx)
{
	const struct sp_hix *ix = side == 0 ? &nat->map_int : &nat->map_ext;

	for (uint32_t i = sp_hix_first(ix, endpoint_hash(ix, proto, addr, port));
	     i != SP_NONE; i = sp_hix_next(ix, i)) {
		const struct sp_mapping *m = &nat->mappings[i];

		if (m->proto == proto &&
		    (side == 0 ? m->int_addr == addr && m->int_port == port :
				 m->ext.addr == addr && m->ext.port == port)) {
			*idx = i;
			return &nat->mappings[i];
		}
	}
	return NULL;
}

void
sp_nat_prefetch_miss(const struct sp_nat *nat, const struct sp_flow_key *key,
		     int outside, unsigned stage)
{
	const struct sp_hix *ix = outside ? &nat->map_ext : &nat->map_int;
	uint32_t hash = outside ?
		endpoint_hash(ix, key->proto, rte_be_to_cpu_32(key->dst),
			      rte_be_to_cpu_16(key->dport)) :
		endpoint_hash(ix, key->proto, rte_be_to_cpu_32(key->src),
			      rte_be_to_cpu_16(key->sport));
	uint32_t first;

	if (stage == 0) {
		sp_hix_prefetch(ix, hash);
		return;
	}
	first = sp_hix_first(ix, hash);
	if (first != SP_NONE)
		rte_prefetch0(&nat->mappings[first]);
}

/* Whether a mapping has a session with a remote address (RFC 4787 REQ-8). */
static int
mapping_has_remote(const struct sp_nat *nat, uint32_t midx, uint32_t rem_addr)
{
	rte_be32_t rem = rte_cpu_to_be_32(rem_addr);

	for (uint32_t i = sp_hix_first(&nat->remotes,
				       remote_hash(nat, midx, rem_addr));
	     i != SP_NONE; i = sp_hix_next(&nat->remotes, i))
		if (nat->sessions[i].mapping == midx &&
		    nat->sessions[i].rem_addr == rem)
			return 1;
	return 0;
}

/* -- timer wheel ------------------------------------------------------------- */

static void
wheel_insert(struct sp_nat *nat, uint32_t sidx, uint32_t expire)
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

static void
wheel_unlink(struct sp_nat *nat, uint32_t sidx)
{
	struct sp_session *s = &nat->sessions[sidx];

	if (s->prev & SP_WHEEL_HEAD)
		nat->wheel[s->prev & ~SP_WHEEL_HEAD] = s->next;
	else
		nat->sessions[s->prev].next = s->next;
	if (s->next != SP_NONE)
		nat->sessions[s->next].prev = s->prev;
}

void
sp_nat_reschedule(struct sp_nat *nat, const struct sp_runtime *rt,
		  uint32_t sidx)
{
	struct sp_session *s = &nat->sessions[sidx];

	wheel_unlink(nat, sidx);
	wheel_insert(nat, sidx, s->last_seen + sp_nat_timeout_ms(rt, s));
}

int
sp_nat_tcp_established(const struct sp_session *s)
{
	const uint8_t syn = SP_TCP_SYN_I2O | SP_TCP_SYN_O2I;
	const uint8_t seen = SP_TCP_SEEN_I2O | SP_TCP_SEEN_O2I;
	const uint8_t closing = SP_TCP_FIN_I2O | SP_TCP_FIN_O2I | SP_TCP_RST;
	uint8_t t = s->tcp;

	/*
	 * Established: both SYNs seen (either order: simultaneous open), or a
	 * flow picked up without any SYN that has traffic both ways; and no
	 * FIN or RST since (RFC 5382 REQ-5, RFC 7857 sec. 2.2).
	 */
	return (t & closing) == 0 &&
	       ((t & syn) == syn || ((t & syn) == 0 && (t & seen) == seen));
}

enum sp_tcp_phase
sp_nat_tcp_phase(const struct sp_session *s)
{
	if (s->tcp & SP_TCP_RST)
		return SP_TCP_RESET;
	if (s->tcp & (SP_TCP_FIN_I2O | SP_TCP_FIN_O2I))
		return SP_TCP_CLOSING;
	return sp_nat_tcp_established(s) ? SP_TCP_ESTABLISHED : SP_TCP_OPENING;
}

void
sp_nat_tcp_changed(struct sp_nat *nat, uint32_t sidx, uint8_t before,
		   uint32_t now)
{
	struct sp_session *s = &nat->sessions[sidx];
	struct sp_session old = { .proto = s->proto, .tcp = before };

	if (sp_nat_tcp_phase(&old) == sp_nat_tcp_phase(s))
		return;
	sp_stream_push(nat, s, SP_STREAM_STATE, 0, now);
	/* a successor times it out as what it is now */
	sp_store_put(nat, sidx);
}

uint32_t
sp_nat_timeout_ms(const struct sp_runtime *rt, const struct sp_session *s)
{
	switch (s->proto) {
	case IPPROTO_UDP:
		return rt->timeout_ms[SP_TO_UDP];
	case IPPROTO_ICMP:
		return rt->timeout_ms[SP_TO_ICMP];
	default:
		return sp_nat_tcp_established(s) ?
			rt->timeout_ms[SP_TO_TCP_EST] :
			rt->timeout_ms[SP_TO_TCP_TRANS];
	}
}

/* -- sessions -------------------------------------------------------------- */

static inline void
seq_begin(struct sp_session *s)
{
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void
seq_end(struct sp_session *s)
{
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
}

/* The hash of a session's key in one direction. */
static uint32_t
session_hash(const struct sp_nat *nat, const struct sp_session *s,
	     unsigned dir)
{
	uint64_t w1, w0 = sp_session_key_words(s, dir, &w1);

	return sp_hix_hash(&nat->flows, w0, w1);
}

/*
 * Links session idx, its fields set, into both keys of the flow index, its
 * mapping's and its host's counts, and the wheel (at last_seen + timeout);
 * takes it off the free list.
 */
static void
session_link(struct sp_nat *nat, const struct sp_runtime *rt, uint32_t idx)
{
	struct sp_session *s = &nat->sessions[idx];

	nat->free_session = s->next;
	sp_hix_insert(&nat->flows, idx << 1 | SP_DIR_IN2OUT,
		      session_hash(nat, s, SP_DIR_IN2OUT));
	sp_hix_insert(&nat->flows, idx << 1 | SP_DIR_OUT2IN,
		      session_hash(nat, s, SP_DIR_OUT2IN));
	if (s->mapping != SP_NONE) {
		nat->mappings[s->mapping].sessions++;
		sp_hix_insert(&nat->remotes, idx,
			      remote_hash(nat, s->mapping,
					  rte_be_to_cpu_32(s->rem_addr)));
	}
	host_add_session(nat, rte_be_to_cpu_32(s->int_addr));
	nat->n_sessions++;
	wheel_insert(nat, idx, s->last_seen + sp_nat_timeout_ms(rt, s));
}

/*
 * Opens a session: both keys, the mapping's and the host's counts, the
 * wheel. Returns SP_NAT_OK or a drop counter.
 */
static int
session_open(struct sp_nat *nat, const struct sp_runtime *rt, uint8_t proto,
	     uint8_t origin, uint32_t rule_id, uint32_t int_addr,
	     uint16_t int_port, uint32_t ext_addr, uint16_t ext_port,
	     uint32_t rem_addr, uint16_t rem_port, uint32_t mapping,
	     uint32_t now, uint32_t *sidx)
{
	struct sp_session *s;
	uint32_t idx = nat->free_session;

	if (idx == SP_NONE)
		return SP_CNT_drop_table_full;
	s = &nat->sessions[idx];
	seq_begin(s);
	s->proto = proto;
	s->origin = origin;
	s->tcp = 0;
	s->pkts = 0;
	s->flags = sp_rt_owned(rt, rem_addr) ? SP_SESS_HAIRPIN : 0;
	s->int_addr = rte_cpu_to_be_32(int_addr);
	s->int_port = rte_cpu_to_be_16(int_port);
	s->ext_addr = rte_cpu_to_be_32(ext_addr);
	s->ext_port = rte_cpu_to_be_16(ext_port);
	s->rem_addr = rte_cpu_to_be_32(rem_addr);
	s->rem_port = rte_cpu_to_be_16(rem_port);
	s->route[0] = s->route[1] = SP_ROUTE_UNSET;
	s->neigh[0] = s->neigh[1] = SP_NEIGH_NONE;
	s->last_seen = now;
	s->created = now;
	s->rule_id = rule_id;
	s->mapping = mapping;
	s->id = nat->next_id++ * nat->n_workers + nat->worker + 1;
	session_link(nat, rt, idx);
	nat->cnt[SP_CNT_sessions_created]++;
	seq_end(s);
	sp_store_put(nat, idx);
	if (sp_stream_after_packets <= 1)
		sp_stream_push(nat, s, SP_STREAM_OPENED, 0, now);
	*sidx = idx;
	return SP_NAT_OK;
}

/*
 * RFC 6888 REQ-12: a mapping is logged when its first session opens and when
 * its last one goes, as core.py's on_mapping; never the remote (events.h).
 */
static void
mapping_event(struct sp_nat *nat, uint8_t type, const struct sp_mapping *m,
	      uint32_t now)
{
	struct sp_event ev = {
		.time_ms = now, .int_addr = m->int_addr, .ext_addr = m->ext.addr,
		.int_port = m->int_port, .ext_port = m->ext.port,
		.proto = m->proto, .type = type,
	};

	if (nat->events != NULL)
		sp_event_push(nat->events, &ev, &nat->cnt[SP_CNT_events_dropped]);
}

static void
mapping_free(struct sp_nat *nat, uint32_t midx, uint32_t now)
{
	struct sp_mapping *m = &nat->mappings[midx];
	struct sp_pool *pool = __atomic_load_n(&sp.pools[m->ext.pool],
					       __ATOMIC_ACQUIRE);

	sp_hix_remove(&nat->map_int, midx,
		      endpoint_hash(&nat->map_int, m->proto, m->int_addr,
				    m->int_port));
	sp_hix_remove(&nat->map_ext, midx,
		      endpoint_hash(&nat->map_ext, m->proto, m->ext.addr,
				    m->ext.port));
	sp_pool_release(pool, &nat->alloc, m->pi, m->int_addr, &m->ext, now);
	m->proto = 0;
	m->next_free = nat->free_mapping;
	nat->free_mapping = midx;
	nat->n_mappings--;
	nat->cnt[SP_CNT_mappings_freed]++;
}

void
sp_nat_remove(struct sp_nat *nat, uint32_t sidx, uint32_t now)
{
	struct sp_session *s = &nat->sessions[sidx];

	seq_begin(s);
	sp_hix_remove(&nat->flows, sidx << 1 | SP_DIR_IN2OUT,
		      session_hash(nat, s, SP_DIR_IN2OUT));
	sp_hix_remove(&nat->flows, sidx << 1 | SP_DIR_OUT2IN,
		      session_hash(nat, s, SP_DIR_OUT2IN));
	host_remove_session(nat, rte_be_to_cpu_32(s->int_addr));
	if (s->mapping != SP_NONE) {
		struct sp_mapping *m = &nat->mappings[s->mapping];

		sp_hix_remove(&nat->remotes, sidx,
			      remote_hash(nat, s->mapping,
					  rte_be_to_cpu_32(s->rem_addr)));
		if (--m->sessions == 0) {
			mapping_event(nat, SP_EVENT_DELETED, m, now);
			mapping_free(nat, s->mapping, now);
		}
	}
	s->proto = 0;
	s->next = nat->free_session;
	nat->free_session = sidx;
	nat->n_sessions--;
	seq_end(s);
	sp_store_put(nat, sidx);
}

uint32_t
sp_nat_delete(struct sp_nat *nat, const struct sp_session_filter *f,
	      uint32_t now)
{
	uint32_t deleted = 0;

	for (uint32_t i = 0; i < nat->max_sessions; i++) {
		const struct sp_session *s = &nat->sessions[i];

		if (s->proto == 0 || !sp_session_matches(s, f))
			continue;
		wheel_unlink(nat, i);
		sp_stream_push(nat, s, SP_STREAM_CLOSED, SP_STREAM_DELETED, now);
		sp_nat_remove(nat, i, now);
		deleted++;
	}
	nat->cnt[SP_CNT_sessions_deleted] += deleted;
	return deleted;
}

unsigned
sp_nat_age(struct sp_nat *nat, const struct sp_runtime *rt, uint32_t now,
	   unsigned budget)
{
	const uint32_t slot_ms = 1u << SP_WHEEL_SLOT_SHIFT;
	unsigned expired = 0, steps = 0;

	/* empty slots are cheap; bound them too after a long stall */
	while (budget > 0 && steps < SP_WHEEL_SLOTS) {
		uint32_t sidx = nat->wheel[nat->wheel_cursor];
		struct sp_session *s;
		uint32_t expiry;

		if ((int32_t)(now - nat->wheel_time) < (int32_t)slot_ms)
			break;
		if (sidx == SP_NONE) {
			nat->wheel_cursor = (nat->wheel_cursor + 1) %
					    SP_WHEEL_SLOTS;
			nat->wheel_time += slot_ms;
			steps++;
			continue;
		}
		s = &nat->sessions[sidx];
		wheel_unlink(nat, sidx);
		budget--;
		expiry = s->last_seen + sp_nat_timeout_ms(rt, s);
		if ((int32_t)(now - expiry) >= 0 &&
		    unlikely((s->flags & (SP_SESS_OFFLOADED |
					  SP_SESS_SWITCH_IDLE)) ==
			     SP_SESS_OFFLOADED)) {
			/* the switch may be forwarding it: ask again later */
			wheel_insert(nat, sidx, now + sp_nat_timeout_ms(rt, s));
		} else if ((int32_t)(now - expiry) >= 0) {
			sp_stream_push(nat, s, SP_STREAM_CLOSED,
				       SP_STREAM_EXPIRED, now);
			sp_nat_remove(nat, sidx, now);
			nat->cnt[SP_CNT_sessions_expired]++;
			expired++;
		} else {
			wheel_insert(nat, sidx, expiry);
		}
	}
	return expired;
}

/* -- new flows ------------------------------------------------------------- */

/*
 * A new flow of int_addr refused at a per-host limit (RFC 6888 REQ-4/5): one
 * quota event per episode (events.h), whatever the refused packets' rate.
 */
static void
limit_event(struct sp_nat *nat, uint8_t type, uint32_t int_addr,
	    uint32_t limit, uint32_t now)
{
	struct sp_host *h = host_find(nat, int_addr, host_hash(nat, int_addr));
	struct sp_event ev = {
		.time_ms = now, .int_addr = int_addr, .ext_addr = limit,
		.type = type,
	};

	if (h != NULL) {
		if (h->limits_logged & (1u << type))
			return;
		h->limits_logged |= 1u << type;
	}
	if (nat->events != NULL)
		sp_event_push(nat->events, &ev, &nat->cnt[SP_CNT_events_dropped]);
}

static int
session_limit_reached(struct sp_nat *nat, const struct sp_runtime *rt,
		      uint32_t int_addr, uint32_t now)
{
	if (rt->sessions_per_host == 0 ||
	    host_sessions(nat, int_addr) < rt->sessions_per_host)
		return 0;
	limit_event(nat, SP_EVENT_QUOTA_SESSIONS, int_addr,
		    rt->sessions_per_host, now);
	return 1;
}

static int
existing(const struct sp_nat *nat, const struct sp_flow_key *key,
	 uint32_t *sidx)
{
	int64_t d = sp_nat_lookup(nat, key);

	if (d < 0)
		return 0;
	*sidx = (uint32_t)(d >> 1);
	return 1;
}

/* A mapping of the internal endpoint to a (free list not empty). */
static uint32_t
mapping_insert(struct sp_nat *nat, uint8_t proto, uint32_t int_addr,
	       uint16_t int_port, const struct sp_alloc *a)
{
	uint32_t idx = nat->free_mapping;
	struct sp_mapping *m = &nat->mappings[idx];

	nat->free_mapping = m->next_free;
	m->int_addr = int_addr;
	m->int_port = int_port;
	m->proto = proto;
	m->pi = (uint8_t)sp_proto_index(proto);
	m->sessions = 0;
	m->ext = *a;
	sp_hix_insert(&nat->map_int, idx,
		      endpoint_hash(&nat->map_int, proto, int_addr, int_port));
	sp_hix_insert(&nat->map_ext, idx,
		      endpoint_hash(&nat->map_ext, proto, a->addr, a->port));
	nat->n_mappings++;
	return idx;
}

static int
mapping_new(struct sp_nat *nat, const struct sp_runtime *rt, uint64_t action,
	    uint8_t proto, uint32_t int_addr, uint16_t int_port, uint32_t now,
	    uint32_t *midx)
{
	struct sp_pool *pool;
	struct sp_alloc a;
	unsigned pi = sp_proto_index(proto);
	struct sp_alloc_req req = {
		.int_addr = int_addr, .int_port = int_port, .pi = (uint8_t)pi,
		.quota = rt->ports_per_host, .now_ms = now,
		.reuse_ms = rt->reuse_ms,
	};
	int rc;

	if (nat->free_mapping == SP_NONE)
		return SP_CNT_drop_table_full;
	pool = __atomic_load_n(&sp.pools[SP_ACT_POOL(action)],
			       __ATOMIC_ACQUIRE);
	if (pool == NULL)
		return SP_CNT_drop_no_rule;
	rc = sp_pool_allocate(pool, &nat->alloc, &req, &a);
	if (rc == -EDQUOT) {
		limit_event(nat, SP_EVENT_QUOTA_PORTS, int_addr,
			    rt->ports_per_host, now);
		return SP_CNT_drop_quota_exceeded;
	}
	if (rc == -ENOSPC)
		return SP_CNT_drop_pool_exhausted;
	if (rc < 0)
		return SP_CNT_drop_table_full;
	*midx = mapping_insert(nat, proto, int_addr, int_port, &a);
	nat->cnt[SP_CNT_mappings_created]++;
	return SP_NAT_OK;
}

/*
 * A RST ends a connection; with no session there is none to end here, and
 * a session opened for it would hold a port (inside) or a slot of a host's
 * session limit (outside: a spoofed RST flood at a port forward) for the
 * transitory timeout, for a packet no peer can use (RFC 6888's resource
 * exhaustion; Linux conntrack calls such a RST invalid). Checked once the
 * flow is on its owner worker and has no session there.
 */
static inline int
opens_session(const struct sp_flow_key *key, uint8_t tcp_flags)
{
	return key->proto != IPPROTO_TCP || !(tcp_flags & RTE_TCP_RST_FLAG);
}

int
sp_nat_outbound(struct sp_nat *nat, const struct sp_runtime *rt,
		const struct sp_flow_key *key, uint8_t tcp_flags, uint32_t now,
		int check_owner, uint32_t *sidx, unsigned *owner)
{
	uint32_t src = rte_be_to_cpu_32(key->src);
	uint16_t sport = rte_be_to_cpu_16(key->sport);
	const struct qns_rule *rule;
	struct sp_mapping *m;
	uint64_t action;
	uint32_t rule_id, midx;
	bool fresh;
	int rc;

	if (check_owner && nat->n_workers > 1) {
		unsigned o = sp_owner_inside(&sp.rss, src);

		if (o != nat->worker) {
			*owner = o;
			return SP_NAT_HANDOFF;
		}
	}
	if (existing(nat, key, sidx))
		return SP_NAT_OK;
	if (!opens_session(key, tcp_flags))
		return SP_CNT_drop_rst_no_session;
	rule = qns_lookup_kind(sp.qns, QNS_SNAT, key->proto, src, sport);
	if (rule == NULL)
		return SP_CNT_drop_no_rule;
	action = rule->user;
	rule_id = rule->id;
	if (session_limit_reached(nat, rt, src, now))
		return SP_CNT_drop_session_limit;
	m = mapping_find(nat, 0, key->proto, src, sport, &midx);
	fresh = m == NULL;
	if (fresh) {
		rc = mapping_new(nat, rt, action, key->proto, src, sport, now,
				 &midx);
		if (rc != SP_NAT_OK)
			return rc;
		m = &nat->mappings[midx];
	}
	rc = session_open(nat, rt, key->proto, SP_ORIGIN_SNAT, rule_id, src,
			  sport, m->ext.addr, m->ext.port,
			  rte_be_to_cpu_32(key->dst),
			  key->proto == IPPROTO_ICMP ? sport :
						       rte_be_to_cpu_16(key->dport),
			  midx, now, sidx);
	if (rc != SP_NAT_OK) {
		/* a mapping that never carried a session is not logged */
		if (fresh)
			mapping_free(nat, midx, now);
		return rc;
	}
	if (fresh)
		mapping_event(nat, SP_EVENT_CREATED, m, now);
	return SP_NAT_OK;
}

/* Where a DNAT rule sends (dst, dport): one address, or 1:1 by prefix. */
static void
dnat_target(const struct qns_rule *rule, uint32_t dst, uint16_t dport,
	    uint32_t *int_addr, uint16_t *int_port)
{
	uint64_t u = rule->user;
	uint32_t mask = rule->plen == 0 ? 0 : ~0u << (32 - rule->plen);

	*int_addr = SP_ACT_TO(u) | (SP_ACT_TO_LEN(u) < 32 ? dst & ~mask : 0);
	*int_port = SP_ACT_HAS_TO_PORT(u) ? SP_ACT_TO_PORT(u) : dport;
}

int
sp_nat_inbound(struct sp_nat *nat, const struct sp_runtime *rt,
	       const struct sp_flow_key *key, uint8_t tcp_flags, uint32_t now,
	       int check_owner, uint32_t *sidx, unsigned *owner)
{
	uint32_t dst = rte_be_to_cpu_32(key->dst);
	uint16_t dport = rte_be_to_cpu_16(key->dport);
	uint32_t src = rte_be_to_cpu_32(key->src);
	uint16_t sport = rte_be_to_cpu_16(key->sport);
	const struct qns_rule *rule;
	struct sp_mapping *m;
	uint32_t midx;

	if (existing(nat, key, sidx))
		return SP_NAT_OK;
	rule = qns_lookup_kind(sp.qns, QNS_DNAT, key->proto, dst, dport);
	if (rule != NULL && SP_ACT_KIND(rule->user) == SP_ACT_DNAT) {
		uint32_t rule_id = rule->id, int_addr;
		uint16_t int_port;

		dnat_target(rule, dst, dport, &int_addr, &int_port);

		/* A DNAT session lives with its inside host (rss.h). */
		if (check_owner && nat->n_workers > 1) {
			unsigned o = sp_owner_inside(&sp.rss, int_addr);

			if (o != nat->worker) {
				*owner = o;
				return SP_NAT_HANDOFF;
			}
		}
		if (!opens_session(key, tcp_flags))
			return SP_CNT_drop_rst_no_session;
		if (session_limit_reached(nat, rt, int_addr, now))
			return SP_CNT_drop_session_limit;
		return session_open(nat, rt, key->proto, SP_ORIGIN_DNAT,
				    rule_id, int_addr, int_port, dst, dport,
				    src, sport, SP_NONE, now, sidx);
	}
	if (check_owner && nat->n_workers > 1) {
		unsigned o = sp_owner_outside(&sp.rss, dst, dport);

		if (o != nat->worker) {
			*owner = o;
			return SP_NAT_HANDOFF;
		}
	}
	if (!opens_session(key, tcp_flags))
		return SP_CNT_drop_rst_no_session;
	m = mapping_find(nat, 1, key->proto, dst, dport, &midx);
	if (m == NULL)
		return SP_CNT_drop_unsolicited;
	switch (rt->filtering[m->pi]) {
	case SP_FILTER_EIM:
		break;
	case SP_FILTER_ADDR:
		if (!mapping_has_remote(nat, midx, src))
			return SP_CNT_drop_filtered;
		break;
	default:
		/* the one allowed 5-tuple already has its keys */
		return SP_CNT_drop_filtered;
	}
	if (session_limit_reached(nat, rt, m->int_addr, now))
		return SP_CNT_drop_session_limit;
	return session_open(nat, rt, key->proto, SP_ORIGIN_INBOUND, 0,
			    m->int_addr, m->int_port, m->ext.addr, m->ext.port,
			    src, sport, midx, now, sidx);
}

/* -- offload mode ------------------------------------------------------------ */

void
sp_nat_session_cmd(struct sp_nat *nat, const struct sp_runtime *rt,
		   const struct sp_cmd_session *c, uint32_t now)
{
	const struct sp_flow_key key = {
		.src = rte_cpu_to_be_32(c->int_addr),
		.dst = rte_cpu_to_be_32(c->rem_addr),
		.sport = rte_cpu_to_be_16(c->int_port),
		/* an ICMP query's key has its identifier as both ports */
		.dport = rte_cpu_to_be_16(c->proto == IPPROTO_ICMP ?
					  c->int_port : c->rem_port),
		.proto = c->proto,
	};
	int64_t found = sp_nat_lookup(nat, &key);
	uint32_t sidx;
	struct sp_session *s;

	if (c->action == SP_SESSION_ADOPT) {
		sp_nat_handback(nat, rt, c, now);
		return;
	}
	if (found < 0 || (found & 1) != SP_DIR_IN2OUT ||
	    nat->sessions[found >> 1].id != c->id) {
		nat->cnt[SP_CNT_offload_unknown]++;
		return;
	}
	sidx = (uint32_t)(found >> 1);
	s = &nat->sessions[sidx];
	switch (c->action) {
	case SP_SESSION_OFFLOAD:
		if (!(s->flags & SP_SESS_OFFLOADED))
			nat->cnt[SP_CNT_sessions_offloaded]++;
		s->flags = (uint8_t)((s->flags | SP_SESS_OFFLOADED) &
				     ~SP_SESS_SWITCH_IDLE);
		break;
	case SP_SESSION_ONLOAD:
		/* software again: its packets refresh it from now on */
		s->flags &= (uint8_t)~(SP_SESS_OFFLOADED | SP_SESS_SWITCH_IDLE);
		s->last_seen = now;
		sp_nat_reschedule(nat, rt, sidx);
		break;
	case SP_SESSION_IDLE:
		s->flags |= SP_SESS_SWITCH_IDLE;
		/* due now unless swpath saw it within its timeout (a SYN, FIN
		 * or RST it took from the switch): the wheel decides */
		sp_nat_reschedule(nat, rt, sidx);
		break;
	}
	/* a successor must not expire what the switch still forwards */
	sp_store_put(nat, sidx);
}


/* -- a predecessor's sessions (session_store.h) ------------------------------ */

const char *const sp_adopt_reasons[SP_ADOPT_MAX] = {
	[SP_ADOPT_OK] = "adopted",
	[SP_ADOPT_INVALID] = "not a valid record",
	[SP_ADOPT_NO_RULE] = "no rule gives it now",
	[SP_ADOPT_PORT] = "its port is not one of this worker's in the pool",
	[SP_ADOPT_CONFLICT] = "its key or port is taken",
	[SP_ADOPT_FULL] = "the table is full",
};

/* Whether the flow index has a key of rec in direction dir. */
static bool
key_taken(const struct sp_nat *nat, const struct sp_session *rec, unsigned dir)
{
	uint64_t w1, w0 = sp_session_key_words(rec, dir, &w1);

	for (uint32_t e = sp_hix_first(&nat->flows,
				       sp_hix_hash(&nat->flows, w0, w1));
	     e != SP_HIX_NONE; e = sp_hix_next(&nat->flows, e)) {
		uint64_t v1, v0 = sp_session_key_words(&nat->sessions[e >> 1],
						       e & 1, &v1);

		if (v0 == w0 && v1 == w1)
			return true;
	}
	return false;
}

/* The mapping an SNAT or inbound session rec needs: found, or made with
 * its port claimed from the pool of the rule that gives it now. */
static enum sp_adopt
adopt_mapping(struct sp_nat *nat, const struct sp_session *rec,
	      uint32_t *rule_id, uint32_t *midx)
{
	uint32_t int_addr = rte_be_to_cpu_32(rec->int_addr);
	uint16_t int_port = rte_be_to_cpu_16(rec->int_port);
	uint32_t ext_addr = rte_be_to_cpu_32(rec->ext_addr);
	uint16_t ext_port = rte_be_to_cpu_16(rec->ext_port);
	const struct qns_rule *rule;
	struct sp_mapping *m;
	struct sp_pool *pool;
	struct sp_alloc a;
	int rc;

	rule = qns_lookup_kind(sp.qns, QNS_SNAT, rec->proto, int_addr, int_port);
	if (rule == NULL)
		return SP_ADOPT_NO_RULE;
	pool = __atomic_load_n(&sp.pools[SP_ACT_POOL(rule->user)],
			       __ATOMIC_ACQUIRE);
	if (pool == NULL)
		return SP_ADOPT_NO_RULE;
	*rule_id = rec->origin == SP_ORIGIN_SNAT ? rule->id : 0;
	m = mapping_find(nat, 0, rec->proto, int_addr, int_port, midx);
	if (m != NULL)
		return m->ext.addr == ext_addr && m->ext.port == ext_port ?
			SP_ADOPT_OK : SP_ADOPT_CONFLICT;
	if (nat->free_mapping == SP_NONE)
		return SP_ADOPT_FULL;
	rc = sp_pool_claim(pool, &nat->alloc, sp_proto_index(rec->proto),
			   int_addr, ext_addr, ext_port, &a);
	if (rc == -ERANGE)
		return SP_ADOPT_PORT;
	if (rc == -EEXIST)
		return SP_ADOPT_CONFLICT;
	if (rc < 0)
		return SP_ADOPT_FULL;
	*midx = mapping_insert(nat, rec->proto, int_addr, int_port, &a);
	return SP_ADOPT_OK;
}

enum sp_adopt
sp_nat_adopt(struct sp_nat *nat, const struct sp_runtime *rt,
	     const struct sp_session *rec, uint32_t *sidx)
{
	uint32_t idx = nat->free_session, midx = SP_NONE, rule_id, next, seq;
	struct sp_session *s;
	enum sp_adopt r;

	if ((rec->proto != IPPROTO_TCP && rec->proto != IPPROTO_UDP &&
	     rec->proto != IPPROTO_ICMP) || rec->origin > SP_ORIGIN_DNAT ||
	    rec->int_port == 0 || rec->ext_port == 0)
		return SP_ADOPT_INVALID;
	if (idx == SP_NONE)
		return SP_ADOPT_FULL;
	if (key_taken(nat, rec, SP_DIR_IN2OUT) ||
	    key_taken(nat, rec, SP_DIR_OUT2IN))
		return SP_ADOPT_CONFLICT;
	if (rec->origin == SP_ORIGIN_DNAT) {
		uint32_t ext_addr = rte_be_to_cpu_32(rec->ext_addr), to;
		uint16_t ext_port = rte_be_to_cpu_16(rec->ext_port), to_port;
		const struct qns_rule *rule =
			qns_lookup_kind(sp.qns, QNS_DNAT, rec->proto,
					ext_addr, ext_port);

		if (rule == NULL || SP_ACT_KIND(rule->user) != SP_ACT_DNAT)
			return SP_ADOPT_NO_RULE;
		dnat_target(rule, ext_addr, ext_port, &to, &to_port);
		if (to != rte_be_to_cpu_32(rec->int_addr) ||
		    to_port != rte_be_to_cpu_16(rec->int_port))
			return SP_ADOPT_NO_RULE;
		rule_id = rule->id;
	} else {
		r = adopt_mapping(nat, rec, &rule_id, &midx);
		if (r != SP_ADOPT_OK)
			return r;
	}
	s = &nat->sessions[idx];
	seq_begin(s);           /* the control thread may be listing them */
	next = s->next;
	seq = s->seq;
	*s = *rec;
	s->next = next;
	s->seq = seq;
	/* what this process decides anew: owned addresses, routes, rules */
	s->flags = (uint8_t)((rec->flags &
			      (SP_SESS_OFFLOADED | SP_SESS_SWITCH_IDLE)) |
			     (sp_rt_owned(rt, rte_be_to_cpu_32(rec->rem_addr)) ?
				      SP_SESS_HAIRPIN : 0));
	s->route[0] = s->route[1] = SP_ROUTE_UNSET;
	s->neigh[0] = s->neigh[1] = SP_NEIGH_NONE;
	s->rule_id = rule_id;
	s->mapping = midx;
	session_link(nat, rt, idx);
	/* ids stay (the offload manager knows sessions by them): new ones
	 * start above every adopted one */
	if (rec->id / nat->n_workers >= nat->next_id)
		nat->next_id = rec->id / nat->n_workers + 1;
	seq_end(s);
	*sidx = idx;
	return SP_ADOPT_OK;
}

/* The TCP flags that give a session the phase (sp_nat_tcp_phase). */
static uint8_t
tcp_flags_of(enum sp_tcp_phase phase)
{
	const uint8_t open = SP_TCP_SYN_I2O | SP_TCP_SYN_O2I |
			     SP_TCP_SEEN_I2O | SP_TCP_SEEN_O2I;

	switch (phase) {
	case SP_TCP_ESTABLISHED:
		return open;
	case SP_TCP_CLOSING:
		return open | SP_TCP_FIN_I2O;
	case SP_TCP_RESET:
		return open | SP_TCP_RST;
	default:
		return SP_TCP_SYN_I2O | SP_TCP_SEEN_I2O;
	}
}

void
sp_nat_handback(struct sp_nat *nat, const struct sp_runtime *rt,
		const struct sp_cmd_session *c, uint32_t now)
{
	struct sp_session rec = {
		.int_addr = rte_cpu_to_be_32(c->int_addr),
		.ext_addr = rte_cpu_to_be_32(c->ext_addr),
		.rem_addr = rte_cpu_to_be_32(c->rem_addr),
		.int_port = rte_cpu_to_be_16(c->int_port),
		.ext_port = rte_cpu_to_be_16(c->ext_port),
		.rem_port = rte_cpu_to_be_16(c->rem_port),
		.proto = c->proto,
		.origin = c->origin,
		.tcp = c->proto == IPPROTO_TCP ?
			tcp_flags_of((enum sp_tcp_phase)c->tcp_phase) : 0,
		/* the switch forwards it: aged by its idle notifications */
		.flags = SP_SESS_OFFLOADED,
		/* announced now, below; never again by its packet count */
		.pkts = sp_stream_after_packets,
		.last_seen = now,
		.created = now,
	};
	struct sp_session *s;
	enum sp_adopt r;
	uint32_t sidx;

	r = sp_nat_adopt(nat, rt, &rec, &sidx);
	if (r != SP_ADOPT_OK) {
		nat->cnt[SP_CNT_handback_refused]++;
		return;
	}
	s = &nat->sessions[sidx];
	/* an id of this process's: the manager learns it from the stream */
	seq_begin(s);
	s->id = nat->next_id++ * nat->n_workers + nat->worker + 1;
	seq_end(s);
	nat->cnt[SP_CNT_sessions_handed_back]++;
	nat->cnt[SP_CNT_sessions_offloaded]++;
	sp_store_put(nat, sidx);
	sp_stream_push(nat, s, SP_STREAM_OPENED, 0, now);
}
