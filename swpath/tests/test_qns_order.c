/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lookup order of docs/qns.md, rule by rule, checked on QNS and on the
 * linear-scan reference alike: DNAT before SNAT, longer prefix first, the
 * four probe forms, ports only for TCP and UDP, the edges of lengths, ports
 * and protocols.
 */
#include "qns_test_util.h"

/* Addresses that no rule in these tests covers unless it is a /0. */
#define ELSEWHERE IP4(203, 0, 113, 9)

static void
test_paper_example(void **state)
{
	struct test_pair p;

	(void)state;
	pair_init(&p);
	pair_add(&p, 1, QNS_SNAT, IP4(192, 168, 88, 0), 24, NOPORT, TCP);
	pair_add(&p, 2, QNS_SNAT, IP4(192, 168, 88, 33), 32, 1234, TCP);
	pair_add(&p, 3, QNS_SNAT, IP4(192, 168, 88, 32), 32, 1235, TCP);
	pair_expect(&p, TCP, IP4(192, 168, 88, 32), 1234, IP4(103, 235, 46, 39),
		    80, 1);
	pair_fini(&p);
}

static void
test_dnat_before_snat(void **state)
{
	struct test_pair p;
	uint32_t src = IP4(10, 0, 0, 1), dst = IP4(198, 51, 100, 7);

	(void)state;
	pair_init(&p);
	/* The most specific SNAT rule loses to the least specific DNAT rule. */
	pair_add(&p, 1, QNS_SNAT, src, 32, 1000, TCP);
	pair_add(&p, 2, QNS_DNAT, 0, 0, NOPORT, ANY);
	pair_expect(&p, TCP, src, 1000, dst, 80, 2);
	pair_expect_kind(&p, QNS_SNAT, TCP, src, 1000, 1);
	pair_expect_kind(&p, QNS_DNAT, TCP, dst, 80, 2);
	pair_del(&p, 2);
	pair_expect(&p, TCP, src, 1000, dst, 80, 1);
	pair_expect_kind(&p, QNS_DNAT, TCP, dst, 80, 0);
	pair_fini(&p);
}

static void
test_snat_source_dnat_destination(void **state)
{
	struct test_pair p;
	uint32_t a = IP4(10, 1, 1, 1), b = IP4(10, 2, 2, 2);

	(void)state;
	pair_init(&p);
	pair_add(&p, 1, QNS_SNAT, a, 32, 1111, UDP);
	pair_add(&p, 2, QNS_DNAT, b, 32, 2222, UDP);
	/* Each matches its own side's address and port only. */
	pair_expect(&p, UDP, a, 1111, ELSEWHERE, 2222, 1);
	pair_expect(&p, UDP, ELSEWHERE, 1111, a, 2222, 0);
	pair_expect(&p, UDP, ELSEWHERE, 2222, b, 2222, 2);
	pair_expect(&p, UDP, b, 2222, ELSEWHERE, 2222, 0);
	pair_expect(&p, UDP, a, 2222, b, 1111, 0);
	pair_fini(&p);
}

static void
test_longer_prefix_first(void **state)
{
	static const unsigned int plens[] = { 0, 1, 8, 16, 23, 24, 31, 32 };
	const size_t n = sizeof(plens) / sizeof(plens[0]);
	uint32_t addr = IP4(172, 16, 5, 4);
	struct test_pair p;
	size_t i;

	(void)state;
	pair_init(&p);
	/* Added shortest first, so insertion order cannot explain the result. */
	for (i = 0; i < n; i++) {
		uint32_t mask = plens[i] ? ~0u << (32 - plens[i]) : 0;

		pair_add(&p, (uint32_t)(i + 1), QNS_SNAT, addr & mask, plens[i],
			 NOPORT, ANY);
	}
	for (i = n; i > 0; i--) {
		pair_expect(&p, TCP, addr, 5, ELSEWHERE, 6, (uint32_t)i);
		pair_expect(&p, ICMP, addr, 0, ELSEWHERE, 0, (uint32_t)i);
		pair_del(&p, (uint32_t)i);
	}
	pair_expect(&p, TCP, addr, 5, ELSEWHERE, 6, 0);
	pair_fini(&p);
}

static void
test_length_beats_probe_form(void **state)
{
	struct test_pair p;
	uint32_t addr = IP4(10, 9, 8, 7);

	(void)state;
	pair_init(&p);
	/* A /24 with exact port and protocol loses to a /25 wildcard-any. */
	pair_add(&p, 1, QNS_DNAT, IP4(10, 9, 8, 0), 24, 443, TCP);
	pair_add(&p, 2, QNS_DNAT, IP4(10, 9, 8, 0), 25, NOPORT, ANY);
	pair_expect(&p, TCP, ELSEWHERE, 9, addr, 443, 2);
	/* Outside the /25 the /24 wins. */
	pair_expect(&p, TCP, ELSEWHERE, 9, IP4(10, 9, 8, 200), 443, 1);
	pair_fini(&p);
}

static void
test_probe_forms_in_order(void **state)
{
	struct test_pair p;
	uint32_t net = IP4(100, 64, 0, 0), addr = IP4(100, 64, 3, 3);

	(void)state;
	pair_init(&p);
	pair_add(&p, 4, QNS_SNAT, net, 10, NOPORT, ANY); /* form 4 */
	pair_add(&p, 3, QNS_SNAT, net, 10, NOPORT, TCP); /* form 3 */
	pair_add(&p, 2, QNS_SNAT, net, 10, 80, ANY);     /* form 2 */
	pair_add(&p, 1, QNS_SNAT, net, 10, 80, TCP);     /* form 1 */

	pair_expect(&p, TCP, addr, 80, ELSEWHERE, 1, 1);
	pair_expect(&p, UDP, addr, 80, ELSEWHERE, 1, 2);  /* form 1 is TCP */
	pair_expect(&p, TCP, addr, 81, ELSEWHERE, 80, 3); /* other port */
	pair_expect(&p, UDP, addr, 81, ELSEWHERE, 80, 4);
	pair_expect(&p, ICMP, addr, 0, ELSEWHERE, 0, 4);

	/* Each form beats the next one. */
	pair_del(&p, 1);
	pair_expect(&p, TCP, addr, 80, ELSEWHERE, 1, 2);
	pair_del(&p, 2);
	pair_expect(&p, TCP, addr, 80, ELSEWHERE, 1, 3);
	pair_del(&p, 3);
	pair_expect(&p, TCP, addr, 80, ELSEWHERE, 1, 4);
	pair_del(&p, 4);
	pair_expect(&p, TCP, addr, 80, ELSEWHERE, 1, 0);
	pair_fini(&p);
}

static void
test_port_beats_protocol(void **state)
{
	struct test_pair p;
	uint32_t addr = IP4(100, 64, 3, 3);

	(void)state;
	pair_init(&p);
	/* Form 2 (port, any) is tried before form 3 (no port, exact). */
	pair_add(&p, 3, QNS_DNAT, addr, 32, NOPORT, UDP);
	pair_add(&p, 2, QNS_DNAT, addr, 32, 53, ANY);
	pair_expect(&p, UDP, ELSEWHERE, 1, addr, 53, 2);
	pair_expect(&p, UDP, ELSEWHERE, 1, addr, 54, 3);
	pair_fini(&p);
}

static void
test_portless_packets_skip_ported_rules(void **state)
{
	struct test_pair p;
	uint32_t addr = IP4(10, 0, 0, 1);

	(void)state;
	pair_init(&p);
	pair_add(&p, 1, QNS_SNAT, addr, 32, 0, ANY);
	pair_add(&p, 2, QNS_SNAT, addr, 32, 0, TCP);
	pair_add(&p, 3, QNS_SNAT, IP4(10, 0, 0, 0), 8, NOPORT, ICMP);
	pair_add(&p, 4, QNS_SNAT, IP4(10, 0, 0, 0), 8, NOPORT, GRE);
	pair_add(&p, 5, QNS_SNAT, 0, 0, NOPORT, ANY);
	/* ICMP and GRE have no ports: whatever is passed as port is ignored. */
	pair_expect(&p, ICMP, addr, 0, ELSEWHERE, 0, 3);
	pair_expect(&p, ICMP, addr, 0, ELSEWHERE, 7, 3);
	pair_expect(&p, GRE, addr, 0, ELSEWHERE, 0, 4);
	pair_expect(&p, 50, addr, 0, ELSEWHERE, 0, 5);
	pair_expect(&p, 0, addr, 0, ELSEWHERE, 0, 5);
	pair_expect(&p, 255, addr, 0, ELSEWHERE, 0, 5);
	pair_expect_kind(&p, QNS_SNAT, ICMP, addr, 0, 3);
	/* TCP and UDP with port 0 do match the ported rules. */
	pair_expect(&p, TCP, addr, 0, ELSEWHERE, 0, 2);
	pair_expect(&p, UDP, addr, 0, ELSEWHERE, 0, 1);
	pair_fini(&p);
}

static void
test_prefix_lengths_0_and_32(void **state)
{
	struct test_pair p;

	(void)state;
	pair_init(&p);
	pair_add(&p, 1, QNS_DNAT, 0, 0, NOPORT, ANY);
	pair_add(&p, 2, QNS_DNAT, IP4(255, 255, 255, 255), 32, NOPORT, ANY);
	pair_add(&p, 3, QNS_DNAT, IP4(0, 0, 0, 0), 32, NOPORT, ANY);
	pair_add(&p, 4, QNS_DNAT, IP4(10, 0, 0, 2), 31, NOPORT, ANY);
	pair_expect(&p, TCP, 0, 1, IP4(255, 255, 255, 255), 1, 2);
	pair_expect(&p, TCP, 0, 1, IP4(255, 255, 255, 254), 1, 1);
	pair_expect(&p, TCP, 0, 1, IP4(0, 0, 0, 0), 1, 3);
	pair_expect(&p, TCP, 0, 1, IP4(0, 0, 0, 1), 1, 1);
	pair_expect(&p, TCP, 0, 1, IP4(10, 0, 0, 2), 1, 4);
	pair_expect(&p, TCP, 0, 1, IP4(10, 0, 0, 3), 1, 4);
	pair_expect(&p, TCP, 0, 1, IP4(10, 0, 0, 4), 1, 1);
	pair_expect(&p, TCP, 0, 1, IP4(10, 0, 0, 1), 1, 1);
	pair_expect(&p, 200, 0, 0, IP4(128, 0, 0, 0), 0, 1);
	pair_fini(&p);
}

static void
test_ports_0_and_65535(void **state)
{
	struct test_pair p;
	uint32_t addr = IP4(192, 0, 2, 1);

	(void)state;
	pair_init(&p);
	pair_add(&p, 1, QNS_DNAT, addr, 32, 0, TCP);
	pair_add(&p, 2, QNS_DNAT, addr, 32, 65535, TCP);
	/* Port 0 is a real port, not a wildcard. */
	pair_expect(&p, TCP, ELSEWHERE, 9, addr, 0, 1);
	pair_expect(&p, TCP, ELSEWHERE, 9, addr, 65535, 2);
	pair_expect(&p, TCP, ELSEWHERE, 9, addr, 1, 0);
	pair_expect(&p, TCP, ELSEWHERE, 9, addr, 65534, 0);
	pair_expect(&p, UDP, ELSEWHERE, 9, addr, 0, 0);
	pair_add(&p, 3, QNS_DNAT, addr, 32, NOPORT, TCP);
	pair_expect(&p, TCP, ELSEWHERE, 9, addr, 1, 3);
	pair_expect(&p, TCP, ELSEWHERE, 9, addr, 0, 1);
	pair_fini(&p);
}

static void
test_protocol_any_versus_exact(void **state)
{
	struct test_pair p;
	uint32_t net = IP4(10, 20, 0, 0);
	uint32_t addr = IP4(10, 20, 30, 40);

	(void)state;
	pair_init(&p);
	pair_add(&p, 1, QNS_SNAT, net, 16, 53, UDP);
	pair_expect(&p, UDP, addr, 53, ELSEWHERE, 1, 1);
	pair_expect(&p, TCP, addr, 53, ELSEWHERE, 1, 0);
	pair_add(&p, 2, QNS_SNAT, net, 16, 53, ANY);
	pair_expect(&p, TCP, addr, 53, ELSEWHERE, 1, 2);
	pair_expect(&p, UDP, addr, 53, ELSEWHERE, 1, 1);
	pair_add(&p, 3, QNS_SNAT, net, 16, NOPORT, ICMP);
	pair_expect(&p, ICMP, addr, 0, ELSEWHERE, 0, 3);
	pair_expect(&p, GRE, addr, 0, ELSEWHERE, 0, 0);
	pair_add(&p, 4, QNS_SNAT, net, 16, NOPORT, ANY);
	pair_expect(&p, GRE, addr, 0, ELSEWHERE, 0, 4);
	pair_expect(&p, ICMP, addr, 0, ELSEWHERE, 0, 3);
	pair_expect(&p, TCP, addr, 54, ELSEWHERE, 1, 4);
	pair_fini(&p);
}

static void
test_lookup_kind_bad_kind(void **state)
{
	struct test_pair p;

	(void)state;
	pair_init(&p);
	pair_add(&p, 1, QNS_SNAT, 0, 0, NOPORT, ANY);
	pair_add(&p, 2, QNS_DNAT, 0, 0, NOPORT, ANY);
	assert_null(qns_lookup_kind(p.qns, (enum qns_kind)2, TCP, 0, 0));
	assert_null(linear_scan_lookup_kind(p.ls, (enum qns_kind)2, TCP, 0, 0));
	pair_fini(&p);
}

static const struct CMUnitTest qns_order_tests[] = {
	cmocka_unit_test(test_paper_example),
	cmocka_unit_test(test_dnat_before_snat),
	cmocka_unit_test(test_snat_source_dnat_destination),
	cmocka_unit_test(test_longer_prefix_first),
	cmocka_unit_test(test_length_beats_probe_form),
	cmocka_unit_test(test_probe_forms_in_order),
	cmocka_unit_test(test_port_beats_protocol),
	cmocka_unit_test(test_portless_packets_skip_ported_rules),
	cmocka_unit_test(test_prefix_lengths_0_and_32),
	cmocka_unit_test(test_ports_0_and_65535),
	cmocka_unit_test(test_protocol_any_versus_exact),
	cmocka_unit_test(test_lookup_kind_bad_kind),
};

QNS_TEST_MAIN(qns_order_tests)
