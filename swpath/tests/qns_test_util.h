/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the QNS unit tests: building rules, checking a lookup
 * against both QNS and the linear-scan reference, and a cmocka main that
 * ends with the plain "N passed, M failed" line.
 */
#ifndef QUICKNAT_QNS_TEST_UTIL_H
#define QUICKNAT_QNS_TEST_UTIL_H

#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "linear_scan.h"
#include "qns.h"

#define IP4(a, b, c, d) \
	((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | \
	 (uint32_t)(d))

#define TCP IPPROTO_TCP
#define UDP IPPROTO_UDP
#define ICMP IPPROTO_ICMP
#define GRE 47
#define ANY QNS_PROTO_ANY

/* Port argument of test_rule() for a wildcard port. */
#define NOPORT (-1)

static inline struct qns_rule
test_rule(uint32_t id, enum qns_kind kind, uint32_t prefix, unsigned int plen,
	  int port, uint8_t proto)
{
	struct qns_rule r;

	memset(&r, 0, sizeof(r));
	r.id = id;
	r.kind = (uint8_t)kind;
	r.prefix = prefix;
	r.plen = (uint8_t)plen;
	r.has_port = port != NOPORT;
	r.port = port != NOPORT ? (uint16_t)port : 0;
	r.proto = proto;
	r.user = (uint64_t)id * 1000u;
	return r;
}

static inline uint32_t
test_id(const struct qns_rule *rule)
{
	return rule != NULL ? rule->id : 0;
}

/* Both implementations, changed together. */
struct test_pair {
	struct qns *qns;
	struct linear_scan *ls;
};

static inline void
pair_init(struct test_pair *p)
{
	p->qns = qns_create(NULL);
	p->ls = linear_scan_create();
	assert_non_null(p->qns);
	assert_non_null(p->ls);
}

static inline void
pair_fini(struct test_pair *p)
{
	qns_free(p->qns);
	linear_scan_free(p->ls);
}

/* Adds to both; both must return rc. */
static inline void
pair_add_rc(struct test_pair *p, struct qns_rule r, int rc)
{
	assert_int_equal(qns_add(p->qns, &r), rc);
	assert_int_equal(linear_scan_add(p->ls, &r), rc);
}

static inline void
pair_add(struct test_pair *p, uint32_t id, enum qns_kind kind, uint32_t prefix,
	 unsigned int plen, int port, uint8_t proto)
{
	pair_add_rc(p, test_rule(id, kind, prefix, plen, port, proto), 0);
}

static inline void
pair_del(struct test_pair *p, uint32_t id)
{
	assert_int_equal(qns_del(p->qns, id), 0);
	assert_int_equal(linear_scan_del(p->ls, id), 0);
}

/* Both implementations must answer id (0: no match). */
static inline void
pair_expect(struct test_pair *p, uint8_t proto, uint32_t src, uint16_t sport,
	    uint32_t dst, uint16_t dport, uint32_t id)
{
	assert_int_equal(test_id(qns_lookup(p->qns, proto, src, sport, dst,
					    dport)), id);
	assert_int_equal(test_id(linear_scan_lookup(p->ls, proto, src, sport,
						    dst, dport)), id);
}

static inline void
pair_expect_kind(struct test_pair *p, enum qns_kind kind, uint8_t proto,
		 uint32_t addr, uint16_t port, uint32_t id)
{
	assert_int_equal(test_id(qns_lookup_kind(p->qns, kind, proto, addr,
						 port)), id);
	assert_int_equal(test_id(linear_scan_lookup_kind(p->ls, kind, proto,
							 addr, port)), id);
}

/* Deterministic xorshift64*: the tests use fixed seeds. */
static inline uint64_t
test_rand(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dull;
}

/*
 * main() for a cmocka test program: cmocka's summary, then the plain line
 * "N passed, M failed" that CI reads.
 */
#define QNS_TEST_MAIN(group)                                                  \
	int main(void)                                                        \
	{                                                                     \
		size_t total_ = sizeof(group) / sizeof((group)[0]);           \
		int failed_ = cmocka_run_group_tests(group, NULL, NULL);      \
		size_t nfailed_ = failed_ < 0 ? total_ : (size_t)failed_;     \
                                                                              \
		if (nfailed_ > total_)                                        \
			nfailed_ = total_;                                    \
		fflush(stderr);                                               \
		printf("%zu passed, %zu failed\n", total_ - nfailed_,          \
		       nfailed_);                                             \
		return nfailed_ == 0 ? 0 : 1;                                 \
	}

#endif /* QUICKNAT_QNS_TEST_UTIL_H */
