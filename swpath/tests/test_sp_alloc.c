/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allocator (swpath/src/allocator.c) against the behaviour of
 * controller/quicknat/nat/allocator.py: paired pooling, per-protocol port
 * spaces, no port handed out twice, quota, exhaustion, the 120 s rest of a
 * released port and the longest-rested fallback, random start, parity,
 * port preservation (and its fallback on a port another worker owns), and
 * the well-known port class kept apart.
 */
#include <errno.h>
#include <string.h>

#include "sp_test_util.h"

#include <rte_memory.h>
#include <rte_random.h>

#include "allocator.h"
#include "rss.h"

#define REUSE_MS 120000u

static struct sp_rss rss;

struct fixture {
	struct sp_pool *pool;
	struct sp_alloc_ctx ctx;
};

/* A copy of the running test's fixture, freed by the teardown even when an
 * assertion ends the test early. A copy, not a pointer: a failed assertion
 * leaves the test's stack frame, and the fixture on it, behind. */
static struct fixture live;
static int is_live;

static int
teardown(void **state)
{
	(void)state;
	if (is_live) {
		sp_alloc_ctx_free(&live.ctx);
		sp_pool_free(live.pool);
		is_live = 0;
	}
	return 0;
}

/* A pool for n_workers workers (with its default policy), allocating as
 * worker 0. */
static struct fixture
make_workers(uint32_t addr, uint8_t len, uint16_t lo, uint16_t hi,
	     unsigned n_workers)
{
	struct sp_prefix p = { .addr = addr, .len = len };
	struct fixture f;
	char err[256];

	sp_rss_init(&rss, sp_rss_default_key, 128, n_workers);
	f.pool = sp_pool_create("p", &p, 1, lo, hi, &rss, n_workers, err,
				sizeof(err));
	assert_non_null(f.pool);
	assert_int_equal(sp_alloc_ctx_init(&f.ctx, 0, 4096, SOCKET_ID_ANY), 0);
	live = f;
	is_live = 1;
	return f;
}

static struct fixture
make(uint32_t addr, uint8_t len, uint16_t lo, uint16_t hi)
{
	return make_workers(addr, len, lo, hi, 1);
}

static void
destroy(struct fixture *f)
{
	(void)f;
	teardown(NULL);
}

/* sp_pool_allocate's result for (host, port), no quota. */
static int
alloc(struct fixture *f, unsigned pi, uint32_t host, uint16_t port,
      uint32_t now, struct sp_alloc *a)
{
	struct sp_alloc_req req = {
		.int_addr = host, .int_port = port, .pi = (uint8_t)pi,
		.now_ms = now, .reuse_ms = REUSE_MS,
	};

	return sp_pool_allocate(f->pool, &f->ctx, &req, a);
}

static struct sp_alloc
alloc_ok(struct fixture *f, unsigned pi, uint32_t host, uint16_t port,
	 uint32_t now)
{
	struct sp_alloc a;

	assert_int_equal(alloc(f, pi, host, port, now, &a), 0);
	return a;
}

static void
alloc_fails(struct fixture *f, unsigned pi, uint32_t host, uint16_t port,
	    uint32_t now)
{
	struct sp_alloc a;

	assert_int_equal(alloc(f, pi, host, port, now, &a), -ENOSPC);
}

static int
quota_alloc(struct fixture *f, unsigned pi, uint32_t host, uint32_t quota,
	    uint32_t now, struct sp_alloc *a)
{
	struct sp_alloc_req req = {
		.int_addr = host, .int_port = 40000, .pi = (uint8_t)pi,
		.quota = quota, .now_ms = now, .reuse_ms = REUSE_MS,
	};

	return sp_pool_allocate(f->pool, &f->ctx, &req, a);
}

static void
test_paired_pooling(void **state)
{
	struct fixture f = make(0xcb007100, 30, 1024, 65535); /* 4 addresses */
	uint32_t first;

	(void)state;
	/* a new host takes candidates[host % n] among the least loaded */
	first = alloc_ok(&f, SP_PI_UDP, 0x0a000006, 5000, 1).addr;
	assert_int_equal(first, 0xcb007100 + 6 % 4);
	/* all its ports, any protocol, stay on that address */
	for (unsigned i = 0; i < 50; i++)
		assert_int_equal(alloc_ok(&f, i % SP_PI_MAX, 0x0a000006,
					  (uint16_t)(5001 + i), 1).addr, first);
	/* the next host goes to a less loaded address: .0, .1 or .3, and
	 * 0x0a000007 % 3 = 2 picks the third of them */
	assert_int_equal(0x0a000007u % 3, 2);
	assert_int_equal(alloc_ok(&f, SP_PI_TCP, 0x0a000007, 5000, 1).addr,
			 0xcb007100 + 3);
	assert_int_equal(sp_pool_ports_held(&f.ctx, f.pool->index, 0x0a000006), 51);
	destroy(&f);
}

static void
test_no_port_twice(void **state)
{
	struct fixture f = make(0xcb007101, 32, 2000, 2099);
	static uint8_t used[SP_PI_MAX][65536];
	struct sp_alloc a;

	(void)state;
	memset(used, 0, sizeof(used));
	for (unsigned pi = 0; pi < SP_PI_MAX; pi++) {
		for (unsigned i = 0; i < 100; i++) {
			a = alloc_ok(&f, pi, 0x0a000000 + i, (uint16_t)(10000 + i), 1);
			assert_true(a.port >= 2000 && a.port <= 2099);
			assert_int_equal(used[pi][a.port], 0);
			used[pi][a.port] = 1;
		}
		/* 100 ports, 100 endpoints: the next new flow fails */
		alloc_fails(&f, pi, 0x0a0000ff, 10000, 1);
		alloc_fails(&f, pi, 0x0a0000ff, 10001, 1);
	}
	destroy(&f);
}

static void
test_quota(void **state)
{
	struct fixture f = make(0xcb007101, 32, 1024, 65535);
	struct sp_alloc a[3], b;

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(quota_alloc(&f, SP_PI_TCP, 7, 3, 1, &a[i]), 0);
	assert_int_equal(quota_alloc(&f, SP_PI_UDP, 7, 3, 1, &b), -EDQUOT);
	/* another host is not affected */
	assert_int_equal(quota_alloc(&f, SP_PI_UDP, 8, 3, 1, &b), 0);
	sp_pool_release(f.pool, &f.ctx, SP_PI_TCP, 7, &a[0], 2);
	assert_int_equal(quota_alloc(&f, SP_PI_UDP, 7, 3, 2, &b), 0);
	destroy(&f);
}

static void
test_release_unbinds(void **state)
{
	struct fixture f = make(0xcb007100, 31, 1024, 65535); /* 2 addresses */
	struct sp_alloc a, b;

	(void)state;
	a = alloc_ok(&f, SP_PI_TCP, 10, 5000, 1);       /* 10 % 2 = 0 */
	assert_int_equal(a.addr, 0xcb007100);
	assert_int_equal(f.pool->space[0].hosts, 1);
	b = alloc_ok(&f, SP_PI_TCP, 12, 5000, 1);       /* least loaded: .1 */
	assert_int_equal(b.addr, 0xcb007101);
	sp_pool_release(f.pool, &f.ctx, SP_PI_TCP, 10, &a, 5);
	assert_int_equal(sp_pool_ports_held(&f.ctx, f.pool->index, 10), 0);
	assert_int_equal(f.pool->space[0].hosts, 0);
	/* host 10 is unbound: it takes the least loaded address again */
	a = alloc_ok(&f, SP_PI_TCP, 10, 5000, 6);
	assert_int_equal(a.addr, 0xcb007100);
	destroy(&f);
}

static void
test_reuse_delay(void **state)
{
	struct fixture f = make(0xcb007101, 32, 2000, 2009);
	struct sp_alloc a[10], b;
	uint8_t seen[2010] = { 0 };

	(void)state;
	/* the rest, not parity: any port fits any flow */
	f.pool->policy.preserve_parity = false;
	for (unsigned i = 0; i < 5; i++)
		a[i] = alloc_ok(&f, SP_PI_UDP, 100 + i, 40000, 1000);
	/* released at different times: a[0] rests longest */
	for (unsigned i = 0; i < 5; i++) {
		seen[a[i].port] = 1;
		sp_pool_release(f.pool, &f.ctx, SP_PI_UDP, 100 + i, &a[i],
				2000 + i * 10);
	}
	/* while never-used ports are free, resting ones are not handed out */
	for (unsigned i = 5; i < 10; i++) {
		a[i] = alloc_ok(&f, SP_PI_UDP, 100 + i, 40000, 3000);
		assert_int_equal(seen[a[i].port], 0);
		seen[a[i].port] = 2;
	}
	/* only resting ports are left: the longest-rested one is reused */
	b = alloc_ok(&f, SP_PI_UDP, 200, 40000, 4000);
	assert_int_equal(b.port, a[0].port);
	b = alloc_ok(&f, SP_PI_UDP, 201, 40000, 4000);
	assert_int_equal(b.port, a[1].port);
	/* after 120 s a released port is free like any other: a[2..4] are,
	 * a[5] (released later) still rests */
	sp_pool_release(f.pool, &f.ctx, SP_PI_UDP, 105, &a[5], 5000);
	for (unsigned i = 0; i < 3; i++) {
		b = alloc_ok(&f, SP_PI_UDP, 300 + i, 40000, 5000 + REUSE_MS - 1);
		assert_true(b.port == a[2].port || b.port == a[3].port ||
			    b.port == a[4].port);
	}
	b = alloc_ok(&f, SP_PI_UDP, 310, 40000, 5000 + REUSE_MS - 1);
	assert_int_equal(b.port, a[5].port);
	alloc_fails(&f, SP_PI_UDP, 311, 40000, 5000 + REUSE_MS);
	destroy(&f);
}

static void
test_random_start(void **state)
{
	struct fixture f = make(0xcb007101, 32, 1024, 65535);
	unsigned low = 0, adjacent = 0;
	uint16_t prev = 0;

	(void)state;
	rte_srand(42);
	for (unsigned i = 0; i < 200; i++) {
		struct sp_alloc a = alloc_ok(&f, SP_PI_TCP, 5000 + i,
					     (uint16_t)(5000 + i), 1);

		low += a.port < 1024 + 200;
		adjacent += a.port == prev + 1;
		prev = a.port;
	}
	/* RFC 6056 algorithm 1: not handed out from the bottom, in order */
	assert_true(low < 10);
	assert_true(adjacent < 10);
	destroy(&f);
}

static void
test_parity_kept(void **state)
{
	struct fixture f = make(0xcb007101, 32, 1024, 65535);
	unsigned evens = 0;

	(void)state;
	rte_srand(7);
	/* RFC 4787 REQ-4 is the default: thousands of flows, any parity mix */
	for (unsigned i = 0; i < 5000; i++) {
		uint16_t port = (uint16_t)(1024 + rte_rand_max(64512));
		struct sp_alloc a = alloc_ok(&f, i % SP_PI_MAX, 0x0a000001, port, 1);

		assert_int_equal(a.port & 1, port & 1);
		evens += !(port & 1);
	}
	assert_true(evens > 2000 && evens < 3000);
	destroy(&f);
}

static void
test_parity_class_full(void **state)
{
	struct fixture f = make(0xcb007101, 32, 2000, 2009);
	uint8_t seen[2010] = { 0 };

	(void)state;
	for (unsigned i = 0; i < 5; i++) {
		struct sp_alloc a = alloc_ok(&f, SP_PI_UDP, 9, (uint16_t)(6000 + 2 * i), 1);

		assert_int_equal(a.port & 1, 0);
		assert_int_equal(seen[a.port], 0);
		seen[a.port] = 1;
	}
	/* every even port is taken: an even flow fails though odd ones are free */
	alloc_fails(&f, SP_PI_UDP, 9, 7000, 1);
	assert_int_equal(alloc_ok(&f, SP_PI_UDP, 9, 7001, 1).port & 1, 1);
	destroy(&f);
}

static void
test_parity_off(void **state)
{
	struct fixture f = make(0xcb007101, 32, 2000, 2001);
	struct sp_alloc a, b;

	(void)state;
	f.pool->policy.preserve_parity = false;
	a = alloc_ok(&f, SP_PI_UDP, 9, 6000, 1);
	b = alloc_ok(&f, SP_PI_UDP, 9, 6002, 1);
	assert_int_equal(a.port + b.port, 2000 + 2001);
	destroy(&f);
}

static void
test_port_preserved(void **state)
{
	struct fixture f = make(0xcb007101, 32, 1024, 65535);
	struct sp_alloc a, b;

	(void)state;
	f.pool->policy.preserve_port = true;
	a = alloc_ok(&f, SP_PI_UDP, 1, 5060, 1);
	assert_int_equal(a.port, 5060);
	/* taken: another endpoint gets a random port, of its parity (REQ-3) */
	b = alloc_ok(&f, SP_PI_UDP, 2, 5060, 1);
	assert_int_not_equal(b.port, 5060);
	assert_int_equal(b.port & 1, 0);
	/* each protocol has its own ports */
	assert_int_equal(alloc_ok(&f, SP_PI_TCP, 2, 5060, 1).port, 5060);
	/* released, it rests before it is preserved again */
	sp_pool_release(f.pool, &f.ctx, SP_PI_UDP, 1, &a, 10);
	assert_int_not_equal(alloc_ok(&f, SP_PI_UDP, 3, 5060, 20).port, 5060);
	assert_int_equal(alloc_ok(&f, SP_PI_UDP, 4, 5060, 10 + REUSE_MS).port, 5060);
	/* outside the pool's range: the usual random choice */
	assert_true(alloc_ok(&f, SP_PI_UDP, 4, 53, 1).port >= 1024);
	destroy(&f);
}

/* Whether worker w owns port on the pool's first address. */
static int
owns(const struct sp_pool *pool, unsigned w, uint16_t port)
{
	const struct sp_pool_space *s = &pool->space[w * pool->n_addrs];

	for (uint32_t i = 0; i < s->n; i++)
		if (s->ports[i] == port)
			return 1;
	return 0;
}

static void
test_port_preserved_only_if_owned(void **state)
{
	struct fixture f = make_workers(0xcb007101, 32, 1024, 65535, 2);
	uint16_t mine = 5060, theirs = 5062;

	(void)state;
	f.pool->policy.preserve_port = true;
	while (!owns(f.pool, 0, mine))
		mine += 2;
	while (owns(f.pool, 0, theirs))
		theirs += 2;
	assert_int_equal(alloc_ok(&f, SP_PI_UDP, 1, mine, 1).port, mine);
	/* worker 1's port would send the replies to worker 1: a random one of
	 * worker 0's, with the parity kept */
	for (unsigned i = 0; i < 20; i++) {
		struct sp_alloc a = alloc_ok(&f, SP_PI_UDP, 1, theirs, 1);

		assert_int_not_equal(a.port, theirs);
		assert_true(owns(f.pool, 0, a.port));
		assert_int_equal(a.port & 1, theirs & 1);
		sp_pool_release(f.pool, &f.ctx, SP_PI_UDP, 1, &a, 1);
	}
	destroy(&f);
}

static void
test_well_known_class(void **state)
{
	struct fixture f = make(0xcb007101, 32, 1, 65535);
	struct sp_alloc b;

	(void)state;
	rte_srand(11);
	for (unsigned i = 0; i < 400; i++) {
		uint16_t low = (uint16_t)(1 + i), high = (uint16_t)(40000 + i);

		assert_true(alloc_ok(&f, SP_PI_UDP, 2, low, 1).port <= 1023);
		assert_true(alloc_ok(&f, SP_PI_UDP, 3, high, 1).port >= 1024);
	}
	f.pool->policy.preserve_port = true;
	assert_int_equal(alloc_ok(&f, SP_PI_TCP, 1, 53, 1).port, 53);
	/* 53 is taken: another endpoint of 53 still gets a well-known port */
	b = alloc_ok(&f, SP_PI_TCP, 2, 53, 1);
	assert_true(b.port != 53 && b.port <= 1023 && (b.port & 1) == 1);
	destroy(&f);
	/* with the default range a well-known port gets an ordinary one */
	f = make(0xcb007101, 32, 1024, 65535);
	assert_true(alloc_ok(&f, SP_PI_UDP, 1, 53, 1).port >= 1024);
	destroy(&f);
}

static void
test_class_full_does_not_spill(void **state)
{
	struct fixture f = make(0xcb007101, 32, 1000, 1029);
	uint8_t seen[1030] = { 0 };

	(void)state;
	f.pool->policy.preserve_parity = false;
	/* the well-known class: 1000-1023 */
	for (unsigned i = 0; i < 24; i++) {
		struct sp_alloc a = alloc_ok(&f, SP_PI_UDP, 1, (uint16_t)(100 + i), 1);

		assert_true(a.port >= 1000 && a.port <= 1023 && !seen[a.port]);
		seen[a.port] = 1;
	}
	alloc_fails(&f, SP_PI_UDP, 1, 200, 1);
	/* the ordinary class is untouched: 1024-1029, then nothing */
	for (unsigned i = 0; i < 6; i++) {
		struct sp_alloc a = alloc_ok(&f, SP_PI_UDP, 1, (uint16_t)(5000 + i), 1);

		assert_true(a.port >= 1024 && a.port <= 1029 && !seen[a.port]);
		seen[a.port] = 1;
	}
	alloc_fails(&f, SP_PI_UDP, 1, 6000, 1);
	destroy(&f);
	/* a pool of well-known ports has nothing for an ordinary one */
	f = make(0xcb007101, 32, 100, 200);
	alloc_fails(&f, SP_PI_UDP, 1, 5000, 1);
	assert_true(alloc_ok(&f, SP_PI_UDP, 1, 53, 1).port <= 200);
	destroy(&f);
}

static void
test_pool_limits(void **state)
{
	struct sp_prefix big = { .addr = 0x0a000000, .len = 8 };
	char err[256] = "";

	(void)state;
	sp_rss_init(&rss, sp_rss_default_key, 128, 1);
	assert_null(sp_pool_create("big", &big, 1, 1024, 65535, &rss, 1, err,
				   sizeof(err)));
	assert_non_null(strstr(err, "at most"));
}

static int
setup(void **state)
{
	(void)state;
	return sp_test_eal_init("test_sp_alloc") < 0 ? -1 : 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_paired_pooling, teardown),
		cmocka_unit_test_teardown(test_no_port_twice, teardown),
		cmocka_unit_test_teardown(test_quota, teardown),
		cmocka_unit_test_teardown(test_release_unbinds, teardown),
		cmocka_unit_test_teardown(test_reuse_delay, teardown),
		cmocka_unit_test_teardown(test_random_start, teardown),
		cmocka_unit_test_teardown(test_parity_kept, teardown),
		cmocka_unit_test_teardown(test_parity_class_full, teardown),
		cmocka_unit_test_teardown(test_parity_off, teardown),
		cmocka_unit_test_teardown(test_port_preserved, teardown),
		cmocka_unit_test_teardown(test_port_preserved_only_if_owned, teardown),
		cmocka_unit_test_teardown(test_well_known_class, teardown),
		cmocka_unit_test_teardown(test_class_full_does_not_spill, teardown),
		cmocka_unit_test_teardown(test_pool_limits, teardown),
	};

	return SP_RUN_TESTS(tests, setup, NULL);
}
