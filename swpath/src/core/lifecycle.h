/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A session's life on its worker: opened (both keys, the mapping's and the
 * host's counts, the wheel), its TCP phase, refreshed or rescheduled on the
 * timer wheel, closed by its idle timeout or an operator. The observer
 * (core/observer.h) hears each step.
 *
 * Aging is a hashed timer wheel with lazy rescheduling: a session sits in the
 * slot of its expiry as computed when it was (re)inserted; when the wheel
 * reaches the slot the real expiry (last_seen + sp_session_timeout_ms) is
 * checked, and a session that was refreshed meanwhile is reinserted further
 * on. The worker advances the wheel by a bounded number of entries per loop,
 * so the fast path only ever writes last_seen.
 *
 * Why not rte_timer, DPDK's own (make bench-timers, docs/benchmarks.md
 * "Timers"; 1M sessions, medians of 5 rounds): its timers sit in a
 * skiplist ordered by expiry, so arming is a search (192 ns against the
 * wheel's 70) and a refresh, rte_timer_reset, is two (take out, put back):
 * 4.4 us a packet at 1M timers, every level a cache miss through 120-byte
 * timers, against 12 ns for the last_seen store; a worker that must carry
 * 8 Mpps has 125 ns a packet in all. And it takes 122 heap bytes per
 * session (its struct rte_timer and its per-lcore lists), 122 MB for the
 * table whose sessions take 64 MB, where the wheel takes 8 bytes of the
 * session's own cache line and 32 KB of slots. rte_timer expires cheaper
 * (428 ns a session against 2.3 us): the wheel looks at a session again
 * every SP_WHEEL_RECHECK_MS, so that a timeout shortened at run time
 * applies within a minute, 59 looks per expiry on this mix of 2-hour TCP
 * sessions; at 1M sessions that is about 17k looks a second, under a
 * millisecond of CPU per second.
 */
#ifndef SP_LIFECYCLE_H
#define SP_LIFECYCLE_H

#include <stdint.h>

#include "core/table.h"

/* What a new session is: where it comes from and its three endpoints
 * (host order; ICMP: identifiers as ports). */
struct sp_session_spec {
	uint8_t proto;
	uint8_t origin;         /* SP_ORIGIN_* */
	uint32_t rule_id;       /* 0 for inbound sessions */
	uint32_t mapping;       /* SP_NONE for DNAT sessions */
	uint32_t int_addr, ext_addr, rem_addr;
	uint16_t int_port, ext_port, rem_port;
};

/*
 * Opens a session; the observer hears OPENED, and ANNOUNCED too when the
 * runtime's after_packets is 1. Returns SP_NAT_OK with *sidx, or a drop
 * counter (the table is full).
 */
int sp_session_open(struct sp_nat *nat, const struct sp_runtime *rt,
		    const struct sp_session_spec *spec, uint32_t now,
		    uint32_t *sidx);

/*
 * Links session idx, its fields set, into both keys of the flow index, its
 * mapping's and its host's counts, and the wheel (at last_seen + timeout);
 * takes it off the free list.
 */
void sp_session_link(struct sp_nat *nat, const struct sp_runtime *rt,
		     uint32_t idx);

/* After a segment changed s->tcp from `before`: SP_SESSION_STATE when the
 * phase changed. Not per packet: only on a change. */
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

/* Forgets a session, telling the observer why (SP_SESSION_EXPIRED or
 * SP_SESSION_DELETED); its mapping goes with its last session. */
void sp_nat_remove(struct sp_nat *nat, uint32_t sidx,
		   enum sp_session_event why, uint32_t now);

/*
 * Removes every session the filter selects (an operator's `sessions
 * delete|flush`, `reload --flush`), as expiry would: mapping events, ports
 * back to rest. In learn mode a session the switch learned (tagged: its
 * lease) is closed here at once, but the switch may translate with its
 * external port until its last tag + L: the port is held until then, never
 * handed out to another flow (core/allocator.h). Returns how many.
 */
uint32_t sp_nat_delete(struct sp_nat *nat, const struct sp_runtime *rt,
		       const struct sp_session_filter *f, uint32_t now);

#endif /* SP_LIFECYCLE_H */
