/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The route table's run-time changes (control/routes.c) as a session sees
 * them: a route cached as (slot, generation) (core/session.h) stays valid
 * exactly while the route it names is the one a lookup would give, however
 * many changes come while the session is idle. The generations are eight,
 * so they come round; these tests hold a session idle through more changes
 * than that and require its cache never to pass for valid again, until the
 * workers' timer wheels have looked at every session (which forgets a stale
 * cache: test_sp_nat.c test_stale_route_forgotten_by_the_wheel).
 *
 * The table runs as at run time (sp.running), with one worker whose timer
 * wheel the test moves by hand and an RCU no worker is online in (its grace
 * periods are over at once).
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "sp_test_util.h"

#include "control/cmd.h"
#include "control/routes.h"
#include "core/table.h"
#include "dataplane/sp.h"

static struct sp_worker worker;

static int
run(const char *line, char *err, size_t errlen)
{
	struct sp_cmd cmd;
	struct sp_buf out = { 0 };
	int rc;

	if (sp_cmd_parse(line, &cmd, err, errlen) != 0)
		fail_msg("'%s': %s", line, err);
	rc = cmd.verb == SP_CMD_ROUTE_DEL ?
		     sp_apply_route_del(&cmd, &out, err, errlen) :
		     sp_apply_route(&cmd, &out, err, errlen);
	sp_buf_free(&out);
	return rc;
}

static void
ok(const char *line)
{
	char err[256] = "";

	if (run(line, err, sizeof(err)) != 0)
		fail_msg("'%s': %s", line, err);
}

/* What a session caches for destination dst (host order), as
 * dataplane/fwd.h sp_session_route does. */
static uint16_t
cache(uint32_t dst)
{
	uint32_t nh;
	uint16_t slot = rte_lpm_lookup(sp.lpm, dst, &nh) == 0 ?
				(uint16_t)nh : sp.default_route;

	return (uint16_t)(slot | sp.route_gen[slot] << SP_ROUTE_SLOT_BITS);
}

/* Whether a session's cached route passes the per-packet check. */
static bool
valid(uint16_t c)
{
	return sp.route_gen[c & (SP_ROUTE_SLOTS - 1)] == c >> SP_ROUTE_SLOT_BITS;
}

/* A minute and a second pass (the clock sp_now_ms reads moves on), and
 * the worker's wheel keeps up: every session has been looked at since
 * any change made before. */
static void
wheel_past_now(void)
{
	sp.tsc0 -= (SP_WHEEL_RECHECK_MS + 1000) * sp.tsc_hz / 1000;
	worker.nat.wheel_time = sp_now_ms();
}

static int
setup(void **state)
{
	char err[256] = "";
	size_t sz;

	(void)state;
	if (sp_test_eal_init("test_sp_routes") < 0)
		return -1;
	sp.tsc_hz = rte_get_tsc_hz();
	sp.tsc0 = rte_rdtsc();
	sp.n_ifaces = 1;
	strcpy(sp.ifaces[0].name, "out0");
	sp.ifaces[0].has_addr = 1;
	sp.ifaces[0].addr = 0xc6336401; /* 198.51.100.1/24 */
	sp.ifaces[0].plen = 24;
	sp.ifaces[0].mtu = 1500;
	sz = rte_rcu_qsbr_get_memsize(1);
	sp.rcu = rte_zmalloc("sp_rcu", sz, RTE_CACHE_LINE_SIZE);
	if (sp.rcu == NULL || rte_rcu_qsbr_init(sp.rcu, 1) != 0)
		return -1;
	if (run("route 0.0.0.0/0 dev out0 via 198.51.100.254", err,
		sizeof(err)) != 0 ||
	    sp_routes_build(err, sizeof(err)) != 0) {
		fprintf(stderr, "setup: %s\n", err);
		return -1;
	}
	worker.nat.wheel_time = sp_now_ms();
	worker.nat.route_gen = sp.route_gen;    /* as control/setup.c does */
	sp.workers[0] = &worker;
	sp.n_workers = 1;
	sp.running = true;
	return 0;
}

/* Eight prefixes under the default route, none holding the session's
 * destination until the last: after each, the session's cache of the
 * default route no longer passes (it must look again, and find the eighth
 * prefix at the end). Stepping the default route's generation in place
 * would have brought it back to the cached one at the eighth. */
static void
test_narrowing_eight_times(void **state)
{
	const uint32_t dst = 0x08080808;
	uint16_t idle = cache(dst);
	char line[64];

	(void)state;
	assert_true(valid(idle));
	for (unsigned n = 0; n < 7; n++) {
		snprintf(line, sizeof(line), "route 203.0.113.%u/32 dev out0 via 198.51.100.253", n);
		ok(line);
		assert_false(valid(idle));
		/* a session of another destination under the default route
		 * looks again and finds the default route */
		assert_int_equal(sp.routes[cache(0x09090909) & 4095].prefix.len, 0);
	}
	ok("route 8.8.8.0/24 dev out0 via 198.51.100.253");
	assert_false(valid(idle));
	assert_int_equal(sp.routes[cache(dst) & 4095].prefix.len, 24);
	for (unsigned n = 0; n < 7; n++) {
		snprintf(line, sizeof(line), "route del 203.0.113.%u/32", n);
		ok(line);
	}
	ok("route del 8.8.8.0/24");
	assert_int_equal(sp.routes[cache(dst) & 4095].prefix.len, 0);
	wheel_past_now();
}

/* The default route replaced again and again while a session idles: its
 * cache never passes again, whichever slot the route takes, until the
 * wheel has looked at every session. Meanwhile a slot holds the route at
 * most seven times (it has then left every generation but its own, and
 * rests), so the table takes more slots; once the wheel has moved on,
 * the slots come round again. */
static void
test_replaced_more_times_than_generations(void **state)
{
	static unsigned held[SP_MAX_ROUTES];
	uint16_t idle = cache(0x08080808);
	unsigned slots_before = sp.n_routes, most = 0;

	(void)state;
	memset(held, 0, sizeof(held));
	for (unsigned n = 0; n < 300; n++) {
		ok(n % 2 ? "route 0.0.0.0/0 dev out0 via 198.51.100.254" :
			   "route 0.0.0.0/0 dev out0 via 198.51.100.253");
		assert_false(valid(idle));
		if (++held[sp.default_route] > most)
			most = held[sp.default_route];
	}
	assert_true(most <= SP_ROUTE_GENS - 1);
	assert_true(sp.n_routes > slots_before);
	wheel_past_now();
	slots_before = sp.n_routes;
	for (unsigned n = 0; n < 100; n++)
		ok(n % 2 ? "route 0.0.0.0/0 dev out0 via 198.51.100.254" :
			   "route 0.0.0.0/0 dev out0 via 198.51.100.253");
	assert_int_equal(sp.n_routes, slots_before);
}

/* When every slot rests, a change is refused with the reason and the
 * table keeps its routes; it is taken once the wheel has moved on, and
 * not before if that wheel does not forget stale caches. */
static void
test_every_slot_resting(void **state)
{
	char err[256] = "";
	unsigned changes = 0;
	uint32_t nh;

	(void)state;
	while (run(changes % 2 ? "route 0.0.0.0/0 dev out0 via 198.51.100.254" :
				 "route 0.0.0.0/0 dev out0 via 198.51.100.253",
		   err, sizeof(err)) == 0)
		assert_true(++changes < SP_MAX_ROUTES * SP_ROUTE_GENS);
	assert_non_null(strstr(err, "the route table is full"));
	assert_non_null(strstr(err, "for their timer wheels"));
	/* the default route and the connected network are still there */
	assert_true(sp.default_route != SP_ROUTE_NONE);
	assert_true(sp.routes[sp.default_route].live);
	assert_int_equal(rte_lpm_lookup(sp.lpm, 0xc6336405, &nh), 0);
	assert_true(sp.routes[nh].connected);
	/* a worker whose wheel was not given the generations forgets no
	 * cache: its wheel is never past, however far it has gone */
	worker.nat.route_gen = NULL;
	wheel_past_now();
	assert_int_not_equal(run("route 0.0.0.0/0 dev out0 via 198.51.100.254",
				 err, sizeof(err)), 0);
	worker.nat.route_gen = sp.route_gen;
	ok("route 0.0.0.0/0 dev out0 via 198.51.100.254");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_narrowing_eight_times),
		cmocka_unit_test(test_replaced_more_times_than_generations),
		cmocka_unit_test(test_every_slot_resting),
	};

	return SP_RUN_TESTS(tests, setup, NULL);
}
