/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Session timers on two implementations, behind one set of verbs, so that
 * bench_timers.c measures both on the same workload and test_sp_timers.c
 * checks that they expire the same sessions at the same times:
 *
 * - TM_WHEEL: swpath's timer wheel as its worker uses it (core/table.h's
 *   sp_wheel_insert and sp_wheel_pop_due, core/lifecycle.h's
 *   sp_nat_reschedule): armed when the session opens, refreshed lazily (a
 *   packet writes last_seen; the wheel moves the session when it reaches
 *   its slot), rescheduled at once on a FIN, advanced SP_AGE_BUDGET
 *   sessions at a time as the worker's loop does.
 * - TM_RTE_TIMER: DPDK's rte_timer, one struct rte_timer per session,
 *   armed with rte_timer_reset when the session opens and reset on every
 *   packet (its expiry is last_seen + timeout), expired by
 *   rte_timer_manage.
 * - TM_RTE_LAZY: rte_timer refreshed as the wheel is: a packet writes
 *   last_seen (a FIN resets the timer), and a timer that fires for a
 *   session refreshed since re-arms itself for its real expiry.
 *
 * Both read a session's timeout from the same place, sp_session_timeout_ms
 * (the session's protocol and TCP phase, the runtime's timeouts).
 *
 * Time is simulated (ms), so that the spec's timeouts (UDP 300 s, TCP 2 h
 * established, 240 s transitory: docs/nat-behavior.md sec. 9) need not be
 * waited for. The wheel takes any clock; rte_timer has none to inject: it
 * compares each timer's expiry (TSC ticks) with rte_get_timer_cycles() in
 * rte_timer_manage. So simulated time t maps onto the TSC as
 * base + t * ticks_per_ms, with base lead_ticks after tm_side_init: a timer
 * is armed for the tick of its simulated expiry (rte_timer_reset takes
 * ticks from now; the ticks to that tick are computed just before), and
 * tm_advance(t) waits until the TSC has passed t's tick (plus half a
 * simulated second, for the arming's few ticks of lag) before it calls
 * rte_timer_manage. Expiries keep their simulated order in the skiplist as
 * long as every timer is armed before its tick passes (late_arms counts
 * those that were not).
 *
 * The mapping holds only while the caller's steps keep up with it. When a
 * step's work takes longer than its share of real time, the TSC runs ahead
 * of the steps and a timer fires at the first rte_timer_manage after its
 * tick, whatever the step: TM_RTE_TIMER still fires each timer once (in
 * fewer, bigger calls), but a TM_RTE_LAZY timer re-armed behind the clock
 * fires again at every step until the steps catch up. bench_timers' 1M
 * sessions at 10,000 simulated seconds a real second run ahead so; it sets
 * follow_tsc, which makes a step's now the clock's when that is later, so
 * a lazy timer is judged at the time it fired. test_sp_timers (3,000
 * sessions, a simulated second a real ms) keeps up and steps exactly.
 */
#ifndef TIMER_SIDES_H
#define TIMER_SIDES_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_timer.h>

#include "core/table.h"

#define TM_NOT_EXPIRED UINT32_MAX
/* rte_timer: how far past t's tick tm_advance(t) waits (simulated ms) */
#define TM_RTE_MARGIN_MS 500u

enum tm_kind {
	TM_WHEEL = 0,
	TM_RTE_TIMER = 1,
	TM_RTE_LAZY = 2,
};

struct tm_side {
	enum tm_kind kind;
	uint32_t n;
	const struct sp_runtime *rt;
	struct sp_session *sessions;    /* [n]: proto, tcp, last_seen read */
	uint32_t *expired_at;           /* [n]: simulated ms, or TM_NOT_EXPIRED */
	uint32_t n_expired;
	uint64_t examined;              /* sessions looked at while expiring */
	uint64_t heap_bytes;            /* DPDK heap the timers took (measured) */
	/* TM_WHEEL: the wheel's fields of struct sp_nat; sessions aliased */
	struct sp_nat nat;
	/* TM_RTE_TIMER, TM_RTE_LAZY */
	struct rte_timer *timers;       /* [n] */
	uint64_t tsc_base;              /* the tick of simulated time 0 */
	uint64_t ticks_per_ms;
	uint32_t now;                   /* simulated ms of tm_advance */
	uint64_t late_arms;             /* armed after their tick had passed */
	bool disturbed;                 /* a timer fired past now's margin,
					 * or was armed late: the thread stalled */
	/* the rte_timer kinds: a step's now is the TSC's simulated time when
	 * that is later (bench_timers, whose steps fall behind the clock) */
	bool follow_tsc;
};

/*
 * Allocates the timers of sessions 0..n-1 (and the sessions) on the DPDK
 * heap; heap_bytes is what the timers took, measured with
 * rte_malloc_get_socket_stats. The rte_timer kinds need rte_timer_subsystem_init
 * first. Returns 0 or -ENOMEM.
 */
int tm_side_init(struct tm_side *t, enum tm_kind kind, uint32_t n,
		 const struct sp_runtime *rt, uint64_t ticks_per_ms,
		 uint64_t lead_ticks);
void tm_side_free(struct tm_side *t);

/* Session sidx opens at now: its timer armed for now + its timeout. */
void tm_open(struct tm_side *t, uint32_t sidx, uint8_t proto, uint8_t tcp,
	     uint32_t now);

/* A packet of session sidx at now: refreshed; fin: it closes (TCP: a FIN
 * both ways, the transitory timeout from now on). */
void tm_packet(struct tm_side *t, uint32_t sidx, uint32_t now, bool fin);

/* rte_timer: waits until the TSC has passed now's tick (and the margin),
 * as tm_advance does first; the wheel: nothing to wait for. */
void tm_wait_until(struct tm_side *t, uint32_t now);

/* Time is now: every due session expires (expired_at = now). Returns how
 * many did. */
uint32_t tm_advance(struct tm_side *t, uint32_t now);

/* The heap bytes in use on the caller's socket (rte_malloc stats). */
uint64_t tm_heap_in_use(void);

#endif /* TIMER_SIDES_H */
