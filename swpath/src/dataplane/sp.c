/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The application's shared state (sp.h), the platform the NAT core runs on
 * here, and what the control thread reads of the workers.
 */
#include <rte_malloc.h>
#include <rte_random.h>

#include "dataplane/sp.h"

struct sp_app sp;

static void *
dpdk_zalloc(const char *name, size_t size, int socket)
{
	return rte_zmalloc_socket(name, size, SP_CACHE_LINE, socket);
}

/* SP_SOCKET_ANY is DPDK's SOCKET_ID_ANY, and a cache line its own. */
_Static_assert(SP_SOCKET_ANY == SOCKET_ID_ANY, "SP_SOCKET_ANY");
_Static_assert(SP_CACHE_LINE == RTE_CACHE_LINE_SIZE, "SP_CACHE_LINE");

const uint32_t sp_open_hist_bound_ns[SP_OPEN_HIST_N] = {
	250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000,
	500000, 1000000,
};

void
sp_open_hist_init(uint64_t *bound_tsc, uint64_t tsc_hz)
{
	for (unsigned i = 0; i < SP_OPEN_HIST_N; i++)
		bound_tsc[i] = sp_open_hist_bound_ns[i] * tsc_hz / 1000000000u;
}

const struct sp_env sp_dpdk_env = {
	.zalloc = dpdk_zalloc,
	.free = rte_free,
	.random = rte_rand,
	.random_below = rte_rand_max,
};

struct sp_nat_shared
sp_nat_shared(void)
{
	return (struct sp_nat_shared){
		.qns = sp.qns, .pools = sp.pools, .rss = &sp.rss,
	};
}

uint64_t
sp_counter_sum(enum sp_counter c)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < sp.n_workers; i++)
		if (sp.workers[i] != NULL)
			sum += __atomic_load_n(&sp.workers[i]->cnt[c],
					       __ATOMIC_RELAXED);
	return sum;
}

uint32_t
sp_session_count(void)
{
	uint32_t sum = 0;

	for (unsigned i = 0; i < sp.n_workers; i++)
		if (sp.workers[i] != NULL)
			sum += __atomic_load_n(&sp.workers[i]->nat.n_sessions,
					       __ATOMIC_RELAXED);
	return sum;
}
