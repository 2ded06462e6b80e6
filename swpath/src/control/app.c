/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The application state and what the control thread derives from it: the
 * counter names, the run-time snapshot (timeouts, filtering, limits, and the
 * NAT-owned address ranges used for proxy ARP and hairpinning).
 */
#include <stdlib.h>
#include <string.h>

#include "dataplane/sp.h"
#include "qns.h"

struct sp_app sp;

const char *const sp_counter_names[SP_CNT_MAX] = {
#define SP_X_NAME(name, help) #name,
	SP_COUNTERS(SP_X_NAME)
#undef SP_X_NAME
};

const char *const sp_counter_help[SP_CNT_MAX] = {
#define SP_X_HELP(name, help) help,
	SP_COUNTERS(SP_X_HELP)
#undef SP_X_HELP
};

struct range_list {
	struct sp_range *r;
	uint32_t n;
	uint32_t cap;
};

static int
range_push(struct range_list *l, uint32_t lo, uint32_t hi)
{
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? 2 * l->cap : 64;
		struct sp_range *r = realloc(l->r, cap * sizeof(*r));

		if (r == NULL)
			return -1;
		l->r = r;
		l->cap = cap;
	}
	l->r[l->n].lo = lo;
	l->r[l->n].hi = hi;
	l->n++;
	return 0;
}

static void
range_push_prefix(struct range_list *l, const struct sp_prefix *p)
{
	uint32_t size_m1 = p->len == 0 ? UINT32_MAX :
					 (uint32_t)((1ull << (32 - p->len)) - 1);

	range_push(l, p->addr, p->addr + size_m1);
}

static void
collect_dnat(const struct qns_rule *rule, void *arg)
{
	struct sp_prefix p = { .addr = rule->prefix, .len = rule->plen };

	/* A short DNAT prefix matches destinations, it does not own them. */
	if (rule->kind == QNS_DNAT && rule->plen >= SP_OWNED_MIN_PLEN)
		range_push_prefix(arg, &p);
}

static int
range_cmp(const void *a, const void *b)
{
	const struct sp_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

struct sp_runtime *
sp_runtime_build(void)
{
	struct range_list l = { 0 };
	struct sp_runtime *rt;
	uint32_t n = 0;

	for (unsigned i = 0; i < sp.n_pools; i++)
		for (uint32_t j = 0; j < sp.pools[i]->n_prefixes; j++)
			range_push_prefix(&l, &sp.pools[i]->prefixes[j]);
	if (sp.qns != NULL)
		qns_foreach(sp.qns, collect_dnat, &l);
	if (l.n > 0)
		qsort(l.r, l.n, sizeof(*l.r), range_cmp);
	for (uint32_t i = 0; i < l.n; i++) {
		if (n > 0 && (uint64_t)l.r[i].lo <= (uint64_t)l.r[n - 1].hi + 1) {
			if (l.r[i].hi > l.r[n - 1].hi)
				l.r[n - 1].hi = l.r[i].hi;
			continue;
		}
		l.r[n++] = l.r[i];
	}
	rt = calloc(1, sizeof(*rt) + n * sizeof(struct sp_range));
	if (rt == NULL) {
		free(l.r);
		return NULL;
	}
	for (unsigned t = 0; t < SP_TO_MAX; t++)
		rt->timeout_ms[t] = sp.timeout_s[t] * 1000u;
	memcpy(rt->filtering, sp.filtering, sizeof(rt->filtering));
	rt->ports_per_host = sp.ports_per_host;
	rt->sessions_per_host = sp.sessions_per_host;
	rt->reuse_ms = sp.port_reuse_ms;
	/* each worker has its own bucket: the configured rate is their sum */
	rt->icmp_rate = RTE_MAX(sp.icmp_rate / sp.n_workers, 1u);
	rt->icmp_burst = RTE_MAX(sp.icmp_burst / sp.n_workers, 1u);
	rt->icmp_on_exhaustion = sp.icmp_on_exhaustion;
	rt->n_owned = n;
	if (n > 0)
		memcpy(rt->owned, l.r, n * sizeof(struct sp_range));
	free(l.r);
	return rt;
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
