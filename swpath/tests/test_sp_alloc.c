/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What only the C allocator (swpath/src/core/allocator.c) has, or what needs more
 * draws than a vector: host binding and release, the random start's spread,
 * port preservation on a port another worker owns, pool limits. The policy
 * both cores share is in the NAT vectors (tests/vectors/nat/).
 */
#include <errno.h>
#include <string.h>

#include "sp_test_util.h"

#include <rte_memory.h>
#include <rte_random.h>

#include "core/allocator.h"
#include "core/rss.h"
#include "dataplane/dispatch.h"
#include "sp_core_util.h"

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

	sp_rss_init(&rss, sp_rss_default_key, 128, n_workers);
	f.pool = sp_test_pool("p", &p, 1, lo, hi, &rss, n_workers);
	assert_non_null(f.pool);
	assert_int_equal(sp_alloc_ctx_init(&f.ctx, &sp_dpdk_env, 0, 4096,
					   SOCKET_ID_ANY), 0);
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
	sp_pool_release(f.pool, &f.ctx, SP_PI_TCP, 10, &a, 5, 0);
	assert_int_equal(sp_pool_ports_held(&f.ctx, f.pool->index, 10), 0);
	assert_int_equal(f.pool->space[0].hosts, 0);
	/* host 10 is unbound: it takes the least loaded address again */
	a = alloc_ok(&f, SP_PI_TCP, 10, 5000, 6);
	assert_int_equal(a.addr, 0xcb007100);
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
		sp_pool_release(f.pool, &f.ctx, SP_PI_UDP, 1, &a, 1, 0);
	}
	destroy(&f);
}

static void
test_pool_limits(void **state)
{
	struct sp_prefix big = { .addr = 0x0a000000, .len = 8 };
	char err[256] = "";

	(void)state;
	sp_rss_init(&rss, sp_rss_default_key, 128, 1);
	assert_null(sp_pool_create(&(struct sp_pool_params){
					   .name = "big", .prefixes = &big,
					   .n_prefixes = 1, .port_min = 1024,
					   .port_max = 65535, .rss = &rss,
					   .n_workers = 1, .env = &sp_dpdk_env,
				   }, err, sizeof(err)));
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
		cmocka_unit_test_teardown(test_release_unbinds, teardown),
		cmocka_unit_test_teardown(test_random_start, teardown),
		cmocka_unit_test_teardown(test_port_preserved_only_if_owned, teardown),
		cmocka_unit_test_teardown(test_pool_limits, teardown),
	};

	return SP_RUN_TESTS(tests, setup, NULL);
}
