/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A worker's NAT tables (table.h): made once, at start-up, on the worker's
 * NUMA node, every page touched then rather than on the packet path.
 */
#include <errno.h>
#include <string.h>

#include "core/table.h"

/* The free lists of a record array: record i links to i + 1. */
#define LINK_FREE(array, n, field)                                        \
	do {                                                              \
		for (uint32_t i_ = 0; i_ < (n); i_++)                     \
			(array)[i_].field = i_ + 1 < (n) ? i_ + 1 : SP_NONE; \
	} while (0)

/*
 * Flows: twice as many buckets as keys, so a bucket holds half a key on
 * average and a hit rarely reads a second session. The others are off the
 * established path: one bucket per record.
 */
static int
indexes_init(struct sp_nat *nat, uint32_t n, int socket)
{
	const struct sp_env *env = nat->env;

	if (sp_hix_init(&nat->flows, env, "sp_flows", 2 * n, 4 * n, false,
			socket) < 0 ||
	    sp_hix_init(&nat->map_int, env, "sp_map_int", n, n, false,
			socket) < 0 ||
	    sp_hix_init(&nat->map_ext, env, "sp_map_ext", n, n, false,
			socket) < 0 ||
	    /* many sessions of one mapping may share a remote address */
	    sp_hix_init(&nat->remotes, env, "sp_remotes", n, n, true,
			socket) < 0 ||
	    sp_hix_init(&nat->host_ix, env, "sp_host_ix", n, n, false,
			socket) < 0)
		return -ENOMEM;
	return 0;
}

int
sp_nat_init(struct sp_nat *nat, const struct sp_nat_params *p)
{
	const struct sp_env *env = p->env;
	uint32_t n = p->max_sessions;

	memset(nat, 0, sizeof(*nat));
	nat->worker = p->worker;
	nat->n_workers = p->n_workers;
	nat->max_sessions = n;
	nat->cnt = p->counters;
	nat->env = env;
	nat->shared = p->shared;
	nat->obs = p->observer;
	nat->sessions = env->zalloc("sp_sessions",
				    (size_t)n * sizeof(struct sp_session),
				    p->socket);
	nat->mappings = env->zalloc("sp_mappings",
				    (size_t)n * sizeof(struct sp_mapping),
				    p->socket);
	nat->hosts = env->zalloc("sp_hosts", (size_t)n * sizeof(struct sp_host),
				 p->socket);
	nat->wheel = env->zalloc("sp_wheel", SP_WHEEL_SLOTS * sizeof(uint32_t),
				 p->socket);
	if (nat->sessions == NULL || nat->mappings == NULL ||
	    nat->hosts == NULL || nat->wheel == NULL ||
	    indexes_init(nat, n, p->socket) < 0 ||
	    sp_alloc_ctx_init(&nat->alloc, env, p->worker, n, p->socket) < 0) {
		sp_nat_free(nat);
		return -ENOMEM;
	}
	/* (these loops also fault the records' memory in now) */
	LINK_FREE(nat->sessions, n, next);
	LINK_FREE(nat->mappings, n, next_free);
	LINK_FREE(nat->hosts, n, next_free);
	nat->free_host = 0;
	for (uint32_t i = 0; i < SP_WHEEL_SLOTS; i++)
		nat->wheel[i] = SP_NONE;
	nat->wheel_time = p->now_ms;
	nat->route_gen = p->route_gen;
	nat->next_id = 0;
	return 0;
}

void
sp_nat_free(struct sp_nat *nat)
{
	const struct sp_env *env = nat->env;

	if (env == NULL)
		return;
	sp_hix_free(&nat->flows, env);
	sp_hix_free(&nat->map_int, env);
	sp_hix_free(&nat->map_ext, env);
	sp_hix_free(&nat->remotes, env);
	sp_hix_free(&nat->host_ix, env);
	sp_alloc_ctx_free(&nat->alloc);
	env->free(nat->sessions);
	env->free(nat->mappings);
	env->free(nat->hosts);
	env->free(nat->wheel);
	memset(nat, 0, sizeof(*nat));
}
