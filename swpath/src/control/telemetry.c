/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DPDK telemetry: /quicknat/stats (counters summed over the workers, and the
 * session count) and /quicknat/worker,N (one worker's counters), readable
 * with usertools/dpdk-telemetry.py. Same lock-free reads as the socket.
 */
#include <stdlib.h>

#include <rte_telemetry.h>

#include "control/telemetry.h"
#include "dataplane/sp.h"

static int
tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "sessions", sp_session_count());
	rte_tel_data_add_dict_u64(d, "workers", sp.n_workers);
	for (unsigned c = 0; c < SP_CNT_MAX; c++)
		rte_tel_data_add_dict_u64(d, sp_counter_names[c],
					  sp_counter_sum(c));
	return 0;
}

static int
tel_worker(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct sp_worker *w;
	char *end;
	unsigned long i;

	RTE_SET_USED(cmd);
	if (params == NULL || *params == '\0')
		return -1;
	i = strtoul(params, &end, 10);
	if (*end != '\0' || i >= sp.n_workers)
		return -1;
	w = sp.workers[i];
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "lcore", w->lcore);
	rte_tel_data_add_dict_u64(d, "sessions",
				  __atomic_load_n(&w->nat.n_sessions,
						  __ATOMIC_RELAXED));
	for (unsigned c = 0; c < SP_CNT_MAX; c++)
		rte_tel_data_add_dict_u64(d, sp_counter_names[c],
					  __atomic_load_n(&w->cnt[c],
							  __ATOMIC_RELAXED));
	return 0;
}

void
sp_telemetry_register(void)
{
	rte_telemetry_register_cmd("/quicknat/stats", tel_stats,
				   "QuickNAT counters summed over the workers, and sessions. No parameters");
	rte_telemetry_register_cmd("/quicknat/worker", tel_worker,
				   "One QuickNAT worker's counters. Parameter: worker index");
}
