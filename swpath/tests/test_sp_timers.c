/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The timer implementations bench_timers compares (swpath/bench/
 * timer_sides.h: swpath's wheel, rte_timer reset per packet, rte_timer
 * refreshed lazily) do the same work: on one
 * scripted workload, stepped a simulated second at a time, each expires
 * every session, none before its expiry (last packet + the timeout of its
 * kind and TCP phase: docs/nat-behavior.md TIME-1, TCP-1, TCP-2) and none
 * later than the next step. A checker that counts missing, early and late
 * expiries judges both, and is itself shown to catch each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <rte_cycles.h>

#include "sp_test_util.h"
#include "../bench/timer_sides.h"

#define N_SESSIONS 3000u
#define STEP_MS 1000u
#define PACKET_STEPS 400u       /* packets in the first 400 s */
#define N_SIDES 2               /* the wheel and one rte_timer kind */
#define TRIES 3                 /* rte_timer runs a machine may disturb */

/* Shorter than the defaults so the run is short; TCP established still
 * longer than the wheel's recheck (SP_WHEEL_RECHECK_MS), so it is redone. */
static struct sp_runtime rt = {
	.timeout_ms = {
		[SP_TO_UDP] = 120000,
		[SP_TO_TCP_EST] = 600000,
		[SP_TO_TCP_TRANS] = 240000,
		[SP_TO_ICMP] = 60000,
	},
};

struct script_session {
	uint8_t proto, tcp;
	uint32_t open_at;
	uint32_t due;           /* the expiry the script expects */
};

static struct script_session script[N_SESSIONS];
static uint32_t last_due;

static uint32_t
timeout_of(uint8_t proto, uint8_t tcp)
{
	struct sp_session s = { .proto = proto, .tcp = tcp };

	return sp_session_timeout_ms(&rt, &s);
}

static void
script_init(void)
{
	for (uint32_t i = 0; i < N_SESSIONS; i++) {
		struct script_session *s = &script[i];
		unsigned kind = i % 10;

		s->proto = kind < 4 ? IPPROTO_UDP : IPPROTO_TCP;
		s->tcp = kind < 4 ? 0 :
			 kind < 8 ? SP_TCP_SYN_I2O | SP_TCP_SYN_O2I |
				    SP_TCP_SEEN_I2O | SP_TCP_SEEN_O2I :
				    SP_TCP_SYN_I2O;
		s->open_at = (i % 60) * STEP_MS;
		s->due = s->open_at + timeout_of(s->proto, s->tcp);
	}
}

/* The step's packets, the same for both sides: a session is refreshed
 * only while it is well alive (two steps before its expiry), so a late
 * but correct expiry is never mistaken for a refresh. */
static void
run_packets(struct tm_side *sides[N_SIDES], uint32_t now, uint64_t *seed)
{
	for (unsigned j = 0; j < 40; j++) {
		uint32_t i = (uint32_t)(sp_test_rand(seed) % N_SESSIONS);
		struct script_session *s = &script[i];
		bool fin;

		if (s->open_at >= now || s->due < now + 2 * STEP_MS)
			continue;
		fin = (s->tcp & SP_TCP_SEEN_O2I) != 0 &&
		      sp_test_rand(seed) % 20 == 0;
		if (fin)
			s->tcp |= SP_TCP_FIN_I2O | SP_TCP_FIN_O2I;
		s->due = now + timeout_of(s->proto, s->tcp);
		for (unsigned k = 0; k < N_SIDES; k++)
			tm_packet(sides[k], i, now, fin);
	}
}

/* Runs the script on both sides in lockstep. */
static void
run_script(struct tm_side *sides[N_SIDES])
{
	uint64_t seed = 7;
	uint32_t now;

	script_init();
	last_due = 0;
	for (now = 0; now <= PACKET_STEPS * STEP_MS || now <= last_due + STEP_MS;
	     now += STEP_MS) {
		for (unsigned k = 0; k < N_SIDES; k++)
			tm_advance(sides[k], now);
		for (uint32_t i = now / STEP_MS; i < N_SESSIONS && now < 60000;
		     i += 60)
			for (unsigned k = 0; k < N_SIDES; k++)
				tm_open(sides[k], i, script[i].proto,
					script[i].tcp, now);
		if (now <= PACKET_STEPS * STEP_MS)
			run_packets(sides, now, &seed);
		for (uint32_t i = 0; i < N_SESSIONS; i++)
			if (script[i].due > last_due)
				last_due = script[i].due;
	}
}

struct verdict {
	uint32_t missing, early, late;
};

static struct verdict
judge(const struct tm_side *t)
{
	struct verdict v = { 0, 0, 0 };

	for (uint32_t i = 0; i < N_SESSIONS; i++) {
		uint32_t at = t->expired_at[i];

		if (at == TM_NOT_EXPIRED)
			v.missing++;
		else if (at < script[i].due)
			v.early++;
		else if (at > script[i].due + STEP_MS)
			v.late++;
	}
	return v;
}

/* The wheel and one rte_timer kind: never two rte_timer sides at once, as
 * rte_timer_manage runs every due timer of the lcore, the other side's
 * too, at this side's time. */
static void
sides_init(struct tm_side *wheel, struct tm_side *other, enum tm_kind kind)
{
	/* one simulated second = 1 ms of TSC */
	uint64_t tpm = rte_get_timer_hz() / 1000000 + 1;

	assert_int_equal(tm_side_init(wheel, TM_WHEEL, N_SESSIONS, &rt, 0, 0), 0);
	assert_int_equal(tm_side_init(other, kind, N_SESSIONS, &rt, tpm, 0), 0);
}

static void
same_expiries(enum tm_kind kind)
{
	struct tm_side wheel, other;
	struct tm_side *sides[N_SIDES] = { &wheel, &other };
	int tries = 0;

	sides_init(&wheel, &other, kind);
	run_script(sides);
	while (other.disturbed && ++tries < TRIES) {
		tm_side_free(&wheel);
		tm_side_free(&other);
		sides_init(&wheel, &other, kind);
		run_script(sides);
	}
	if (other.disturbed) {
		/* the machine stalled a step on every try (as under ASan): skip()
		 * leaves by longjmp, so the sides go first */
		tm_side_free(&wheel);
		tm_side_free(&other);
		skip();
	}
	assert_int_equal(other.late_arms, 0);  /* a late arm disturbs */
	for (unsigned k = 0; k < N_SIDES; k++) {
		struct verdict v = judge(sides[k]);

		assert_int_equal(sides[k]->n_expired, N_SESSIONS);
		assert_int_equal(v.missing, 0);
		assert_int_equal(v.early, 0);
		assert_int_equal(v.late, 0);
	}
	/* the lazy ones really rechecked: more looked at than expired */
	assert_true(wheel.examined > N_SESSIONS);
	if (kind == TM_RTE_LAZY)
		assert_true(other.examined > N_SESSIONS);
	else
		assert_int_equal(other.examined, N_SESSIONS);
	tm_side_free(&wheel);
	tm_side_free(&other);
}

static void
test_same_expiries(void **state)
{
	(void)state;
	same_expiries(TM_RTE_TIMER);
}

static void
test_same_expiries_lazy(void **state)
{
	(void)state;
	same_expiries(TM_RTE_LAZY);
}

/* The checker catches a side that expired fewer, early or late. */
static void
test_judge_catches(void **state)
{
	struct tm_side wheel, rte;
	struct tm_side *sides[N_SIDES] = { &wheel, &rte };
	struct verdict v;

	(void)state;
	sides_init(&wheel, &rte, TM_RTE_TIMER);
	run_script(sides);
	wheel.expired_at[1] = TM_NOT_EXPIRED;
	wheel.expired_at[2] = script[2].due - 1;
	wheel.expired_at[3] = script[3].due + STEP_MS + 1;
	v = judge(&wheel);
	assert_int_equal(v.missing, 1);
	assert_int_equal(v.early, 1);
	assert_int_equal(v.late, 1);
	tm_side_free(&wheel);
	tm_side_free(&rte);
}

/* A side whose timeouts are a second short is caught early. */
static void
test_short_timeout_caught(void **state)
{
	static struct sp_runtime short_rt;
	struct tm_side wheel, rte;
	struct tm_side *sides[N_SIDES] = { &wheel, &rte };

	(void)state;
	short_rt = rt;
	short_rt.timeout_ms[SP_TO_UDP] -= 2 * STEP_MS;
	sides_init(&wheel, &rte, TM_RTE_TIMER);
	wheel.rt = &short_rt;
	run_script(sides);
	assert_true(judge(&wheel).early > 0);
	tm_side_free(&wheel);
	tm_side_free(&rte);
}

/* A thread stalled past a step's margin arms a timer after its tick: the
 * side says it was disturbed (same_expiries then runs again rather than
 * judging an order the TSC no longer holds; the CI's busy machine did so). */
static void
test_stall_is_disturbed(void **state)
{
	struct tm_side rte;
	uint64_t hz = rte_get_timer_hz();

	(void)state;
	assert_int_equal(tm_side_init(&rte, TM_RTE_TIMER, 2, &rt,
				      hz / 1000000 + 1, 0), 0);
	tm_open(&rte, 0, IPPROTO_UDP, 0, 0);
	assert_false(rte.disturbed);
	/* a UDP timer is due 120 simulated s = 120 ms of TSC after open */
	rte_delay_us_block(150 * 1000);
	tm_open(&rte, 1, IPPROTO_UDP, 0, 0);
	assert_int_equal(rte.late_arms, 1);
	assert_true(rte.disturbed);
	tm_side_free(&rte);
}

static int
setup(void **state)
{
	(void)state;
	if (sp_test_eal_init("test_sp_timers") < 0)
		return -1;
	return rte_timer_subsystem_init() == 0 ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	rte_timer_subsystem_finalize();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_expiries),
		cmocka_unit_test(test_same_expiries_lazy),
		cmocka_unit_test(test_judge_catches),
		cmocka_unit_test(test_short_timeout_caught),
		cmocka_unit_test(test_stall_is_disturbed),
	};

	return SP_RUN_TESTS(tests, setup, teardown);
}
