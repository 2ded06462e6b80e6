/* SPDX-License-Identifier: Apache-2.0 */
/*
 * QNS API: add, delete, get, count, foreach, memory, every error code, the
 * reclaim callback and allocation failures (-ENOMEM leaves QNS unchanged).
 */
#include <malloc.h>
#include <stdbool.h>
#include <stdlib.h>

#include "qns_test_util.h"

/*
 * Allocation failure injection. The test binary is linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=aligned_alloc, so the library's
 * allocations come here; alloc_fail_at = n fails the n-th one (from 0).
 */
void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);

static long alloc_fail_at = -1; /* -1: never fail */
static long alloc_seen;

static bool
alloc_should_fail(void)
{
	if (alloc_fail_at < 0)
		return false;
	return alloc_seen++ == alloc_fail_at;
}

static void
alloc_fail_arm(long n)
{
	alloc_seen = 0;
	alloc_fail_at = n;
}

void *
__wrap_malloc(size_t size)
{
	return alloc_should_fail() ? NULL : __real_malloc(size);
}

void *
__wrap_calloc(size_t n, size_t size)
{
	return alloc_should_fail() ? NULL : __real_calloc(n, size);
}

void *
__wrap_aligned_alloc(size_t align, size_t size)
{
	return alloc_should_fail() ? NULL : __real_aligned_alloc(align, size);
}

/* Reclaim callback that keeps everything it is given, freed by the test. */
struct retired {
	void *ptr[4096];
	size_t count;
};

static void
retire_keep(void *ctx, void *ptr)
{
	struct retired *r = ctx;

	assert_true(r->count < sizeof(r->ptr) / sizeof(r->ptr[0]));
	r->ptr[r->count++] = ptr;
}

/* Whether ptr lies in memory handed to the reclaim callback. */
static bool
retired_holds(const struct retired *r, const void *ptr)
{
	size_t i;

	for (i = 0; i < r->count; i++) {
		const char *block = r->ptr[i];

		if ((const char *)ptr >= block &&
		    (const char *)ptr < block + malloc_usable_size(r->ptr[i]))
			return true;
	}
	return false;
}

static void
retired_free(struct retired *r)
{
	size_t i;

	for (i = 0; i < r->count; i++)
		free(r->ptr[i]);
	r->count = 0;
}

static void
test_create_empty(void **state)
{
	struct qns *q = qns_create(NULL);

	(void)state;
	assert_non_null(q);
	assert_int_equal(qns_count(q), 0);
	assert_null(qns_get(q, 1));
	assert_null(qns_lookup(q, TCP, IP4(10, 0, 0, 1), 1, IP4(10, 0, 0, 2), 2));
	assert_null(qns_lookup_kind(q, QNS_SNAT, ICMP, IP4(10, 0, 0, 1), 0));
	assert_true(qns_memory(q) > 0);
	qns_free(q);
	qns_free(NULL);
}

static void
test_add_get_del(void **state)
{
	struct qns *q = qns_create(NULL);
	struct qns_rule r = test_rule(7, QNS_SNAT, IP4(10, 1, 0, 0), 16, 80, TCP);
	const struct qns_rule *got;

	(void)state;
	assert_int_equal(qns_add(q, &r), 0);
	assert_int_equal(qns_count(q), 1);
	got = qns_get(q, 7);
	assert_non_null(got);
	/* A copy: the caller's struct may go away. */
	assert_ptr_not_equal(got, &r);
	assert_memory_equal(got, &r, sizeof(r));
	r.user = 99;
	assert_int_equal(qns_get(q, 7)->user, 7000);
	assert_ptr_equal(qns_lookup(q, TCP, IP4(10, 1, 2, 3), 80, IP4(1, 1, 1, 1),
				    9), got);

	assert_int_equal(qns_del(q, 7), 0);
	assert_int_equal(qns_count(q), 0);
	assert_null(qns_get(q, 7));
	assert_null(qns_lookup(q, TCP, IP4(10, 1, 2, 3), 80, IP4(1, 1, 1, 1), 9));
	assert_int_equal(qns_del(q, 7), -ENOENT);
	qns_free(q);
}

static void
test_einval(void **state)
{
	struct test_pair p;
	struct qns_rule r;

	(void)state;
	pair_init(&p);
	/* Prefix length above 32. */
	pair_add_rc(&p, test_rule(1, QNS_SNAT, IP4(10, 0, 0, 0), 33, NOPORT, ANY),
		    -EINVAL);
	/* Host bits set, including a non-zero /0. */
	pair_add_rc(&p, test_rule(1, QNS_SNAT, IP4(10, 0, 0, 1), 24, NOPORT, ANY),
		    -EINVAL);
	pair_add_rc(&p, test_rule(1, QNS_DNAT, IP4(0, 0, 0, 1), 0, NOPORT, ANY),
		    -EINVAL);
	pair_add_rc(&p, test_rule(1, QNS_DNAT, IP4(10, 0, 0, 3), 31, NOPORT, ANY),
		    -EINVAL);
	/* Id 0. */
	pair_add_rc(&p, test_rule(0, QNS_SNAT, IP4(10, 0, 0, 0), 8, NOPORT, ANY),
		    -EINVAL);
	/* Unknown kind. */
	r = test_rule(1, QNS_SNAT, IP4(10, 0, 0, 0), 8, NOPORT, ANY);
	r.kind = 2;
	pair_add_rc(&p, r, -EINVAL);
	r.kind = 255;
	pair_add_rc(&p, r, -EINVAL);
	/* A port with a protocol that has none. */
	pair_add_rc(&p, test_rule(1, QNS_SNAT, IP4(10, 0, 0, 0), 8, 0, ICMP),
		    -EINVAL);
	pair_add_rc(&p, test_rule(1, QNS_SNAT, IP4(10, 0, 0, 0), 8, 80, GRE),
		    -EINVAL);
	/* has_port is a flag. */
	r = test_rule(1, QNS_SNAT, IP4(10, 0, 0, 0), 8, 80, TCP);
	r.has_port = 2;
	pair_add_rc(&p, r, -EINVAL);
	assert_int_equal(qns_count(p.qns), 0);
	assert_int_equal(linear_scan_count(p.ls), 0);

	/* The limits themselves are valid. */
	pair_add_rc(&p, test_rule(1, QNS_SNAT, IP4(10, 0, 0, 1), 32, NOPORT, ANY), 0);
	pair_add_rc(&p, test_rule(2, QNS_SNAT, 0, 0, NOPORT, ANY), 0);
	pair_add_rc(&p, test_rule(3, QNS_SNAT, 0, 0, NOPORT, ICMP), 0);
	pair_add_rc(&p, test_rule(4, QNS_SNAT, 0, 0, NOPORT, GRE), 0);
	pair_add_rc(&p, test_rule(UINT32_MAX, QNS_DNAT, 0, 0, 65535, UDP), 0);
	assert_int_equal(qns_count(p.qns), 5);
	pair_fini(&p);
}

static void
test_eexist(void **state)
{
	struct test_pair p;

	(void)state;
	pair_init(&p);
	pair_add(&p, 1, QNS_SNAT, IP4(10, 0, 0, 0), 8, 80, TCP);
	/* Same id, different key. */
	pair_add_rc(&p, test_rule(1, QNS_DNAT, IP4(11, 0, 0, 0), 8, NOPORT, ANY),
		    -EEXIST);
	/* Same key, different id and user data. */
	pair_add_rc(&p, test_rule(2, QNS_SNAT, IP4(10, 0, 0, 0), 8, 80, TCP),
		    -EEXIST);
	assert_int_equal(qns_count(p.qns), 1);
	assert_int_equal(qns_get(p.qns, 1)->user, 1000);
	assert_null(qns_get(p.qns, 2));

	/* Keys that differ in one field only are distinct. */
	pair_add(&p, 2, QNS_DNAT, IP4(10, 0, 0, 0), 8, 80, TCP);    /* kind */
	pair_add(&p, 3, QNS_SNAT, IP4(10, 0, 0, 0), 9, 80, TCP);    /* plen */
	pair_add(&p, 4, QNS_SNAT, IP4(11, 0, 0, 0), 8, 80, TCP);    /* prefix */
	pair_add(&p, 5, QNS_SNAT, IP4(10, 0, 0, 0), 8, 81, TCP);    /* port */
	pair_add(&p, 6, QNS_SNAT, IP4(10, 0, 0, 0), 8, 80, UDP);    /* proto */
	pair_add(&p, 7, QNS_SNAT, IP4(10, 0, 0, 0), 8, 80, ANY);    /* any */
	pair_add(&p, 8, QNS_SNAT, IP4(10, 0, 0, 0), 8, NOPORT, TCP); /* port * */
	pair_add(&p, 9, QNS_SNAT, IP4(10, 0, 0, 0), 8, 0, TCP);     /* port 0 */
	pair_add_rc(&p, test_rule(10, QNS_SNAT, IP4(10, 0, 0, 0), 8, 0, TCP),
		    -EEXIST);
	pair_add_rc(&p, test_rule(10, QNS_SNAT, IP4(10, 0, 0, 0), 8, NOPORT, TCP),
		    -EEXIST);

	/* A deleted rule's id and key are free again. */
	pair_del(&p, 1);
	pair_add(&p, 1, QNS_SNAT, IP4(10, 0, 0, 0), 8, 80, TCP);
	pair_del(&p, 1);
	pair_add(&p, 100, QNS_SNAT, IP4(10, 0, 0, 0), 8, 80, TCP);
	pair_add(&p, 1, QNS_SNAT, IP4(12, 0, 0, 0), 8, 80, TCP);
	assert_int_equal(qns_count(p.qns), 10);
	pair_fini(&p);
}

static void
test_enoent(void **state)
{
	struct test_pair p;

	(void)state;
	pair_init(&p);
	assert_int_equal(qns_del(p.qns, 1), -ENOENT);
	assert_int_equal(qns_del(p.qns, 0), -ENOENT);
	assert_int_equal(linear_scan_del(p.ls, 1), -ENOENT);
	pair_add(&p, 1, QNS_SNAT, IP4(10, 0, 0, 0), 8, NOPORT, ANY);
	assert_int_equal(qns_del(p.qns, 2), -ENOENT);
	assert_int_equal(linear_scan_del(p.ls, 2), -ENOENT);
	assert_int_equal(qns_count(p.qns), 1);
	pair_del(&p, 1);
	assert_int_equal(qns_del(p.qns, 1), -ENOENT);
	assert_int_equal(linear_scan_del(p.ls, 1), -ENOENT);
	pair_fini(&p);
}

static void
count_rule(const struct qns_rule *rule, void *arg)
{
	unsigned int *seen = arg;

	assert_true(rule->id >= 1 && rule->id <= 300);
	seen[rule->id]++;
}

static void
test_foreach(void **state)
{
	unsigned int seen[301] = {0};
	struct qns *q = qns_create(NULL);
	uint32_t id;

	(void)state;
	for (id = 1; id <= 300; id++) {
		struct qns_rule r = test_rule(id, id % 2 ? QNS_SNAT : QNS_DNAT,
					      IP4(10, 0, id, 0), 24, NOPORT, ANY);

		assert_int_equal(qns_add(q, &r), 0);
	}
	for (id = 1; id <= 300; id += 3)
		assert_int_equal(qns_del(q, id), 0);
	qns_foreach(q, count_rule, seen);
	for (id = 1; id <= 300; id++)
		assert_int_equal(seen[id], id % 3 == 1 ? 0 : 1);
	qns_free(q);
}

static void
test_memory(void **state)
{
	struct qns *q = qns_create(NULL);
	size_t empty = qns_memory(q), with_rules;
	uint32_t id;

	(void)state;
	for (id = 1; id <= 1000; id++) {
		struct qns_rule r = test_rule(id, QNS_DNAT, IP4(10, 0, 0, 0) + id,
					      32, 443, TCP);

		assert_int_equal(qns_add(q, &r), 0);
	}
	with_rules = qns_memory(q);
	/* At least the rules and their slots, at most a few times that. */
	assert_true(with_rules > empty + 1000 * (sizeof(struct qns_rule) + 16));
	assert_true(with_rules < empty + 1000 * 200);
	for (id = 1; id <= 1000; id++)
		assert_int_equal(qns_del(q, id), 0);
	/* Sub-tables give their arrays back; the id index keeps its size. */
	assert_true(qns_memory(q) < with_rules);
	assert_true(qns_memory(q) <= empty + 2048 * sizeof(void *));
	qns_free(q);
}

static void
test_reclaim_callback(void **state)
{
	static struct retired retired;
	struct qns_params params = { retire_keep, &retired };
	struct qns *q = qns_create(&params);
	const struct qns_rule *r5, *r6;
	uint32_t id;

	(void)state;
	assert_non_null(q);
	/* Growing one sub-table from 16 slots retires each outgrown array. */
	for (id = 1; id <= 200; id++) {
		struct qns_rule r = test_rule(id, QNS_SNAT, IP4(10, 0, 0, 0),
					      24, (int)id, UDP);

		assert_int_equal(qns_add(q, &r), 0);
	}
	assert_true(retired.count >= 3);
	r5 = qns_get(q, 5);
	r6 = qns_get(q, 6);
	assert_false(retired_holds(&retired, r5));

	/*
	 * A deleted rule stays as it was in its tombstoned slot, for readers
	 * that may still hold it; it is retired with its array.
	 */
	assert_int_equal(qns_del(q, 5), 0);
	assert_false(retired_holds(&retired, r5));
	assert_int_equal(r5->id, 5);
	assert_int_equal(r5->port, 5);
	assert_ptr_equal(qns_lookup(q, UDP, IP4(10, 0, 0, 9), 6, 0, 0), r6);
	assert_null(qns_lookup(q, UDP, IP4(10, 0, 0, 9), 5, 0, 0));

	/* Deleting most rules shrinks the array; deleting all drops it. */
	for (id = 1; id <= 200; id++)
		if (id != 5)
			assert_int_equal(qns_del(q, id), 0);
	assert_int_equal(qns_count(q), 0);
	assert_true(retired_holds(&retired, r5));
	assert_true(retired_holds(&retired, r6));
	qns_free(q);
	/* Everything retired is ours to free; ASan and valgrind see leaks. */
	retired_free(&retired);
}

static void
test_no_reclaim_callback_frees(void **state)
{
	struct qns *q = qns_create(NULL);
	uint32_t id;

	(void)state;
	/* Growth, tombstones, shrinking and deletion with free() at once. */
	for (id = 1; id <= 2000; id++) {
		struct qns_rule r = test_rule(id, QNS_DNAT, IP4(192, 168, 0, 0),
					      16, (int)id, TCP);

		assert_int_equal(qns_add(q, &r), 0);
	}
	for (id = 1; id <= 2000; id++)
		if (id % 100 != 0)
			assert_int_equal(qns_del(q, id), 0);
	assert_int_equal(qns_count(q), 20);
	assert_int_equal(test_id(qns_lookup(q, TCP, 0, 0, IP4(192, 168, 1, 1),
					    300)), 300);
	qns_free(q);
}

/*
 * Fails the 1st, 2nd, ... allocation of an add until it succeeds, and checks
 * that every failure returns -ENOMEM and leaves the rules as they were.
 */
static long
add_under_alloc_failure(struct qns *q, const struct qns_rule *r,
			const struct qns_rule *probe)
{
	size_t count = qns_count(q);
	long n;

	for (n = 0;; n++) {
		int rc;

		alloc_fail_arm(n);
		rc = qns_add(q, r);
		alloc_fail_arm(-1);
		if (rc == 0)
			break;
		assert_int_equal(rc, -ENOMEM);
		assert_int_equal(qns_count(q), count);
		assert_null(qns_get(q, r->id));
		assert_null(qns_lookup_kind(q, r->kind, r->proto ? r->proto : TCP,
					    r->prefix, r->port));
		if (probe != NULL)
			assert_ptr_equal(qns_get(q, probe->id),
					 qns_lookup_kind(q, probe->kind, TCP,
							 probe->prefix,
							 probe->port));
		assert_true(n < 16);
	}
	assert_int_equal(qns_count(q), count + 1);
	assert_non_null(qns_get(q, r->id));
	return n; /* allocations the add made */
}

static void
test_enomem(void **state)
{
	struct qns *q = NULL;
	struct qns_rule first, r;
	long n, grows = 0;
	uint32_t id;

	(void)state;
	/* qns_create fails cleanly at each of its allocations. */
	for (n = 0; q == NULL; n++) {
		alloc_fail_arm(n);
		q = qns_create(NULL);
		alloc_fail_arm(-1);
		assert_true(n < 16);
	}

	/* First rule of an empty sub-table: its slot array (rules live in it). */
	first = test_rule(1, QNS_SNAT, IP4(10, 0, 0, 0), 24, 1, TCP);
	assert_int_equal(add_under_alloc_failure(q, &first, NULL), 1);
	/* Adds that grow the sub-table and the id index on the way. */
	for (id = 2; id <= 100; id++) {
		r = test_rule(id, QNS_SNAT, IP4(10, 0, 0, 0), 24, (int)id, TCP);
		n = add_under_alloc_failure(q, &r, &first);
		assert_true(n <= 3);
		grows += n > 0;
	}
	assert_true(grows >= 4); /* 16 -> 256 slots */
	for (id = 1; id <= 100; id++)
		assert_int_equal(test_id(qns_lookup_kind(q, QNS_SNAT, TCP,
							 IP4(10, 0, 0, 7),
							 (uint16_t)id)), id);
	/* A failed shrink while deleting keeps the larger array. */
	for (id = 1; id <= 99; id++) {
		alloc_fail_arm(0);
		assert_int_equal(qns_del(q, id), 0);
		alloc_fail_arm(-1);
	}
	assert_int_equal(qns_count(q), 1);
	assert_int_equal(test_id(qns_lookup_kind(q, QNS_SNAT, TCP,
						 IP4(10, 0, 0, 7), 100)), 100);
	qns_free(q);
}

static const struct CMUnitTest qns_api_tests[] = {
	cmocka_unit_test(test_create_empty),
	cmocka_unit_test(test_add_get_del),
	cmocka_unit_test(test_einval),
	cmocka_unit_test(test_eexist),
	cmocka_unit_test(test_enoent),
	cmocka_unit_test(test_foreach),
	cmocka_unit_test(test_memory),
	cmocka_unit_test(test_reclaim_callback),
	cmocka_unit_test(test_no_reclaim_callback_frees),
	cmocka_unit_test(test_enomem),
};

QNS_TEST_MAIN(qns_api_tests)
