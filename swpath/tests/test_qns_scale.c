/* SPDX-License-Identifier: Apache-2.0 */
/*
 * QNS at size and under churn: 100,000 rules grown from empty and mostly
 * deleted again, tombstone rebuilds, and a randomised differential test
 * against the linear-scan reference on heavily overlapping rules.
 */
#include <stdlib.h>

#include "qns_test_util.h"

#define BIG_RULES 100000u
#define BIG_GROUPS 10u /* 2 kinds x 5 prefix lengths */

/* Packets addressed here match no rule of the big set. */
#define NOWHERE IP4(250, 0, 0, 1)

static const unsigned int big_plens[] = { 32, 28, 24, 20, 16 };

/*
 * Rule i of the big set. Its group (kind, length) has its own first octet,
 * and within a group every rule has its own port, so each rule is the only
 * match for the packet big_packet() builds for it.
 */
static struct qns_rule
big_rule(uint32_t i)
{
	uint32_t group = i % BIG_GROUPS, j = i / BIG_GROUPS;
	unsigned int plen = big_plens[group / 2];
	uint32_t host_bits = (uint32_t)((j * 2654435761u) & 0xffffffu);
	uint32_t addr = (20 + group) << 24 | host_bits;
	uint32_t mask = ~0u << (32 - plen);

	return test_rule(i + 1, group % 2 ? QNS_DNAT : QNS_SNAT, addr & mask,
			 plen, (int)j, j % 3 ? TCP : ANY);
}

static const struct qns_rule *
big_lookup(const struct qns *q, const struct qns_rule *r)
{
	uint32_t addr = r->prefix | (~(~0u << (32 - r->plen)) & 0x5a5a5a5a);

	if (r->kind == QNS_SNAT)
		return qns_lookup(q, TCP, addr, r->port, NOWHERE, r->port);
	return qns_lookup(q, TCP, NOWHERE, r->port, addr, r->port);
}

static void
test_grow_to_100k_and_shrink(void **state)
{
	struct qns *q = qns_create(NULL);
	size_t full_memory;
	uint32_t i;

	(void)state;
	for (i = 0; i < BIG_RULES; i++) {
		struct qns_rule r = big_rule(i);

		assert_int_equal(qns_add(q, &r), 0);
	}
	assert_int_equal(qns_count(q), BIG_RULES);
	full_memory = qns_memory(q);
	print_message("100k rules: %zu bytes, %zu per rule\n", full_memory,
		      full_memory / BIG_RULES);
	assert_true(full_memory < 32u << 20);
	for (i = 0; i < BIG_RULES; i++) {
		struct qns_rule r = big_rule(i);

		assert_int_equal(test_id(big_lookup(q, &r)), i + 1);
	}

	/* Delete nine in ten: tombstones, then rebuilt smaller arrays. */
	for (i = 0; i < BIG_RULES; i++)
		if (i % 10 != 3)
			assert_int_equal(qns_del(q, i + 1), 0);
	assert_int_equal(qns_count(q), BIG_RULES / 10);
	assert_true(qns_memory(q) < full_memory / 2);
	for (i = 0; i < BIG_RULES; i++) {
		struct qns_rule r = big_rule(i);

		assert_int_equal(test_id(big_lookup(q, &r)),
				 i % 10 == 3 ? i + 1 : 0);
		assert_int_equal(qns_get(q, i + 1) != NULL, i % 10 == 3);
	}

	/* Add some back into the tombstoned tables. */
	for (i = 0; i < BIG_RULES; i += 7) {
		struct qns_rule r = big_rule(i);

		assert_int_equal(qns_add(q, &r), i % 10 == 3 ? -EEXIST : 0);
	}
	for (i = 0; i < BIG_RULES; i++) {
		struct qns_rule r = big_rule(i);
		int present = i % 10 == 3 || i % 7 == 0;

		assert_int_equal(test_id(big_lookup(q, &r)), present ? i + 1 : 0);
	}
	qns_free(q);
}

/*
 * A steady number of rules in one sub-table with constant turnover: the
 * tombstones left by deletes must be purged by rebuilds, so memory stays
 * bounded and lookups never run into a table without empty slots.
 */
static void
test_tombstone_churn(void **state)
{
	const uint32_t live = 50, rounds = 20000;
	struct qns *q = qns_create(NULL);
	size_t peak = 0;
	uint32_t n;

	(void)state;
	for (n = 1; n <= rounds; n++) {
		struct qns_rule r = test_rule(n, QNS_SNAT, IP4(10, 0, 0, 0), 8,
					      (int)(n % 65536), UDP);

		assert_int_equal(qns_add(q, &r), 0);
		if (n > live)
			assert_int_equal(qns_del(q, n - live), 0);
		if (qns_memory(q) > peak)
			peak = qns_memory(q);
		if (n % 997 == 0) {
			uint32_t k;

			for (k = n > live ? n - live + 1 : 1; k <= n; k++)
				assert_int_equal(
					test_id(qns_lookup(q, UDP, IP4(10, 1, 2, 3),
							   (uint16_t)(k % 65536),
							   NOWHERE, 1)),
					k);
			assert_null(qns_lookup(q, UDP, IP4(10, 1, 2, 3),
					       (uint16_t)((n - live) % 65536),
					       NOWHERE, 1));
		}
	}
	assert_int_equal(qns_count(q), live);
	/* 50 rules: arrays of at most 256 slots and a small id index. */
	assert_true(peak < 64 * 1024);
	qns_free(q);
}

/* The random test's small, overlapping world. */
static uint32_t
rand_addr(uint64_t *rs)
{
	/* Bits that differ at several prefix lengths. */
	static const uint32_t bits[] = { 1u << 0, 1u << 1, 1u << 9, 1u << 17,
					 1u << 31 };
	uint32_t addr = IP4(10, 0, 0, 0);
	uint64_t x = test_rand(rs);
	size_t i;

	for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (x & (1u << i))
			addr ^= bits[i];
	return addr;
}

static int
rand_rule_port(uint64_t *rs)
{
	static const int ports[] = { 0, 53, 80, 65535, NOPORT, NOPORT };

	return ports[test_rand(rs) % (sizeof(ports) / sizeof(ports[0]))];
}

static uint8_t
rand_proto(uint64_t *rs, int for_rule)
{
	static const uint8_t rule_protos[] = { TCP, UDP, ICMP, ANY, ANY, GRE };
	static const uint8_t pkt_protos[] = { TCP, UDP, TCP, UDP, ICMP, GRE, 0 };

	if (for_rule)
		return rule_protos[test_rand(rs) % sizeof(rule_protos)];
	return pkt_protos[test_rand(rs) % sizeof(pkt_protos)];
}

static uint16_t
rand_packet_port(uint64_t *rs)
{
	static const uint16_t ports[] = { 0, 53, 80, 65535, 1234 };

	return ports[test_rand(rs) % (sizeof(ports) / sizeof(ports[0]))];
}

static void
differential_round(uint64_t *rs, uint32_t n_changes, uint32_t n_lookups)
{
	static const unsigned int plens[] = { 0, 1, 8, 15, 16, 22, 23, 30, 31, 32 };
	struct test_pair p;
	uint32_t next_id = 1, i;

	pair_init(&p);
	for (i = 0; i < n_changes; i++) {
		if (next_id > 1 && test_rand(rs) % 4 == 0) {
			uint32_t id = 1 + (uint32_t)(test_rand(rs) % (next_id - 1));

			assert_int_equal(qns_del(p.qns, id),
					 linear_scan_del(p.ls, id));
		} else {
			unsigned int plen = plens[test_rand(rs) % 10];
			uint32_t mask = plen ? ~0u << (32 - plen) : 0;
			struct qns_rule r = test_rule(
				next_id++, test_rand(rs) % 2 ? QNS_DNAT : QNS_SNAT,
				rand_addr(rs) & mask, plen, rand_rule_port(rs),
				rand_proto(rs, 1));

			/* Invalid (ICMP/GRE with a port) and duplicates too. */
			assert_int_equal(qns_add(p.qns, &r),
					 linear_scan_add(p.ls, &r));
		}
	}
	assert_int_equal(qns_count(p.qns), linear_scan_count(p.ls));
	for (i = 0; i < n_lookups; i++) {
		uint8_t proto = rand_proto(rs, 0);
		uint32_t src = rand_addr(rs), dst = rand_addr(rs);
		uint16_t sport = rand_packet_port(rs), dport = rand_packet_port(rs);
		enum qns_kind kind = test_rand(rs) % 2 ? QNS_DNAT : QNS_SNAT;

		assert_int_equal(test_id(qns_lookup(p.qns, proto, src, sport, dst,
						    dport)),
				 test_id(linear_scan_lookup(p.ls, proto, src, sport,
							    dst, dport)));
		assert_int_equal(test_id(qns_lookup_kind(p.qns, kind, proto, src,
							 sport)),
				 test_id(linear_scan_lookup_kind(p.ls, kind, proto,
								 src, sport)));
	}
	pair_fini(&p);
}

static void
test_differential_random(void **state)
{
	uint64_t rs = 0x5eed0f0a11c0ffeeull;
	uint32_t round;

	(void)state;
	/* Small rule sets hit empty sub-tables, large ones dense overlaps. */
	for (round = 0; round < 200; round++)
		differential_round(&rs, 1 + round % 40, 500);
	for (round = 0; round < 20; round++)
		differential_round(&rs, 400 + 40 * round, 5000);
}

/* The differential test with a bulk-loaded reference, at a larger size. */
static void
test_differential_bulk(void **state)
{
	const uint32_t n = 20000;
	struct qns_rule *rules = calloc(n, sizeof(*rules));
	struct qns *q = qns_create(NULL);
	struct linear_scan *ls = linear_scan_create();
	uint64_t rs = 42;
	uint32_t i, added = 0;
	long bad;

	(void)state;
	assert_non_null(rules);
	for (i = 0; i < n; i++) {
		/* No /0 to /7, so that some packets match nothing. */
		unsigned int plen = 8 + (unsigned int)(test_rand(&rs) % 25);
		uint32_t mask = plen ? ~0u << (32 - plen) : 0;
		uint32_t addr = (uint32_t)test_rand(&rs) & (0xff00ffffu | 1u << 20);
		uint8_t proto = rand_proto(&rs, 1);
		int port = proto == ICMP || proto == GRE
				   ? NOPORT
				   : (test_rand(&rs) % 2 ? NOPORT
							 : (int)(test_rand(&rs) % 8));

		rules[added] = test_rule(i + 1,
					 test_rand(&rs) % 2 ? QNS_DNAT : QNS_SNAT,
					 addr & mask, plen, port, proto);
		if (qns_add(q, &rules[added]) == 0)
			added++;
	}
	assert_int_equal(linear_scan_add_bulk(ls, rules, added, &bad), 0);
	assert_int_equal(linear_scan_count(ls), added);
	/* A duplicate refuses the whole batch. */
	assert_int_equal(linear_scan_add_bulk(ls, rules, 1, &bad), -EEXIST);
	assert_int_equal(bad, 0);
	assert_int_equal(linear_scan_count(ls), added);
	for (i = 0; i < 20000; i++) {
		uint8_t proto = rand_proto(&rs, 0);
		uint32_t src = (uint32_t)test_rand(&rs) & (0xff00ffffu | 1u << 20);
		uint32_t dst = (uint32_t)test_rand(&rs) & (0xff00ffffu | 1u << 20);
		uint16_t sport = (uint16_t)(test_rand(&rs) % 8);
		uint16_t dport = (uint16_t)(test_rand(&rs) % 8);

		assert_int_equal(test_id(qns_lookup(q, proto, src, sport, dst,
						    dport)),
				 test_id(linear_scan_lookup(ls, proto, src, sport,
							    dst, dport)));
	}
	linear_scan_free(ls);
	qns_free(q);
	free(rules);
}

/*
 * A rule at every prefix length of both kinds, nested around one address,
 * beside growing numbers of unrelated rules: the filter's block table has
 * blocks from /8 to /16 as it grows, so rules shorter than a block, as
 * long as one and longer are all covered at each size. Deleting the winner
 * must reveal the next shorter prefix every time.
 */
static void
test_every_length_at_every_block_size(void **state)
{
	/* Past each point where the filter grows: blocks of /8, /9 ... /16. */
	static const uint32_t padding[] = { 0, 600, 2500, 10000, 40000, 132000 };
	const uint32_t addr = IP4(10, 77, 200, 131);
	const uint32_t nested_id = 1000000;
	unsigned int n, plen, kind;
	uint32_t i;

	(void)state;
	for (n = 0; n < sizeof(padding) / sizeof(padding[0]); n++) {
		struct qns *q = qns_create(NULL);

		assert_non_null(q);
		/* Elsewhere (11.0.0.0/8 and up), /32s with their own ports. */
		for (i = 0; i < padding[n]; i++) {
			struct qns_rule r = test_rule(
				i + 1, i % 2 ? QNS_DNAT : QNS_SNAT,
				(11 + i % 100) << 24 | (i * 2654435761u & 0xffffffu),
				32, (int)(i % 60000), TCP);

			assert_int_equal(qns_add(q, &r), 0);
		}
		for (kind = 0; kind < QNS_KINDS; kind++) {
			for (plen = 0; plen <= 32; plen++) {
				uint32_t mask = plen ? ~0u << (32 - plen) : 0;
				struct qns_rule r = test_rule(
					nested_id + kind * 100 + plen, kind,
					addr & mask, plen, NOPORT, ANY);

				assert_int_equal(qns_add(q, &r), 0);
			}
		}
		for (plen = 33; plen-- > 0;) {
			for (kind = 0; kind < QNS_KINDS; kind++) {
				uint32_t id = nested_id + kind * 100 + plen;

				assert_int_equal(test_id(qns_lookup_kind(
							 q, kind, UDP, addr, 9)),
						 id);
				assert_int_equal(qns_del(q, id), 0);
			}
		}
		assert_int_equal(test_id(qns_lookup_kind(q, QNS_SNAT, UDP, addr, 9)),
				 0);
		qns_free(q);
	}
}

static const struct CMUnitTest qns_scale_tests[] = {
	cmocka_unit_test(test_grow_to_100k_and_shrink),
	cmocka_unit_test(test_tombstone_churn),
	cmocka_unit_test(test_every_length_at_every_block_size),
	cmocka_unit_test(test_differential_random),
	cmocka_unit_test(test_differential_bulk),
};

QNS_TEST_MAIN(qns_scale_tests)
