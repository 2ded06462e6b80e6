/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Virtual reassembly (swpath/src/dataplane/frag.h): the ports a datagram's
 * later fragments get, and the overlaps that are dropped and counted
 * drop_frag_overlap (IN-IP-9: RFC 1858 sec. 3, RFC 3128, RFC 5722):
 * duplicates, partial overlaps (a header rewrite), the teardrop pair, and
 * what is left of a datagram once it overlapped. The parser's share (tiny
 * first fragments, past 65,535 bytes) is test_sp_packet.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "sp_test_util.h"

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "core/counters.h"
#include "dataplane/frag.h"

#define SPORT RTE_BE16(40000)
#define DPORT RTE_BE16(53)

static struct rte_mempool *pool;
static struct sp_frag *frag;
static uint64_t cnt[SP_CNT_MAX];
static struct rte_mbuf *out[SP_FRAG_HOLD];
static const struct sp_frag_key key = {
	.src = RTE_BE32(0x0a000002), .dst = RTE_BE32(0x08080808),
	.id = RTE_BE16(0x1234), .proto = 17,
};

static int
setup(void **state)
{
	(void)state;
	frag = calloc(1, sizeof(*frag));
	memset(cnt, 0, sizeof(cnt));
	return frag == NULL;
}

static int
teardown(void **state)
{
	(void)state;
	sp_frag_flush(frag, cnt);
	free(frag);
	/* every mbuf held was freed or handed back */
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
	return 0;
}

static struct sp_frag_span
span(uint16_t start, uint16_t end, uint8_t last)
{
	return (struct sp_frag_span){.start = start, .end = end, .last = last};
}

static int
first(uint16_t end)
{
	struct sp_frag_span s = span(0, end, 0);

	return sp_frag_first(frag, &key, &s, SPORT, DPORT, 0, out, cnt);
}

/* A later fragment: SP_FRAG_KNOWN (ports checked), SP_FRAG_HELD, or minus
 * the counter to drop it under (then its mbuf is freed here). */
static int
later(uint16_t start, uint16_t end, uint8_t last)
{
	struct sp_frag_span s = span(start, end, last);
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	rte_be16_t sport = 0, dport = 0;
	int rc;

	assert_non_null(m);
	rc = sp_frag_later(frag, &key, &s, m, 0, &sport, &dport, cnt);
	if (rc != SP_FRAG_HELD)
		rte_pktmbuf_free(m);
	if (rc == SP_FRAG_KNOWN) {
		assert_int_equal(sport, SPORT);
		assert_int_equal(dport, DPORT);
	}
	return rc;
}

static void
free_released(int n)
{
	for (int i = 0; i < n; i++)
		rte_pktmbuf_free(out[i]);
}

/* In order and out of order, nothing overlaps: every fragment goes on. */
static void
test_no_overlap(void **state)
{
	(void)state;
	assert_int_equal(first(24), 0);
	assert_int_equal(later(24, 48, 0), SP_FRAG_KNOWN);
	assert_int_equal(later(48, 60, 1), SP_FRAG_KNOWN);
	/* across two fragments' boundary, inside the run they made */
	assert_int_equal(later(16, 32, 0), -SP_CNT_drop_frag_overlap);
	assert_int_equal(cnt[SP_CNT_drop_frag_overlap], 0);
}

/* Held before their first, then released by it; their ranges stay
 * recorded, so a copy of one that comes after is a duplicate. */
static void
test_held_then_released(void **state)
{
	int n;

	(void)state;
	assert_int_equal(later(48, 60, 1), SP_FRAG_HELD);
	assert_int_equal(later(24, 48, 0), SP_FRAG_HELD);
	n = first(24);
	assert_int_equal(n, 2);
	free_released(n);
	assert_int_equal(later(24, 48, 0), -SP_CNT_drop_frag_overlap);
	assert_int_equal(cnt[SP_CNT_drop_frag_overlap], 0); /* the caller's */
	assert_int_equal(cnt[SP_CNT_frag_held], 2);
}

/* A duplicate first fragment (its content unread: whichever it is) is
 * dropped; the datagram goes on, as Linux keeps it. */
static void
test_duplicate_first(void **state)
{
	(void)state;
	assert_int_equal(first(24), 0);
	assert_int_equal(first(24), -SP_CNT_drop_frag_overlap);
	assert_int_equal(later(8, 16, 0), -SP_CNT_drop_frag_overlap);
	assert_int_equal(later(24, 48, 1), SP_FRAG_KNOWN);
}

/* RFC 1858 sec. 3.2: a fragment over part of the first (its header) kills
 * the datagram: it and everything after are dropped. */
static void
test_header_rewrite_kills(void **state)
{
	(void)state;
	assert_int_equal(first(24), 0);
	assert_int_equal(first(32), -SP_CNT_drop_frag_overlap);
	assert_int_equal(later(24, 48, 1), -SP_CNT_drop_frag_overlap);
	assert_int_equal(later(48, 56, 1), -SP_CNT_drop_frag_overlap);
	/* another datagram is not touched */
	{
		struct sp_frag_key other = key;
		struct sp_frag_span s = span(0, 24, 0);

		other.id = RTE_BE16(0x1235);
		assert_int_equal(sp_frag_first(frag, &other, &s, SPORT, DPORT,
					       0, out, cnt), 0);
	}
}

/* The teardrop pair: a last fragment ending inside what the first held. */
static void
test_teardrop(void **state)
{
	(void)state;
	assert_int_equal(first(24), 0);
	assert_int_equal(later(8, 16, 1), -SP_CNT_drop_frag_overlap);
	assert_int_equal(later(24, 32, 1), -SP_CNT_drop_frag_overlap);
}

/* Ends that contradict: a fragment past the last one's end, two last
 * fragments with different ends. */
static void
test_contradicting_ends(void **state)
{
	(void)state;
	assert_int_equal(later(40, 48, 1), SP_FRAG_HELD);
	assert_int_equal(later(48, 56, 0), -SP_CNT_drop_frag_overlap);
	/* the held one went with its datagram, counted too */
	assert_int_equal(cnt[SP_CNT_drop_frag_overlap], 1);
	assert_int_equal(first(40), -SP_CNT_drop_frag_overlap);
	assert_int_equal(frag->n_held, 0);
}

/* An overlap between held fragments frees the ones held, counted. */
static void
test_overlap_frees_held(void **state)
{
	(void)state;
	assert_int_equal(later(24, 48, 0), SP_FRAG_HELD);
	assert_int_equal(later(48, 64, 0), SP_FRAG_HELD);
	assert_int_equal(later(16, 32, 0), -SP_CNT_drop_frag_overlap);
	assert_int_equal(cnt[SP_CNT_drop_frag_overlap], 2);
	assert_int_equal(frag->n_held, 0);
	assert_int_equal(cnt[SP_CNT_drop_frag_timeout], 0);
}

/* Runs that do not touch take a slot each; past SP_FRAG_RANGES the
 * datagram is over its limit (nothing is lost of what was recorded). */
static void
test_ranges_full(void **state)
{
	unsigned i;

	(void)state;
	assert_int_equal(first(8), 0);
	for (i = 1; i < SP_FRAG_RANGES; i++)
		assert_int_equal(later((uint16_t)(16 * i), (uint16_t)(16 * i + 8), 0),
				 SP_FRAG_KNOWN);
	assert_int_equal(later((uint16_t)(16 * i), (uint16_t)(16 * i + 8), 0),
			 -SP_CNT_drop_frag_limit);
	/* a fragment that fills a gap merges two runs: room again */
	assert_int_equal(later(8, 16, 0), SP_FRAG_KNOWN);
	assert_int_equal(later((uint16_t)(16 * i), (uint16_t)(16 * i + 8), 0),
			 SP_FRAG_KNOWN);
	/* and what was recorded still counts */
	assert_int_equal(later(16, 24, 0), -SP_CNT_drop_frag_overlap);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_overlap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_then_released, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_header_rewrite_kills, setup, teardown),
		cmocka_unit_test_setup_teardown(test_teardrop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_contradicting_ends, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlap_frees_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ranges_full, setup, teardown),
	};

	if (sp_test_eal_init("test_sp_frag") < 0)
		return 1;
	pool = rte_pktmbuf_pool_create("frag_test", 64, 0, 0, 256, SOCKET_ID_ANY);
	if (pool == NULL)
		return 1;
	return SP_RUN_TESTS(tests, NULL, NULL);
}
