/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The C core's IPFIX-only events (core/observer.h), as the controller's
 * core tells them (controller/tests/test_nat_events.py): a session opened
 * and closed, with its remote, only while someone asks for sessions; a
 * pool address out of ports, and the whole pool, once per episode.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_test_util.h"

#include "core/lifecycle.h"
#include "core/nat.h"
#include "core/rule.h"
#include "dataplane/dispatch.h"
#include "dataplane/sp.h"
#include "qns.h"
#include "sp_core_util.h"

#define T0 1000u
#define POOL_A 0xcb007100u      /* 203.0.113.0/31, port 5000 only */
#define POOL_B 0xcb007101u
#define REMOTE 0x08080808u

static uint64_t counters[SP_CNT_MAX];
static struct sp_nat nat;
static struct sp_runtime *rt;
static struct sp_test_heard heard;
static uint32_t listening;

static int
setup_test(void **state)
{
	struct sp_prefix p = { .addr = POOL_A, .len = 31 };
	struct qns_rule r = {
		.id = 1, .prefix = 0x0a000000, .plen = 24, .kind = QNS_SNAT,
		.user = sp_act_snat(0),
	};
	struct sp_pool *pool;

	(void)state;
	memset(&sp, 0, sizeof(sp));
	memset(counters, 0, sizeof(counters));
	sp.n_workers = 1;
	sp_rss_init(&sp.rss, sp_rss_default_key, 128, 1);
	sp.qns = qns_create(NULL);
	pool = sp_test_pool("public", &p, 1, 5000, 5000, &sp.rss, 1);
	assert_non_null(pool);
	pool->index = 0;
	sp.pools[sp.n_pools++] = pool;
	assert_int_equal(qns_add(sp.qns, &r), 0);
	rt = calloc(1, sizeof(*rt));
	rt->timeout_ms[SP_TO_UDP] = 1000;
	for (unsigned i = 0; i < SP_PI_MAX; i++)
		rt->filtering[i] = SP_FILTER_ADDR;
	rt->reuse_ms = 120000;
	rt->after_packets = 1;
	memset(&heard, 0, sizeof(heard));
	if (sp_test_nat_init(&nat, 0, 1, 64, counters, T0, &heard) != 0)
		return -1;
	/* as persist/sink.c: mapping events always, sessions when asked */
	listening = SP_LISTEN_EVENTS;
	nat.obs.listening = &listening;
	nat.obs.events_when = SP_LISTEN_EVENTS;
	nat.obs.session_events_when = SP_LISTEN_IPFIX_SESSIONS;
	return 0;
}

static int
teardown_test(void **state)
{
	(void)state;
	sp_nat_free(&nat);
	sp_pool_free(sp.pools[0]);
	qns_free(sp.qns);
	free(rt);
	memset(&sp, 0, sizeof(sp));
	return 0;
}

static int
open_flow(uint32_t src, uint16_t sport, uint32_t now)
{
	struct sp_flow_key k = {
		.proto = IPPROTO_UDP, .src = rte_cpu_to_be_32(src),
		.dst = rte_cpu_to_be_32(REMOTE), .sport = rte_cpu_to_be_16(sport),
		.dport = rte_cpu_to_be_16(53),
	};
	uint32_t sidx;
	unsigned owner;

	return sp_nat_outbound(&nat, rt, &k, 0, now, 1, &sidx, &owner);
}

static unsigned
count(uint8_t type)
{
	unsigned n = 0;

	for (unsigned i = 0; i < heard.n_events; i++)
		n += heard.events[i].type == type;
	return n;
}

static void
test_sessions_only_when_asked(void **state)
{
	const struct sp_event *ev = NULL;

	(void)state;
	assert_int_equal(open_flow(0x0a000002, 4000, T0), SP_NAT_OK);
	assert_int_equal(count(SP_EVENT_SESSION_OPENED), 0);
	assert_int_equal(count(SP_EVENT_CREATED), 1);
	__atomic_store_n(&listening, SP_LISTEN_EVENTS | SP_LISTEN_IPFIX_SESSIONS,
			 __ATOMIC_RELAXED);
	assert_int_equal(open_flow(0x0a000003, 4000, T0), SP_NAT_OK);
	assert_int_equal(count(SP_EVENT_SESSION_OPENED), 1);
	for (unsigned i = 0; i < heard.n_events; i++)
		if (heard.events[i].type == SP_EVENT_SESSION_OPENED)
			ev = &heard.events[i];
	assert_non_null(ev);
	assert_int_equal(ev->int_addr, 0x0a000003);
	assert_int_equal(ev->int_port, 4000);
	assert_true(ev->ext_addr == POOL_A || ev->ext_addr == POOL_B);
	assert_int_equal(ev->ext_port, 5000);
	assert_int_equal(ev->rem_addr, REMOTE);
	assert_int_equal(ev->rem_port, 53);
	assert_int_equal(ev->proto, IPPROTO_UDP);
	/* both expire: each closing told (sessions still asked for) */
	while (sp_nat_age(&nat, rt, T0 + SP_WHEEL_RECHECK_MS + 5000, 100) > 0)
		;
	assert_int_equal(nat.n_sessions, 0);
	assert_int_equal(count(SP_EVENT_SESSION_CLOSED), 2);
	assert_int_equal(count(SP_EVENT_DELETED), 2);
}

static void
test_exhaustion_once_per_episode(void **state)
{
	const struct sp_event *ports, *pool;

	(void)state;
	/* paired pooling: one host on each address, each address's one port */
	assert_int_equal(open_flow(0x0a000002, 4000, T0), SP_NAT_OK);
	assert_int_equal(open_flow(0x0a000003, 4000, T0), SP_NAT_OK);
	for (int i = 0; i < 3; i++)     /* a flood: one event */
		assert_int_equal(open_flow(0x0a000002, 4002, T0),
				 SP_CNT_drop_pool_exhausted);
	assert_int_equal(count(SP_EVENT_PORTS_EXHAUSTED), 1);
	assert_int_equal(count(SP_EVENT_ADDRESSES_EXHAUSTED), 0);
	ports = &heard.events[heard.n_events - 1];
	assert_int_equal(ports->type, SP_EVENT_PORTS_EXHAUSTED);
	assert_int_equal(ports->int_addr, 1);          /* natPoolID */
	assert_int_equal(ports->proto, IPPROTO_UDP);
	assert_int_equal(open_flow(0x0a000003, 4002, T0),
			 SP_CNT_drop_pool_exhausted);
	assert_int_equal(count(SP_EVENT_PORTS_EXHAUSTED), 2);
	assert_int_equal(count(SP_EVENT_ADDRESSES_EXHAUSTED), 1);
	assert_int_not_equal(heard.events[heard.n_events - 2].ext_addr,
			     ports->ext_addr);
	pool = &heard.events[heard.n_events - 1];
	assert_int_equal(pool->type, SP_EVENT_ADDRESSES_EXHAUSTED);
	assert_int_equal(pool->int_addr, 1);
	assert_int_equal(pool->ext_addr, 0);
	/* every port released: the next refusal is a new episode */
	while (sp_nat_age(&nat, rt, T0 + SP_WHEEL_RECHECK_MS + 5000, 100) > 0)
		;
	assert_int_equal(open_flow(0x0a000004, 4000, T0 + SP_WHEEL_RECHECK_MS + 6000),
			 SP_NAT_OK);
	assert_int_equal(open_flow(0x0a000005, 4000, T0 + SP_WHEEL_RECHECK_MS + 6000),
			 SP_NAT_OK);
	assert_int_equal(open_flow(0x0a000004, 4002, T0 + SP_WHEEL_RECHECK_MS + 6000),
			 SP_CNT_drop_pool_exhausted);
	assert_int_equal(count(SP_EVENT_PORTS_EXHAUSTED), 3);
}

static int
setup(void **state)
{
	(void)state;
	return sp_test_eal_init("test_sp_ipfix_events") < 0 ? -1 : 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_test, teardown_test)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_sessions_only_when_asked),
		T(test_exhaustion_once_per_episode),
	};

	return SP_RUN_TESTS(tests, setup, NULL);
}
