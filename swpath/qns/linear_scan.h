/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reference rule lookup: a linear scan, in the style of Netfilter's rule
 * chains, over the rules sorted by the total order of docs/qns.md (DNAT
 * before SNAT, longer prefix first, probe form 1 to 4). The first rule that
 * matches is the answer QNS must give. It shares no code with QNS, so the
 * tests and the benchmark compare two independent implementations.
 *
 * Not thread-safe: one thread adds, removes and looks up.
 */
#ifndef QUICKNAT_LINEAR_SCAN_H
#define QUICKNAT_LINEAR_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "qns.h"

struct linear_scan;

/* Returns NULL on allocation failure. */
struct linear_scan *linear_scan_create(void);

void linear_scan_free(struct linear_scan *ls);

/*
 * Adds a copy of *rule at its place in the order; O(n). The same checks and
 * errors as qns_add(): 0, -EINVAL, -EEXIST or -ENOMEM.
 */
int linear_scan_add(struct linear_scan *ls, const struct qns_rule *rule);

/*
 * Adds n rules at once in O(n log n), for rule sets too large for n calls of
 * linear_scan_add(). All or nothing: on an error nothing is added, and *bad
 * (if not NULL) is the index of an offending rule (-1 for -ENOMEM).
 */
int linear_scan_add_bulk(struct linear_scan *ls, const struct qns_rule *rules,
			 size_t n, long *bad);

/* Returns 0 or -ENOENT. */
int linear_scan_del(struct linear_scan *ls, uint32_t id);

/*
 * The first matching rule, or NULL; same arguments as qns_lookup(). The
 * pointer is valid until the next change.
 */
const struct qns_rule *linear_scan_lookup(const struct linear_scan *ls,
					  uint8_t proto, uint32_t src,
					  uint16_t sport, uint32_t dst,
					  uint16_t dport);

/* The same, restricted to one kind, like qns_lookup_kind(). */
const struct qns_rule *linear_scan_lookup_kind(const struct linear_scan *ls,
					       enum qns_kind kind,
					       uint8_t proto, uint32_t addr,
					       uint16_t port);

size_t linear_scan_count(const struct linear_scan *ls);

#endif /* QUICKNAT_LINEAR_SCAN_H */
