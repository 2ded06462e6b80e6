/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A session as every layer sees it, and the helpers that read it: the leaf
 * header of the NAT core (VPP nat44-ed's nat44_ed_inlines.h). The packet path
 * rewrites by it, the state file and the session stream copy it, the control
 * socket lists it; none of them needs the worker's tables (core/table.h) for
 * that. Plain C, no DPDK.
 *
 * Addresses and ports are in network byte order, as in the packet, so the
 * fast path never swaps bytes.
 */
#ifndef SP_SESSION_H
#define SP_SESSION_H

#include <endian.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/runtime.h"

/* Network byte order, as in the packet (DPDK's rte_be32_t and rte_be16_t
 * are the same types). */
typedef uint32_t sp_be32_t;
typedef uint16_t sp_be16_t;

#define SP_NONE UINT32_MAX
#define SP_ROUTE_NONE UINT16_MAX
#define SP_NEIGH_NONE UINT16_MAX
#define SP_ROUTE_UNSET (UINT16_MAX - 1) /* not looked up yet */
/* A session's cached route: the slot (below SP_ROUTE_SLOTS) in the low 12
 * bits, the slot's generation then in the 3 above, bit 15 clear
 * (SP_ROUTE_UNSET has it set). Eight generations come round: the timer
 * wheel forgets a stale one within SP_WHEEL_RECHECK_MS (core/table.h), and
 * control/routes.c gives a slot a generation again only after that. */
#define SP_ROUTE_SLOT_BITS 12
#define SP_ROUTE_SLOTS (1u << SP_ROUTE_SLOT_BITS)
#define SP_ROUTE_GENS 8
#define SP_ROUTE_NOT_CACHED 0x8000u

enum sp_dir {
	SP_DIR_IN2OUT = 0,
	SP_DIR_OUT2IN = 1,
};

enum sp_origin {
	SP_ORIGIN_SNAT = 0,     /* opened from inside through an SNAT rule */
	SP_ORIGIN_INBOUND = 1,  /* opened from outside on a mapping */
	SP_ORIGIN_DNAT = 2,     /* opened from outside through a DNAT rule */
	SP_ORIGIN_MAX = 3,
};

/* TCP state, as flags seen per direction (RFC 7857 sec. 2.2). */
#define SP_TCP_SYN_I2O 0x01
#define SP_TCP_SYN_O2I 0x02
#define SP_TCP_FIN_I2O 0x04
#define SP_TCP_FIN_O2I 0x08
#define SP_TCP_RST 0x10
#define SP_TCP_SEEN_I2O 0x20
#define SP_TCP_SEEN_O2I 0x40

/* A TCP session's phase as the sessions listing and the stream name it:
 * opening, established, closing (a FIN seen), reset. */
enum sp_tcp_phase {
	SP_TCP_OPENING = 0,
	SP_TCP_ESTABLISHED = 1,
	SP_TCP_CLOSING = 2,
	SP_TCP_RESET = 3,
	SP_TCP_PHASE_MAX = 4,
};

/* Session flags. */
#define SP_SESS_HAIRPIN 0x01    /* remote is a NAT-owned address */
/* Offload mode (docs/offload.md): the switch holds the session and forwards
 * its packets, so last_seen says nothing; it ages only once the switch has
 * reported it idle (SWITCH_IDLE) and swpath has seen nothing for its timeout
 * either, so it is never expired while the switch still forwards it. */
#define SP_SESS_OFFLOADED 0x02
#define SP_SESS_SWITCH_IDLE 0x04

struct sp_flow_key {
	sp_be32_t src;
	sp_be32_t dst;
	sp_be16_t sport;
	sp_be16_t dport;
	uint8_t proto;
	uint8_t pad[3];
};

/* One cache line. */
struct sp_session {
	sp_be32_t int_addr;     /* the inside host (DNAT: the server) */
	sp_be32_t ext_addr;     /* what the outside sees for it */
	sp_be32_t rem_addr;     /* the outside peer */
	sp_be16_t int_port;     /* ICMP: identifiers */
	sp_be16_t ext_port;
	sp_be16_t rem_port;     /* ICMP: the inside identifier (session.py) */
	uint8_t proto;          /* 0: free slot */
	uint8_t origin;
	uint8_t tcp;            /* SP_TCP_* */
	uint8_t flags;          /* SP_SESS_* */
	uint16_t route[2];      /* cached route per direction (above), or SP_ROUTE_UNSET */
	uint16_t neigh[2];      /* cached neighbour index, or SP_NEIGH_NONE */
	uint8_t pkts;           /* packets translated, up to the runtime's
				 * after_packets (core/runtime.h) */
	uint8_t lease;          /* learn mode: 1 + the switch's timeout class
				 * of the longest lease it was tagged with;
				 * 0: never tagged (core/learn.h) */
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

/* Which sessions a `sessions` command lists or deletes (as conntrack's
 * filters): every given field must match. */
struct sp_session_filter {
	uint8_t proto;          /* 0: any */
	bool has_src, has_dst, has_port, has_rule;
	uint32_t rule;          /* the rule that opened it (0: inbound) */
	uint32_t src;           /* the inside host (host order) */
	uint32_t dst;           /* the remote peer (host order) */
	uint16_t port;          /* the inside, external or remote port */
};

/* -- keys --------------------------------------------------------------------- */

/*
 * A flow key as two words: (src, dst) and (sport, dport, proto), the
 * padding left out. What the flow index hashes and compares.
 */
static inline uint64_t
sp_flow_words(sp_be32_t src, sp_be32_t dst, sp_be16_t sport, sp_be16_t dport,
	      uint8_t proto, uint64_t *w1)
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

/* -- TCP state and the timeout ------------------------------------------------ */

/* Updates the TCP state from a packet's flags in one direction. */
static inline void
sp_session_tcp_track(struct sp_session *s, unsigned dir, uint8_t tcp_flags)
{
	uint8_t t = s->tcp;

	t |= dir == SP_DIR_IN2OUT ? SP_TCP_SEEN_I2O : SP_TCP_SEEN_O2I;
	if (tcp_flags & TH_SYN)
		t |= dir == SP_DIR_IN2OUT ? SP_TCP_SYN_I2O : SP_TCP_SYN_O2I;
	if (tcp_flags & TH_FIN)
		t |= dir == SP_DIR_IN2OUT ? SP_TCP_FIN_I2O : SP_TCP_FIN_O2I;
	if (tcp_flags & TH_RST)
		t |= SP_TCP_RST;
	if (t != s->tcp)
		s->tcp = t;
}

/* Whether a TCP session is established (else transitory). */
static inline bool
sp_session_tcp_established(const struct sp_session *s)
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

static inline enum sp_tcp_phase
sp_session_tcp_phase(const struct sp_session *s)
{
	if (s->tcp & SP_TCP_RST)
		return SP_TCP_RESET;
	if (s->tcp & (SP_TCP_FIN_I2O | SP_TCP_FIN_O2I))
		return SP_TCP_CLOSING;
	return sp_session_tcp_established(s) ? SP_TCP_ESTABLISHED :
					       SP_TCP_OPENING;
}

/* The kind of idle timeout a session has now: protocol x TCP phase
 * (docs/nat-behavior.md sec. 9; RFC 4787 REQ-5, RFC 5382 REQ-5, RFC 5508
 * REQ-1). Also the kind a learn mode lease is configured by. */
static inline enum sp_timeout
sp_session_kind(const struct sp_session *s)
{
	switch (s->proto) {
	case IPPROTO_UDP:
		return SP_TO_UDP;
	case IPPROTO_ICMP:
		return SP_TO_ICMP;
	default:
		return sp_session_tcp_established(s) ? SP_TO_TCP_EST :
						       SP_TO_TCP_TRANS;
	}
}

/*
 * The idle timeout of a session now, in ms. The one place swpath decides
 * it: the timer wheel, the expiry check, the state file's successor and
 * the sessions listing all ask here.
 *
 * Learn mode (core/learn.h, docs/swpath.md "Learn mode"): a session whose
 * packets went to the switch with a learn tag gets the lease L of the
 * longest class it was tagged with on top of its kind's timeout T. The
 * switch's learned entries are leases of fixed length that a hit does not
 * extend (and DPDK's learner ends them early, never late), so an entry
 * learned at t is gone by t + L, and the flow's next packet comes back here
 * and is tagged again. Every tagged packet refreshes last_seen (a RST, which
 * does not, RFC 7857 sec. 2.2, is never tagged), so last_seen + L bounds
 * the last moment the switch can still translate with the session's port;
 * keeping the session T beyond that frees the port only once the switch no
 * longer uses it, and keeps the NAT's timeouts as minimums: the real idle
 * time before the port is freed is in (T, T + L].
 */
static inline uint32_t
sp_session_timeout_ms(const struct sp_runtime *rt, const struct sp_session *s)
{
	uint32_t t = rt->timeout_ms[sp_session_kind(s)];

	if (__builtin_expect(s->lease != 0, 0))
		t += rt->class_ms[s->lease - 1];
	return t;
}

/* -- readers ------------------------------------------------------------------ */

/* Whether session s (in use) is one the filter selects. */
static inline bool
sp_session_matches(const struct sp_session *s,
		   const struct sp_session_filter *f)
{
	if (f->proto != 0 && s->proto != f->proto)
		return false;
	if (f->has_src && be32toh(s->int_addr) != f->src)
		return false;
	if (f->has_dst && be32toh(s->rem_addr) != f->dst)
		return false;
	if (f->has_rule && s->rule_id != f->rule)
		return false;
	if (f->has_port) {
		uint16_t p = f->port;

		return be16toh(s->int_port) == p || be16toh(s->ext_port) == p ||
		       be16toh(s->rem_port) == p;
	}
	return true;
}

/*
 * The worker's side of a slot's sequence count: odd while it rewrites the
 * slot, so that a reader on another thread (sp_session_copy) never takes a
 * half-written session.
 */
static inline void
sp_session_seq_begin(struct sp_session *s)
{
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void
sp_session_seq_end(struct sp_session *s)
{
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
}

/* A consistent copy of a live session slot (read under its sequence
 * count, as the worker may rewrite it); false for a free or busy slot. */
static inline bool
sp_session_copy(const struct sp_session *s, struct sp_session *out)
{
	for (int attempt = 0; attempt < 4; attempt++) {
		uint32_t a = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);

		if (a & 1)
			continue;
		memcpy(out, s, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == a)
			return out->proto != 0;
	}
	return false;
}

/* The words of an origin and a TCP phase, as the sessions listing, the
 * stream and `session adopt` spell them. */
static inline const char *
sp_origin_name(unsigned origin)
{
	static const char *const names[SP_ORIGIN_MAX] = {
		"snat", "inbound", "dnat",
	};

	return origin < SP_ORIGIN_MAX ? names[origin] : "?";
}

static inline const char *
sp_tcp_phase_name(unsigned phase)
{
	/* the words offload mode reads an instance's phase by
	 * (controller/tests/test_timeouts.py holds them equal) */
	static const char *const sp_tcp_phase_names[] = {
		[SP_TCP_OPENING] = "opening", [SP_TCP_ESTABLISHED] = "established",
		[SP_TCP_CLOSING] = "closing", [SP_TCP_RESET] = "reset",
	};

	return phase < SP_TCP_PHASE_MAX ? sp_tcp_phase_names[phase] : "?";
}

#endif /* SP_SESSION_H */
