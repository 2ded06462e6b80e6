/* SPDX-License-Identifier: Apache-2.0 */
#include <sys/prctl.h>
#include <time.h>

#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_swx_ctl.h>
#include <rte_swx_pipeline.h>

#include "runner.h"
#include "util/tsan.h"

/* Instructions per rte_swx_pipeline_run(): a few packets' worth (DPDK's
 * pipeline example runs 1,000). */
#define SWX_QUANTUM 1024
/* A round that brought in fewer packets than this flushes (and may sleep). */
#define SWX_BUSY_ROUND 32

static uint64_t
packets_in(struct rte_swx_pipeline *p, uint32_t n_ports)
{
	struct rte_swx_port_in_stats stats;
	uint64_t total = 0;

	for (uint32_t i = 0; i < n_ports; i++)
		if (rte_swx_ctl_pipeline_port_in_stats_read(p, i, &stats) == 0)
			total += stats.n_pkts;
	return total;
}

static int
runner_main(void *arg)
{
	struct swx_runner *r = arg;
	uint64_t before = packets_in(r->p, r->n_ports_in);

	/* The kernel's default timer slack (50 us) would stretch every idle
	 * sleep to at least that: a packet arriving meanwhile waits for it. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	/* A full barrier (xchg), not a plain store: the store must be seen
	 * before this thread takes its first table state (the rx of
	 * rte_swx_pipeline_run). A plain one may wait in the store buffer
	 * while that load goes ahead, which x86 allows (Intel SDM vol. 3A,
	 * "Loads May Be Reordered with Earlier Stores to Different
	 * Locations"): a commit that read `false` meanwhile would not wait for
	 * the copy this thread holds before rewriting it (tables.c: drained).
	 * The commit's side has its barrier: the device's mutex, taken by
	 * every Write between one commit's publish and the next one's check. */
	__atomic_store_n(&r->running, true, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		uint64_t now;

		rte_swx_pipeline_run(r->p, SWX_QUANTUM);
		now = packets_in(r->p, r->n_ports_in);
		if (now - before >= SWX_BUSY_ROUND) {
			before = now;
			continue;
		}
		before = now;
		rte_swx_pipeline_flush(r->p);
		if (r->idle_sleep_us) {
			/* tv_nsec must stay under a second (EINVAL: no sleep) */
			struct timespec ts = { r->idle_sleep_us / 1000000,
					       (long)(r->idle_sleep_us % 1000000) * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	rte_swx_pipeline_flush(r->p);
	/* after its last use of a table state; the join in rte_eal_wait_lcore
	 * is librte_eal's, which ThreadSanitizer cannot see (util/tsan.h) */
	__atomic_store_n(&r->running, false, __ATOMIC_RELEASE);
	SP_TSAN_RELEASE(r);
	return 0;
}

int
swx_runner_start(struct swx_runner *r)
{
	struct rte_swx_ctl_pipeline_info info;

	if (rte_swx_ctl_pipeline_info_get(r->p, &info) != 0)
		return -1;
	r->n_ports_in = info.n_ports_in;
	__atomic_store_n(&r->stop, false, __ATOMIC_RELAXED);
	return rte_eal_remote_launch(runner_main, r, r->lcore) == 0 ? 0 : -1;
}

void
swx_runner_stop(struct swx_runner *r)
{
	__atomic_store_n(&r->stop, true, __ATOMIC_RELAXED);
	rte_eal_wait_lcore(r->lcore);
	SP_TSAN_ACQUIRE(r);
}
