/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The run-time snapshot (core/runtime.h) the control thread builds from the
 * settings and rules: timeouts, filtering, limits, the ICMP error rate,
 * offload's after_packets and learn mode's leases, and the NAT-owned address ranges used for proxy
 * ARP and hairpinning; its publication, and RCU's retired memory.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_rcu_qsbr.h>

#include "control/publish.h"
#include "dataplane/sp.h"
#include "qns.h"

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
	rt->after_packets = sp.after_packets;
	rt->learn = sp.learn;
	rt->learn_quiet = sp.learn && sp.learn_quiet;
	memcpy(rt->lease_class, sp.lease_class, sizeof(rt->lease_class));
	rt->longest_class = SP_LEARN_NONE;
	for (unsigned c = 0; c < SP_LEARN_CLASSES; c++) {
		rt->class_ms[c] = sp.class_s[c] * 1000u;
		if (sp.class_s[c] != 0 && (rt->longest_class == SP_LEARN_NONE ||
					   sp.class_s[c] > sp.class_s[rt->longest_class]))
			rt->longest_class = (uint8_t)c;
	}
	rt->n_owned = n;
	if (n > 0)
		memcpy(rt->owned, l.r, n * sizeof(struct sp_range));
	free(l.r);
	return rt;
}


/* -- RCU: retired memory waits for a grace period ----------------------- */

struct retired {
	uint64_t token;
	void *ptr;
};

static struct retired *retired;
static size_t n_retired, cap_retired;

void
sp_rcu_defer(void *ctx, void *ptr)
{
	RTE_SET_USED(ctx);
	if (!sp.running || sp.rcu == NULL) {
		free(ptr);
		return;
	}
	if (n_retired == cap_retired) {
		size_t cap = cap_retired ? 2 * cap_retired : 64;
		struct retired *r = realloc(retired, cap * sizeof(*r));

		if (r == NULL) {
			/* cannot queue it: wait out a grace period now */
			rte_rcu_qsbr_synchronize(sp.rcu, RTE_QSBR_THRID_INVALID);
			free(ptr);
			return;
		}
		retired = r;
		cap_retired = cap;
	}
	retired[n_retired].token = rte_rcu_qsbr_start(sp.rcu);
	retired[n_retired].ptr = ptr;
	n_retired++;
}

void
sp_rcu_reclaim(bool wait)
{
	size_t kept = 0;

	for (size_t i = 0; i < n_retired; i++) {
		if (!sp.running ||
		    rte_rcu_qsbr_check(sp.rcu, retired[i].token, wait) == 1)
			free(retired[i].ptr);
		else
			retired[kept++] = retired[i];
	}
	n_retired = kept;
}

int
sp_runtime_publish(void)
{
	struct sp_runtime *rt = sp_runtime_build();
	struct sp_runtime *old;

	if (rt == NULL)
		return -1;
	old = __atomic_exchange_n(&sp.rt, rt, __ATOMIC_ACQ_REL);
	if (old != NULL)
		sp_rcu_defer(NULL, old);
	return 0;
}


int
sp_runtime_changed(void)
{
	return sp.running ? sp_runtime_publish() : 0;
}
