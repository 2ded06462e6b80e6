/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allocator (swpath/src/allocator.c) against the behaviour of
 * controller/quicknat/nat/allocator.py: paired pooling, per-protocol port
 * spaces, no port handed out twice, quota, exhaustion, the 120 s rest of a
 * released port and the longest-rested fallback, random start.
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

/* The fixture of the running test, freed by the teardown even when an
 * assertion ends the test early. */
static struct fixture *current;

static int
teardown(void **state)
{
	(void)state;
	if (current != NULL) {
		sp_alloc_ctx_free(&current->ctx);
		sp_pool_free(current->pool);
		current = NULL;
	}
	return 0;
}

static struct fixture
make(uint32_t addr, uint8_t len, uint16_t lo, uint16_t hi)
{
	struct sp_prefix p = { .addr = addr, .len = len };
	struct fixture f;
	char err[256];

	sp_rss_init(&rss, sp_rss_default_key, 128, 1);
	f.pool = sp_pool_create("p", &p, 1, lo, hi, &rss, 1, err, sizeof(err));
	assert_non_null(f.pool);
	assert_int_equal(sp_alloc_ctx_init(&f.ctx, 0, 4096, SOCKET_ID_ANY), 0);
	return f;
}

static void
destroy(struct fixture *f)
{
	(void)f;
	teardown(NULL);
}

static struct sp_alloc
alloc_ok(struct fixture *f, unsigned pi, uint32_t host, uint32_t now)
{
	struct sp_alloc a;

	assert_int_equal(sp_pool_allocate(f->pool, &f->ctx, pi, host, 0, now,
					  REUSE_MS, &a), 0);
	return a;
}

static void
test_paired_pooling(void **state)
{
	struct fixture f = make(0xcb007100, 30, 1024, 65535); /* 4 addresses */
	current = &f;
	uint32_t first;

	(void)state;
	/* a new host takes candidates[host % n] among the least loaded */
	first = alloc_ok(&f, SP_PI_UDP, 0x0a000006, 1).addr;
	assert_int_equal(first, 0xcb007100 + 6 % 4);
	/* all its ports, any protocol, stay on that address */
	for (unsigned i = 0; i < 50; i++)
		assert_int_equal(alloc_ok(&f, i % SP_PI_MAX, 0x0a000006, 1).addr, first);
	/* the next host goes to a less loaded address: .0, .1 or .3, and
	 * 0x0a000007 % 3 = 2 picks the third of them */
	assert_int_equal(0x0a000007u % 3, 2);
	assert_int_equal(alloc_ok(&f, SP_PI_TCP, 0x0a000007, 1).addr, 0xcb007100 + 3);
	assert_int_equal(sp_pool_ports_held(&f.ctx, f.pool->index, 0x0a000006), 51);
	destroy(&f);
}

static void
test_no_port_twice(void **state)
{
	struct fixture f = make(0xcb007101, 32, 2000, 2099);
	current = &f;
	static uint8_t used[SP_PI_MAX][65536];
	struct sp_alloc a;

	(void)state;
	memset(used, 0, sizeof(used));
	for (unsigned pi = 0; pi < SP_PI_MAX; pi++) {
		for (unsigned i = 0; i < 100; i++) {
			a = alloc_ok(&f, pi, 0x0a000000 + i, 1);
			assert_true(a.port >= 2000 && a.port <= 2099);
			assert_int_equal(used[pi][a.port], 0);
			used[pi][a.port] = 1;
		}
		/* 100 ports, 100 endpoints: the next new flow fails */
		assert_int_equal(sp_pool_allocate(f.pool, &f.ctx, pi, 0x0a0000ff, 0,
						  1, REUSE_MS, &a), -ENOSPC);
	}
	destroy(&f);
}

static void
test_quota(void **state)
{
	struct fixture f = make(0xcb007101, 32, 1024, 65535);
	current = &f;
	struct sp_alloc a[3], b;

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(sp_pool_allocate(f.pool, &f.ctx, SP_PI_TCP, 7, 3, 1,
						  REUSE_MS, &a[i]), 0);
	assert_int_equal(sp_pool_allocate(f.pool, &f.ctx, SP_PI_UDP, 7, 3, 1,
					  REUSE_MS, &b), -EDQUOT);
	/* another host is not affected */
	assert_int_equal(sp_pool_allocate(f.pool, &f.ctx, SP_PI_UDP, 8, 3, 1,
					  REUSE_MS, &b), 0);
	sp_pool_release(f.pool, &f.ctx, SP_PI_TCP, 7, &a[0], 2);
	assert_int_equal(sp_pool_allocate(f.pool, &f.ctx, SP_PI_UDP, 7, 3, 2,
					  REUSE_MS, &b), 0);
	destroy(&f);
}

static void
test_release_unbinds(void **state)
{
	struct fixture f = make(0xcb007100, 31, 1024, 65535);
	current = &f; /* 2 addresses */
	struct sp_alloc a, b;

	(void)state;
	a = alloc_ok(&f, SP_PI_TCP, 10, 1);     /* 10 % 2 = 0 */
	assert_int_equal(a.addr, 0xcb007100);
	assert_int_equal(f.pool->space[0].hosts, 1);
	b = alloc_ok(&f, SP_PI_TCP, 12, 1);     /* least loaded: .1 */
	assert_int_equal(b.addr, 0xcb007101);
	sp_pool_release(f.pool, &f.ctx, SP_PI_TCP, 10, &a, 5);
	assert_int_equal(sp_pool_ports_held(&f.ctx, f.pool->index, 10), 0);
	assert_int_equal(f.pool->space[0].hosts, 0);
	/* host 10 is unbound: it takes the least loaded address again */
	a = alloc_ok(&f, SP_PI_TCP, 10, 6);
	assert_int_equal(a.addr, 0xcb007100);
	destroy(&f);
}

static void
test_reuse_delay(void **state)
{
	struct fixture f = make(0xcb007101, 32, 1000, 1009);
	current = &f;
	struct sp_alloc a[10], b;
	uint8_t seen[1010] = { 0 };

	(void)state;
	for (unsigned i = 0; i < 5; i++)
		a[i] = alloc_ok(&f, SP_PI_UDP, 100 + i, 1000);
	/* released at different times: a[0] rests longest */
	for (unsigned i = 0; i < 5; i++) {
		seen[a[i].port] = 1;
		sp_pool_release(f.pool, &f.ctx, SP_PI_UDP, 100 + i, &a[i],
				2000 + i * 10);
	}
	/* while never-used ports are free, resting ones are not handed out */
	for (unsigned i = 5; i < 10; i++) {
		a[i] = alloc_ok(&f, SP_PI_UDP, 100 + i, 3000);
		assert_int_equal(seen[a[i].port], 0);
		seen[a[i].port] = 2;
	}
	/* only resting ports are left: the longest-rested one is reused */
	b = alloc_ok(&f, SP_PI_UDP, 200, 4000);
	assert_int_equal(b.port, a[0].port);
	b = alloc_ok(&f, SP_PI_UDP, 201, 4000);
	assert_int_equal(b.port, a[1].port);
	/* after 120 s a released port is free like any other: a[2..4] are,
	 * a[5] (released later) still rests */
	sp_pool_release(f.pool, &f.ctx, SP_PI_UDP, 105, &a[5], 5000);
	for (unsigned i = 0; i < 3; i++) {
		b = alloc_ok(&f, SP_PI_UDP, 300 + i, 5000 + REUSE_MS - 1);
		assert_true(b.port == a[2].port || b.port == a[3].port ||
			    b.port == a[4].port);
	}
	b = alloc_ok(&f, SP_PI_UDP, 310, 5000 + REUSE_MS - 1);
	assert_int_equal(b.port, a[5].port);
	assert_int_equal(sp_pool_allocate(f.pool, &f.ctx, SP_PI_UDP, 311, 0,
					  5000 + REUSE_MS, REUSE_MS, &b), -ENOSPC);
	destroy(&f);
}

static void
test_random_start(void **state)
{
	struct fixture f = make(0xcb007101, 32, 1024, 65535);
	current = &f;
	unsigned low = 0, adjacent = 0;
	uint16_t prev = 0;

	(void)state;
	rte_srand(42);
	for (unsigned i = 0; i < 200; i++) {
		struct sp_alloc a = alloc_ok(&f, SP_PI_TCP, 5000 + i, 1);

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
		cmocka_unit_test_teardown(test_pool_limits, teardown),
	};

	return SP_RUN_TESTS(tests, setup, NULL);
}
