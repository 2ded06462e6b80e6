/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How long the slow path takes to open a session: from a packet's miss in
 * the flow table (in2out.c, out2in.c) to its session opened by the NAT core,
 * in TSC cycles, as a histogram per worker (`stats`' histograms.session_open;
 * quicknat exporter's quicknat_session_open_duration_seconds).
 *
 * Kept as the counters are: each worker adds to its own buckets, with no
 * lock and no allocation; readers sum the workers' relaxed and tolerate a
 * slightly stale figure. The cost is two rte_rdtsc() per miss and a scan of
 * a dozen bounds per session opened; a packet of an existing session (the
 * fast path) pays nothing. The bounds are cycles, set once from the TSC's
 * frequency (sp_open_hist_init).
 */
#ifndef SP_OPEN_HIST_H
#define SP_OPEN_HIST_H

#include <stdint.h>

#include "core/counters.h"

#define SP_OPEN_HIST_N 12

/* The buckets' upper bounds (ns), as Prometheus' `le` (inclusive): a new
 * session costs about a microsecond (QNS lookup, port allocation, table
 * insert; docs/benchmarks.md), more when the worker's caches are cold. */
extern const uint32_t sp_open_hist_bound_ns[SP_OPEN_HIST_N];

struct sp_open_hist {
	uint64_t count[SP_OPEN_HIST_N + 1];     /* the last: over every bound */
	uint64_t sum_tsc;
};

/* The bounds in cycles of a TSC of tsc_hz, into bound_tsc. */
void sp_open_hist_init(uint64_t *bound_tsc, uint64_t tsc_hz);

static inline void
sp_open_hist_observe(struct sp_open_hist *h, const uint64_t *bound_tsc,
		     uint64_t cycles)
{
	unsigned i = 0;

	while (i < SP_OPEN_HIST_N && cycles > bound_tsc[i])
		i++;
	SP_COUNT_ADD(h->count[i], 1);
	SP_COUNT_ADD(h->sum_tsc, cycles);
}

#endif /* SP_OPEN_HIST_H */
