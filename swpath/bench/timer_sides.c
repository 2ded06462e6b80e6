/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Session timers on swpath's wheel and on rte_timer (timer_sides.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include "core/lifecycle.h"
#include "dataplane/sp.h"
#include "timer_sides.h"

uint64_t
tm_heap_in_use(void)
{
	struct rte_malloc_socket_stats st;

	if (rte_malloc_get_socket_stats((int)rte_socket_id(), &st) < 0)
		return 0;
	return st.heap_allocsz_bytes;
}

static void
record_expiry(struct tm_side *t, uint32_t sidx)
{
	t->expired_at[sidx] = t->now;
	t->n_expired++;
}

static int
wheel_init(struct tm_side *t)
{
	uint64_t before = tm_heap_in_use();

	t->nat.sessions = t->sessions;
	t->nat.max_sessions = t->n;
	t->nat.wheel = rte_malloc("tm_wheel", SP_WHEEL_SLOTS * sizeof(uint32_t),
				  RTE_CACHE_LINE_SIZE);
	if (t->nat.wheel == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < SP_WHEEL_SLOTS; i++)
		t->nat.wheel[i] = SP_NONE;
	t->nat.wheel_cursor = 0;
	t->nat.wheel_time = 0;
	t->heap_bytes = tm_heap_in_use() - before;
	return 0;
}

static int
rte_side_init(struct tm_side *t, uint64_t ticks_per_ms, uint64_t lead_ticks)
{
	uint64_t before = tm_heap_in_use();

	t->timers = rte_zmalloc("tm_rte_timers",
				(size_t)t->n * sizeof(struct rte_timer),
				RTE_CACHE_LINE_SIZE);
	if (t->timers == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->n; i++)
		rte_timer_init(&t->timers[i]);
	t->heap_bytes = tm_heap_in_use() - before;
	t->ticks_per_ms = ticks_per_ms;
	t->tsc_base = rte_get_timer_cycles() + lead_ticks;
	return 0;
}

int
tm_side_init(struct tm_side *t, enum tm_kind kind, uint32_t n,
	     const struct sp_runtime *rt, uint64_t ticks_per_ms,
	     uint64_t lead_ticks)
{
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->n = n;
	t->rt = rt;
	t->sessions = rte_zmalloc("tm_sessions",
				  (size_t)n * sizeof(struct sp_session),
				  RTE_CACHE_LINE_SIZE);
	t->expired_at = malloc((size_t)n * sizeof(uint32_t));
	if (t->sessions == NULL || t->expired_at == NULL)
		goto nomem;
	for (uint32_t i = 0; i < n; i++)
		t->expired_at[i] = TM_NOT_EXPIRED;
	if ((kind == TM_WHEEL ? wheel_init(t) :
	     rte_side_init(t, ticks_per_ms, lead_ticks)) == 0)
		return 0;
nomem:
	tm_side_free(t);
	return -ENOMEM;
}

void
tm_side_free(struct tm_side *t)
{
	if (t->timers != NULL) {
		for (uint32_t i = 0; i < t->n; i++)
			rte_timer_stop(&t->timers[i]);
		rte_free(t->timers);
	}
	rte_free(t->nat.wheel);
	rte_free(t->sessions);
	free(t->expired_at);
	memset(t, 0, sizeof(*t));
}

/* -- rte_timer --------------------------------------------------------------- */

static void rte_arm(struct tm_side *t, uint32_t sidx);

static void
rte_expired(struct rte_timer *tim, void *arg)
{
	struct tm_side *t = arg;
	uint32_t sidx = (uint32_t)(tim - t->timers);
	const struct sp_session *s = &t->sessions[sidx];

	t->examined++;
	/* lazy: refreshed since it was armed; re-armed from its own callback,
	 * which rte_timer allows on the lcore that runs it */
	if (t->kind == TM_RTE_LAZY &&
	    (int32_t)(t->now - (s->last_seen +
				sp_session_timeout_ms(t->rt, s))) < 0) {
		rte_arm(t, sidx);
		return;
	}
	/* due after now's tick and its margin: rte_timer_manage read the TSC
	 * late (the machine stalled this thread), so now is not when it was
	 * due; the arming's lag is far below the margin */
	if (tim->expire > t->tsc_base + (uint64_t)(t->now + TM_RTE_MARGIN_MS) *
				  t->ticks_per_ms)
		t->disturbed = true;
	record_expiry(t, sidx);
}

/* rte_timer_reset's ticks (from now) to the tick of simulated time `at`. */
static uint64_t
ticks_to(struct tm_side *t, uint32_t at)
{
	uint64_t target = t->tsc_base + (uint64_t)at * t->ticks_per_ms;
	uint64_t cur = rte_get_timer_cycles();

	if (target <= cur) {
		/* but a lazy re-arm due within now's margin fires next step,
		 * after its time, as it should */
		if ((int32_t)(at - (t->now + TM_RTE_MARGIN_MS)) > 0) {
			/* only possible when the step's work overran now's
			 * margin of real time: the thread was stalled (a busy
			 * machine), so the timer's place in the skiplist no
			 * longer says its simulated order */
			t->late_arms++;
			t->disturbed = true;
		}
		return 0;
	}
	return target - cur;
}

static void
rte_arm(struct tm_side *t, uint32_t sidx)
{
	const struct sp_session *s = &t->sessions[sidx];
	uint32_t expiry = s->last_seen + sp_session_timeout_ms(t->rt, s);

	/* one lcore: the timer is never running elsewhere, so it cannot fail */
	if (rte_timer_reset(&t->timers[sidx], ticks_to(t, expiry), SINGLE,
			    rte_lcore_id(), rte_expired, t) != 0)
		abort();
}

void
tm_wait_until(struct tm_side *t, uint32_t now)
{
	uint64_t due = t->tsc_base +
		       (uint64_t)(now + TM_RTE_MARGIN_MS) * t->ticks_per_ms;

	if (t->kind == TM_WHEEL)
		return;
	while (rte_get_timer_cycles() < due)
		rte_pause();
}

static uint32_t
rte_advance(struct tm_side *t, uint32_t now)
{
	uint32_t before = t->n_expired;

	t->now = now;
	tm_wait_until(t, now);
	if (t->follow_tsc) {
		uint64_t ms = (rte_get_timer_cycles() - t->tsc_base) /
			      t->ticks_per_ms;

		if ((int64_t)ms - TM_RTE_MARGIN_MS > (int64_t)now)
			t->now = (uint32_t)ms - TM_RTE_MARGIN_MS;
	}
	rte_timer_manage();
	return t->n_expired - before;
}

/* -- the wheel ------------------------------------------------------------------ */

/* As the worker's loop calls sp_nat_age: SP_AGE_BUDGET at a time. */
static uint32_t
wheel_advance(struct tm_side *t, uint32_t now)
{
	uint32_t before = t->n_expired;

	t->now = now;
	for (;;) {
		unsigned budget = SP_AGE_BUDGET, steps = 0;
		uint32_t sidx;

		while ((sidx = sp_wheel_pop_due(&t->nat, t->rt, now, &budget,
						&steps)) != SP_NONE)
			record_expiry(t, sidx);
		t->examined += SP_AGE_BUDGET - budget;
		if (budget > 0 && steps < SP_WHEEL_SLOTS)
			break;  /* caught up with now */
	}
	return t->n_expired - before;
}

/* -- the verbs ------------------------------------------------------------------ */

void
tm_open(struct tm_side *t, uint32_t sidx, uint8_t proto, uint8_t tcp,
	uint32_t now)
{
	struct sp_session *s = &t->sessions[sidx];

	s->proto = proto;
	s->tcp = tcp;
	s->last_seen = now;
	if (t->kind == TM_WHEEL)
		sp_wheel_insert(&t->nat, sidx,
				now + sp_session_timeout_ms(t->rt, s));
	else
		rte_arm(t, sidx);
}

void
tm_packet(struct tm_side *t, uint32_t sidx, uint32_t now, bool fin)
{
	struct sp_session *s = &t->sessions[sidx];

	/* what the fast path writes (dataplane/fastpath.c) */
	s->last_seen = now;
	if (fin)
		s->tcp |= SP_TCP_FIN_I2O | SP_TCP_FIN_O2I;
	if (t->kind == TM_RTE_TIMER || (t->kind == TM_RTE_LAZY && fin))
		rte_arm(t, sidx);
	else if (t->kind == TM_WHEEL && fin)
		sp_nat_reschedule(&t->nat, t->rt, sidx);
}

uint32_t
tm_advance(struct tm_side *t, uint32_t now)
{
	return t->kind == TM_WHEEL ? wheel_advance(t, now) :
				     rte_advance(t, now);
}
