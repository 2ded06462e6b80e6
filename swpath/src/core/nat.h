/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A worker's connection table and its new-flow decisions: the semantics of
 * controller/quicknat/nat/core.py and session.py, per worker, no locks.
 *
 * A session is the paper's pair of connection records: two keys in the
 * worker's flow index (hash_index.h), one per direction, both pointing at
 * one struct sp_session that holds the rewrite and is itself what the keys
 * are compared with. SNAT and inbound sessions share
 * an endpoint-independent mapping (RFC 4787 REQ-1) that owns the external
 * port; the port is released when the mapping's last session expires.
 *
 * Aging is a hashed timer wheel with lazy rescheduling: a session sits in the
 * slot of its expiry as computed when it was (re)inserted; when the wheel
 * reaches the slot the real expiry (last_seen + timeout) is checked, and a
 * session that was refreshed meanwhile is reinserted further on. The worker
 * advances the wheel by a bounded number of entries per loop.
 *
 * Addresses and ports in keys and sessions are in network byte order, as in
 * the packet, so the fast path never swaps bytes.
 */
#ifndef SP_NAT_H
#define SP_NAT_H

#include <stdint.h>
#include <string.h>
#include <netinet/in.h>

#include <rte_byteorder.h>

#include "control/cmd.h"                /* struct sp_session_filter */
#include "core/allocator.h"
#include "core/hash_index.h"

#define SP_NONE UINT32_MAX
#define SP_ROUTE_NONE UINT16_MAX
#define SP_NEIGH_NONE UINT16_MAX
#define SP_ROUTE_UNSET (UINT16_MAX - 1) /* not looked up yet */

/*
 * Wheel geometry: 8192 slots of 128 ms, about 17 minutes per turn. A session
 * is looked at again at least every SP_WHEEL_RECHECK_MS, so a timeout
 * shortened at run time applies within that time.
 */
#define SP_WHEEL_SLOT_SHIFT 7
#define SP_WHEEL_SLOTS 8192u
#define SP_WHEEL_RECHECK_MS 60000u
#define SP_WHEEL_HEAD 0x80000000u   /* prev of a slot's first session */

enum sp_dir {
	SP_DIR_IN2OUT = 0,
	SP_DIR_OUT2IN = 1,
};

enum sp_origin {
	SP_ORIGIN_SNAT = 0,     /* opened from inside through an SNAT rule */
	SP_ORIGIN_INBOUND = 1,  /* opened from outside on a mapping */
	SP_ORIGIN_DNAT = 2,     /* opened from outside through a DNAT rule */
};

/* TCP state, as flags seen per direction (RFC 7857 sec. 2.2). */
#define SP_TCP_SYN_I2O 0x01
#define SP_TCP_SYN_O2I 0x02
#define SP_TCP_FIN_I2O 0x04
#define SP_TCP_FIN_O2I 0x08
#define SP_TCP_RST 0x10
#define SP_TCP_SEEN_I2O 0x20
#define SP_TCP_SEEN_O2I 0x40

/* Session flags. */
#define SP_SESS_HAIRPIN 0x01    /* remote is a NAT-owned address */
/* Offload mode (docs/offload.md): the switch holds the session and forwards
 * its packets, so last_seen says nothing; it ages only once the switch has
 * reported it idle (SWITCH_IDLE) and swpath has seen nothing for its timeout
 * either, so it is never expired while the switch still forwards it. */
#define SP_SESS_OFFLOADED 0x02
#define SP_SESS_SWITCH_IDLE 0x04

struct sp_flow_key {
	rte_be32_t src;
	rte_be32_t dst;
	rte_be16_t sport;
	rte_be16_t dport;
	uint8_t proto;
	uint8_t pad[3];
};

/* One cache line. */
struct sp_session {
	rte_be32_t int_addr;    /* the inside host (DNAT: the server) */
	rte_be32_t ext_addr;    /* what the outside sees for it */
	rte_be32_t rem_addr;    /* the outside peer */
	rte_be16_t int_port;    /* ICMP: identifiers */
	rte_be16_t ext_port;
	rte_be16_t rem_port;    /* ICMP: the inside identifier (session.py) */
	uint8_t proto;          /* 0: free slot */
	uint8_t origin;
	uint8_t tcp;            /* SP_TCP_* */
	uint8_t flags;          /* SP_SESS_* */
	uint16_t route[2];      /* route index per direction, or SP_ROUTE_NONE */
	uint16_t neigh[2];      /* cached neighbour index, or SP_NEIGH_NONE */
	uint8_t pkts;           /* packets translated, up to the stream's
				 * after_packets (session_stream.h) */
	uint8_t pad;
	uint32_t last_seen;     /* ms */
	uint32_t created;       /* ms */
	uint32_t rule_id;       /* 0 for inbound sessions */
	uint32_t mapping;       /* SP_NONE for DNAT sessions */
	uint32_t next;          /* wheel (doubly linked) or free list */
	uint32_t prev;          /* SP_WHEEL_HEAD | slot for a slot's first */
	uint32_t seq;           /* odd while the worker rewrites the slot */
	uint32_t id;            /* n * workers + worker + 1 (wraps) */
};

/* one cache line: the fast path reads one per packet */
_Static_assert(sizeof(struct sp_session) == 64, "struct sp_session is a cache line");

struct sp_mapping {
	uint32_t int_addr;      /* host order */
	uint16_t int_port;
	uint8_t proto;
	uint8_t pi;
	uint32_t sessions;
	uint32_t next_free;
	struct sp_alloc ext;
};

/* An inside host's session count (sessions_per_host). */
struct sp_host {
	uint32_t addr;          /* host order */
	uint32_t sessions;
	uint32_t next_free;
	/* quota events logged since the host last closed a session: one line
	 * per episode at a limit, not one per refused packet (events.h) */
	uint32_t limits_logged; /* 1 << SP_EVENT_QUOTA_* */
};

struct sp_runtime;

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
	struct rte_ring *events;        /* the worker's event_ring, or NULL */
	struct rte_ring *stream;        /* session events (session_stream.h) */
	uint32_t free_host;
	struct sp_session *sessions;    /* [max_sessions] */
	struct sp_session *store;       /* their copies for a successor
					 * (session_store.h), or NULL */
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
	uint32_t wheel_time;            /* start (ms) of that slot */
	uint32_t *wheel;                /* slot heads */
};

/* Result of a new-flow decision. */
#define SP_NAT_OK 0
#define SP_NAT_HANDOFF (-1)
/* otherwise: the counter (enum sp_counter) that says why it was refused */

int sp_nat_init(struct sp_nat *nat, unsigned worker, unsigned n_workers,
		uint32_t max_sessions, uint64_t *counters, int socket,
		uint32_t now_ms);
void sp_nat_free(struct sp_nat *nat);

/* The session index and direction of a key, or -1. */
static inline int64_t
sp_nat_lookup(const struct sp_nat *nat, const struct sp_flow_key *key);

/*
 * The same for n keys (at most 64) at once, the fast path's: hashes and
 * bucket heads of the whole burst are fetched before the sessions.
 * found[j] is session << 1 | dir, or SP_NONE.
 */
static inline void
sp_nat_lookup_bulk(const struct sp_nat *nat, const struct sp_flow_key *keys,
		   unsigned n, uint32_t *found);


/*
 * A new flow seen on an inside port (key as in the packet, tcp_flags its TCP
 * flags or 0). If check_owner and the flow belongs to another worker,
 * returns SP_NAT_HANDOFF with that worker in *owner. On SP_NAT_OK, *sidx is
 * the session. A TCP RST finds its session but never opens one
 * (SP_CNT_drop_rst_no_session).
 */
int sp_nat_outbound(struct sp_nat *nat, const struct sp_runtime *rt,
		    const struct sp_flow_key *key, uint8_t tcp_flags,
		    uint32_t now, int check_owner, uint32_t *sidx,
		    unsigned *owner);

/* The same for a packet seen on an outside port (DNAT, mapping + filter). */
int sp_nat_inbound(struct sp_nat *nat, const struct sp_runtime *rt,
		   const struct sp_flow_key *key, uint8_t tcp_flags,
		   uint32_t now, int check_owner, uint32_t *sidx,
		   unsigned *owner);

/*
 * Fetches ahead what sp_nat_outbound (outside = 0) or sp_nat_inbound would
 * read first for key's mapping: its bucket in stage 0, then the bucket's
 * first mapping in stage 1. The fast path calls both stages over a burst's
 * misses before it opens their sessions one by one, so the misses' cache
 * and TLB misses overlap instead of queueing.
 */
void sp_nat_prefetch_miss(const struct sp_nat *nat,
			  const struct sp_flow_key *key, int outside,
			  unsigned stage);

/* Forgets a session (its mapping goes with its last session). */
void sp_nat_remove(struct sp_nat *nat, uint32_t sidx, uint32_t now);

/* Whether session s (in use) is one the filter selects. */
static inline int
sp_session_matches(const struct sp_session *s,
		   const struct sp_session_filter *f)
{
	if (f->proto != 0 && s->proto != f->proto)
		return 0;
	if (f->has_src && rte_be_to_cpu_32(s->int_addr) != f->src)
		return 0;
	if (f->has_dst && rte_be_to_cpu_32(s->rem_addr) != f->dst)
		return 0;
	if (f->has_rule && s->rule_id != f->rule)
		return 0;
	if (f->has_port) {
		uint16_t p = f->port;

		return rte_be_to_cpu_16(s->int_port) == p ||
		       rte_be_to_cpu_16(s->ext_port) == p ||
		       rte_be_to_cpu_16(s->rem_port) == p;
	}
	return 1;
}

/*
 * Removes every session the filter selects (an operator's `sessions
 * delete|flush`), as expiry would: mapping events, ports back to rest.
 * Returns how many.
 */
uint32_t sp_nat_delete(struct sp_nat *nat, const struct sp_session_filter *f,
		       uint32_t now);

/* Whether a TCP session is established (else transitory). */
int sp_nat_tcp_established(const struct sp_session *s);

/* The idle timeout of a session now, in ms. */
uint32_t sp_nat_timeout_ms(const struct sp_runtime *rt,
			   const struct sp_session *s);

/* Updates the TCP state from a packet's flags in one direction. */
static inline void
sp_nat_tcp_track(struct sp_session *s, unsigned dir, uint8_t tcp_flags);

/* A TCP session's phase as the sessions listing names it: opening,
 * established, closing (a FIN seen), reset. */
enum sp_tcp_phase {
	SP_TCP_OPENING = 0,
	SP_TCP_ESTABLISHED = 1,
	SP_TCP_CLOSING = 2,
	SP_TCP_RESET = 3,
};

enum sp_tcp_phase sp_nat_tcp_phase(const struct sp_session *s);

/* After a segment changed s->tcp from `before`: a stream record when the
 * phase changed (session_stream.h). Not per packet: only on a change. */
void sp_nat_tcp_changed(struct sp_nat *nat, uint32_t sidx, uint8_t before,
			uint32_t now);

/*
 * Moves a session to the wheel slot of its current expiry: after a FIN or
 * RST made it transitory (RFC 7857: a RST leaves it at most 4 minutes).
 */
void sp_nat_reschedule(struct sp_nat *nat, const struct sp_runtime *rt,
		       uint32_t sidx);

/*
 * Advances the timer wheel to now, examining at most budget sessions.
 * Returns the number of sessions expired.
 */
unsigned sp_nat_age(struct sp_nat *nat, const struct sp_runtime *rt,
		    uint32_t now, unsigned budget);

/*
 * Takes over a session a predecessor process left (session_store.h): rec as
 * it was stored, its times already in this process's clock. Valid only if it
 * still is under this configuration: its rule (SNAT: the internal endpoint's
 * pool holds its external endpoint; DNAT: the rule still sends its external
 * endpoint to its internal one), a port this worker owns and nobody holds,
 * no other session with one of its keys. Re-creates its mapping (with the
 * port claimed, sp_pool_claim), the host's count and the port binding,
 * without mapping events (the mapping did not end). Returns SP_ADOPT_OK with
 * *sidx, or why not. Only before the worker runs (the control thread's).
 */
enum sp_adopt {
	SP_ADOPT_OK = 0,
	SP_ADOPT_INVALID,       /* not a session this version writes */
	SP_ADOPT_NO_RULE,       /* no rule gives it now */
	SP_ADOPT_PORT,          /* its port is not in the pool, or not ours */
	SP_ADOPT_CONFLICT,      /* a key or port another adopted session has */
	SP_ADOPT_FULL,          /* the table is full */
	SP_ADOPT_MAX
};

extern const char *const sp_adopt_reasons[SP_ADOPT_MAX];

enum sp_adopt sp_nat_adopt(struct sp_nat *nat, const struct sp_runtime *rt,
			   const struct sp_session *rec, uint32_t *sidx);

struct sp_cmd_session;
/*
 * The offload manager's word on one of this worker's sessions (offload,
 * idle, onload; cmd.h). A session that is gone, or another one now with the
 * same key, is counted offload_unknown and left alone. `adopt` is
 * sp_nat_handback's.
 */
void sp_nat_session_cmd(struct sp_nat *nat, const struct sp_runtime *rt,
			const struct sp_cmd_session *c, uint32_t now);

/*
 * A session the switch holds and this process does not know, handed back
 * by the offload manager after the instance lost its sessions (it started
 * without its --state file): taken over as sp_nat_adopt takes a
 * predecessor's (its port claimed, never handed out again), with a new id,
 * offloaded, and announced on the stream (`opened`), which tells the
 * manager its id. Refused (counted handback_refused) where sp_nat_adopt
 * would refuse it; the manager then deletes its entries.
 */
void sp_nat_handback(struct sp_nat *nat, const struct sp_runtime *rt,
		     const struct sp_cmd_session *c, uint32_t now);

/* -- inline ---------------------------------------------------------------- */

#include <rte_tcp.h>

/*
 * A flow key as two words: (src, dst) and (sport, dport, proto), the
 * padding left out. What the flow index hashes and compares.
 */
static inline uint64_t
sp_flow_words(rte_be32_t src, rte_be32_t dst, rte_be16_t sport,
	      rte_be16_t dport, uint8_t proto, uint64_t *w1)
{
	*w1 = (uint64_t)sport | (uint64_t)dport << 16 | (uint64_t)proto << 32;
	return (uint64_t)src | (uint64_t)dst << 32;
}

static inline uint64_t
sp_flow_key_words(const struct sp_flow_key *k, uint64_t *w1)
{
	return sp_flow_words(k->src, k->dst, k->sport, k->dport, k->proto, w1);
}

/*
 * A session's key in one direction, as its packets carry it (in words).
 * An ICMP echo key has the identifier as both ports.
 */
static inline uint64_t
sp_session_key_words(const struct sp_session *s, unsigned dir, uint64_t *w1)
{
	int icmp = s->proto == IPPROTO_ICMP;

	if (dir == SP_DIR_IN2OUT)
		return sp_flow_words(s->int_addr, s->rem_addr, s->int_port,
				     icmp ? s->int_port : s->rem_port,
				     s->proto, w1);
	return sp_flow_words(s->rem_addr, s->ext_addr,
			     icmp ? s->ext_port : s->rem_port, s->ext_port,
			     s->proto, w1);
}

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

static inline int64_t
sp_nat_lookup(const struct sp_nat *nat, const struct sp_flow_key *key)
{
	uint32_t e = sp_flow_find(nat, key,
				  sp_hix_first(&nat->flows,
					       sp_flow_hash(nat, key)));

	return e == SP_HIX_NONE ? -1 : (int64_t)e;
}

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
			rte_prefetch0(&nat->sessions[found[j] >> 1]);
	}
	for (unsigned j = 0; j < n; j++)
		found[j] = sp_flow_find(nat, &keys[j], found[j]);
}

static inline void
sp_nat_tcp_track(struct sp_session *s, unsigned dir, uint8_t tcp_flags)
{
	uint8_t t = s->tcp;

	t |= dir == SP_DIR_IN2OUT ? SP_TCP_SEEN_I2O : SP_TCP_SEEN_O2I;
	if (tcp_flags & RTE_TCP_SYN_FLAG)
		t |= dir == SP_DIR_IN2OUT ? SP_TCP_SYN_I2O : SP_TCP_SYN_O2I;
	if (tcp_flags & RTE_TCP_FIN_FLAG)
		t |= dir == SP_DIR_IN2OUT ? SP_TCP_FIN_I2O : SP_TCP_FIN_O2I;
	if (tcp_flags & RTE_TCP_RST_FLAG)
		t |= SP_TCP_RST;
	if (t != s->tcp)
		s->tcp = t;
}

#endif /* SP_NAT_H */
