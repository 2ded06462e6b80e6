/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One writer adds and removes rules, growing, shrinking and purging the very
 * sub-tables that reader threads search at the same time. Readers must find
 * every rule that is never removed, every time, and never get a rule that
 * does not match their packet. Retired memory is kept until the end, as an
 * RCU-backed reclaim callback would keep it until readers are quiescent.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "qns_test_util.h"

#define STABLE_RULES 64u
#define CHURN_ROUNDS 30u
#define CHURN_BATCH 600u
#define READERS 2
/*
 * Readers make at least MIN passes and go on until the writer is done, but
 * never beyond MAX.
 */
#define MIN_READER_PASSES 10000ul
#define MAX_READER_PASSES 20000000ul

#define FALLBACK_SNAT_ID 100001u
#define FALLBACK_DNAT_ID 100002u
#define CHURN_FIRST_ID 200000u

struct deferred {
	void **ptr;
	size_t count;
	size_t capacity;
};

struct shared {
	struct qns *q;
	struct qns_rule stable[STABLE_RULES];
	pthread_barrier_t start;
	atomic_int readers_running;
	atomic_int writer_done;
	atomic_ulong stable_misses;  /* a stable rule not found */
	atomic_ulong wrong_results;  /* a rule that does not match the packet */
	atomic_ulong writer_errors;  /* an add or delete refused */
	atomic_ulong passes;
	struct deferred retired; /* only the writer thread reclaims */
};

/* The reclaim callback: defer every free to the end of the test. */
static void
defer_free(void *ctx, void *ptr)
{
	struct deferred *d = ctx;

	if (d->count == d->capacity) {
		size_t capacity = d->capacity > 0 ? d->capacity * 2 : 1024;
		void **grown = realloc(d->ptr, capacity * sizeof(*grown));

		if (grown == NULL)
			abort();
		d->ptr = grown;
		d->capacity = capacity;
	}
	d->ptr[d->count++] = ptr;
}

static uint32_t
stable_addr(uint32_t s)
{
	return IP4(10, s, 0, 5);
}

/* Stable rule s: a /24 with an exact port, in a sub-table the writer churns. */
static struct qns_rule
stable_rule(uint32_t s)
{
	return test_rule(s + 1, s % 2 ? QNS_DNAT : QNS_SNAT, IP4(10, s, 0, 0),
			 24, (int)(1000 + s), TCP);
}

/* Address of churn rule k's packet: a host of its /32 or of its /24. */
static uint32_t
churn_addr(uint32_t k)
{
	uint32_t s = k % STABLE_RULES;

	return k % 4 == 3 ? IP4(10, s, 0, 100 + k / STABLE_RULES)
			  : IP4(10, s, 0, 9);
}

/*
 * Churn rule k of a round: same kinds and /24 sub-tables as the stable
 * rules but other ports, plus /32s of other hosts, so none of them matches a
 * stable rule's packet.
 */
static struct qns_rule
churn_rule(uint32_t round, uint32_t k)
{
	uint32_t s = k % STABLE_RULES;
	uint32_t id = CHURN_FIRST_ID + round * CHURN_BATCH + k;

	if (k % 4 == 3)
		return test_rule(id, s % 2 ? QNS_DNAT : QNS_SNAT, churn_addr(k),
				 32, NOPORT, ANY);
	return test_rule(id, s % 2 ? QNS_DNAT : QNS_SNAT, IP4(10, s, 0, 0), 24,
			 (int)(2000 + k), k % 2 ? UDP : ANY);
}

static int
rule_matches(const struct qns_rule *r, enum qns_kind kind, uint8_t proto,
	     uint32_t addr, uint16_t port)
{
	uint32_t mask = r->plen ? ~0u << (32 - r->plen) : 0;

	return r->kind == kind && (addr & mask) == r->prefix &&
	       (!r->has_port || r->port == port) &&
	       (r->proto == ANY || r->proto == proto);
}

static void *
reader_main(void *arg)
{
	struct shared *sh = arg;
	unsigned long pass, misses = 0, wrong = 0;
	uint64_t rs = (uint64_t)(uintptr_t)&pass | 1;

	pthread_barrier_wait(&sh->start);
	atomic_fetch_add(&sh->readers_running, 1);
	for (pass = 0; pass < MAX_READER_PASSES &&
		       (pass < MIN_READER_PASSES ||
			!atomic_load_explicit(&sh->writer_done,
					      memory_order_acquire));
	     pass++) {
		uint32_t s = pass % STABLE_RULES;
		uint16_t port = (uint16_t)(1000 + s);
		enum qns_kind kind = s % 2 ? QNS_DNAT : QNS_SNAT;
		const struct qns_rule *got;
		uint32_t k;

		/* A stable rule: always found, whatever the writer does. */
		if (kind == QNS_SNAT)
			got = qns_lookup(sh->q, TCP, stable_addr(s), port,
					 IP4(192, 0, 2, 1), 9);
		else
			got = qns_lookup(sh->q, TCP, IP4(192, 0, 2, 1), 9,
					 stable_addr(s), port);
		/* Its copy moves when a rebuild moves its slot: compare ids. */
		misses += got == NULL || got->id != sh->stable[s].id ||
			  got->port != sh->stable[s].port;

		/* A churned key: its rule or the /8 fallback, never NULL. */
		k = (uint32_t)(test_rand(&rs) % CHURN_BATCH);
		s = k % STABLE_RULES;
		kind = s % 2 ? QNS_DNAT : QNS_SNAT;
		port = (uint16_t)(2000 + k);
		got = qns_lookup_kind(sh->q, kind, UDP, churn_addr(k), port);
		wrong += got == NULL ||
			 !rule_matches(got, kind, UDP, churn_addr(k), port);
	}
	atomic_fetch_add(&sh->stable_misses, misses);
	atomic_fetch_add(&sh->wrong_results, wrong);
	atomic_fetch_add(&sh->passes, pass);
	return NULL;
}

static void *
writer_main(void *arg)
{
	struct shared *sh = arg;
	uint32_t round, k;

	pthread_barrier_wait(&sh->start);
	/* Change nothing before every reader is searching. */
	while (atomic_load(&sh->readers_running) < READERS)
		sched_yield();
	for (round = 0; round < CHURN_ROUNDS; round++) {
		/* Grows the /24 arrays several times over, then shrinks them. */
		for (k = 0; k < CHURN_BATCH; k++) {
			struct qns_rule r = churn_rule(round, k);

			if (qns_add(sh->q, &r) != 0)
				atomic_fetch_add(&sh->writer_errors, 1);
		}
		for (k = 0; k < CHURN_BATCH; k++) {
			uint32_t id = churn_rule(round, k).id;

			if (qns_del(sh->q, id) != 0)
				atomic_fetch_add(&sh->writer_errors, 1);
		}
	}
	atomic_store_explicit(&sh->writer_done, 1, memory_order_release);
	return NULL;
}

static void
test_one_writer_two_readers(void **state)
{
	static struct shared sh;
	struct qns_params params = { defer_free, &sh.retired };
	pthread_t writer, readers[READERS];
	struct qns_rule r;
	uint32_t s;
	size_t i;
	int t;

	(void)state;
	sh.q = qns_create(&params);
	assert_non_null(sh.q);
	for (s = 0; s < STABLE_RULES; s++) {
		r = stable_rule(s);
		assert_int_equal(qns_add(sh.q, &r), 0);
		sh.stable[s] = r;
	}
	r = test_rule(FALLBACK_SNAT_ID, QNS_SNAT, IP4(10, 0, 0, 0), 8, NOPORT, ANY);
	assert_int_equal(qns_add(sh.q, &r), 0);
	r = test_rule(FALLBACK_DNAT_ID, QNS_DNAT, IP4(10, 0, 0, 0), 8, NOPORT, ANY);
	assert_int_equal(qns_add(sh.q, &r), 0);

	assert_int_equal(pthread_barrier_init(&sh.start, NULL, READERS + 1), 0);
	for (t = 0; t < READERS; t++)
		assert_int_equal(pthread_create(&readers[t], NULL, reader_main,
						&sh), 0);
	assert_int_equal(pthread_create(&writer, NULL, writer_main, &sh), 0);
	assert_int_equal(pthread_join(writer, NULL), 0);
	for (t = 0; t < READERS; t++)
		assert_int_equal(pthread_join(readers[t], NULL), 0);
	pthread_barrier_destroy(&sh.start);

	print_message("%lu reader passes, %zu blocks retired\n",
		      atomic_load(&sh.passes), sh.retired.count);
	assert_int_equal(atomic_load(&sh.writer_errors), 0);
	assert_int_equal(atomic_load(&sh.stable_misses), 0);
	assert_int_equal(atomic_load(&sh.wrong_results), 0);
	assert_true(atomic_load(&sh.passes) >= READERS * MIN_READER_PASSES);
	/*
	 * Rebuilt arrays went through the callback: every round grows the two
	 * /24 arrays (and the /32 ones) and shrinks them again.
	 */
	assert_true(sh.retired.count >= 4 * CHURN_ROUNDS);
	assert_int_equal(qns_count(sh.q), STABLE_RULES + 2);
	for (s = 0; s < STABLE_RULES; s++)
		assert_memory_equal(qns_get(sh.q, s + 1), &sh.stable[s],
				    sizeof(sh.stable[s]));

	qns_free(sh.q);
	for (i = 0; i < sh.retired.count; i++)
		free(sh.retired.ptr[i]);
	free(sh.retired.ptr);
}

static const struct CMUnitTest qns_concurrency_tests[] = {
	cmocka_unit_test(test_one_writer_two_readers),
};

QNS_TEST_MAIN(qns_concurrency_tests)
