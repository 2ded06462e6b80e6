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
 * "Timers"; 1M sessions, medians of 5 rounds, 2026-11-27): its timers sit
 * in a skiplist ordered by expiry, so arming is a search (169-174 ns
 * against the wheel's 63) and moving a timer, rte_timer_reset, is two
 * (take out, put back): about 4 us at 1M timers, every level a cache miss
 * through 120-byte timers. Reset on every packet that is 3.8 us a packet
 * against the wheel's 10 ns store, where a worker has 125 ns a packet in
 * all at 8 Mpps. Refreshed lazily, as the wheel is, a packet costs the same
 * store, but a FIN or RST still moves the timer (4 us against the wheel's
 * O(1) relink: 32 ns against 10 per packet on the bench's mix). And
 * rte_timer takes 122 heap bytes per session (its struct rte_timer and its
 * per-lcore lists): 122 MB beside the 64 MB of the sessions themselves,
 * where the wheel takes 8 bytes of the session's own cache line and 32 KB
 * of slots. Where rte_timer wins is expiry, 7.7x (278 ns a session, lazy,
 * against 1,987): the wheel looks at a session again every
 * SP_WHEEL_RECHECK_MS, so that a timeout shortened at run time applies
 * within a minute, 59 looks per expiry on a mix of 2-hour TCP sessions;
 * that is 1M sessions / 60 s, about 17k looks a second, under a millisecond
 * of CPU per second per worker.
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
