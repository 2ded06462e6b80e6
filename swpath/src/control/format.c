/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/cmd.h"
#include "control/format.h"
#include "core/rule.h"
#include "dataplane/sp.h"
#include "persist/session_json.h"
#include "qns.h"
#include "util/text.h"

#ifndef SP_VERSION /* src/Makefile defines it, from controller/quicknat/__init__.py */
#error "SP_VERSION is not defined"
#endif

static const char *
tcp_state(const struct sp_session *s)
{
	return s->proto == IPPROTO_TCP ?
		sp_tcp_phase_name(sp_session_tcp_phase(s)) : NULL;
}

/*
 * Learn mode: how long the switch may still translate s's packets with the
 * entries it learned from s's tags, 0 once that lease has surely ended or
 * when s was never tagged. An upper bound: the lease runs from the last tag
 * (last_seen, which every tag refreshes: core/session.h), DPDK's learner
 * may end it early, and a learner bucket that was full learned nothing.
 */
static uint32_t
lease_left_ms(const struct sp_runtime *rt, const struct sp_session *s,
	      uint32_t now)
{
	int32_t left;

	if (s->lease == 0)
		return 0;
	left = (int32_t)(s->last_seen + rt->class_ms[s->lease - 1] - now);
	return left > 0 ? (uint32_t)left : 0;
}

void
sp_format_sessions_json(struct sp_buf *b, const struct sp_session_filter *f,
			uint32_t limit)
{
	const struct sp_runtime *rt = sp_runtime_get();
	uint32_t now = sp_now_ms();
	uint32_t n = 0;

	sp_buf_printf(b, "[");
	for (unsigned w = 0; w < sp.n_workers; w++) {
		const struct sp_nat *nat = &sp.workers[w]->nat;

		for (uint32_t i = 0; i < nat->max_sessions; i++) {
			struct sp_session s;
			const char *state;

			if (limit != 0 && n >= limit)
				break;
			if (!sp_session_copy(&nat->sessions[i], &s) ||
			    !sp_session_matches(&s, f))
				continue;
			sp_buf_printf(b, "%s\n {\"id\": %u, \"protocol\": %u, "
				      "\"origin\": \"%s\", \"rule\": %u, ",
				      n ? "," : "", s.id,
				      s.proto,
				      sp_origin_name(s.origin),
				      s.rule_id);
			sp_json_endpoint(b, "internal", s.int_addr, s.int_port);
			sp_buf_printf(b, ", ");
			sp_json_endpoint(b, "external", s.ext_addr, s.ext_port);
			sp_buf_printf(b, ", ");
			sp_json_endpoint(b, "remote", s.rem_addr, s.rem_port);
			sp_buf_printf(b, ", \"age_s\": %.1f, \"idle_s\": %.1f, "
				      "\"timeout_s\": %u, \"installed\": true, "
				      "\"offloaded\": %s, \"worker\": %u",
				      /* the workers stamp while this walks */
				      (double)sp_age_ms(now, s.created) / 1000.0,
				      (double)sp_age_ms(now, s.last_seen) / 1000.0,
				      sp_session_timeout_ms(rt, &s) / 1000u,
				      (s.flags & SP_SESS_OFFLOADED) ? "true" : "false", w);
			state = tcp_state(&s);
			if (state != NULL)
				sp_buf_printf(b, ", \"tcp_state\": \"%s\"", state);
			if (rt->learn)
				sp_buf_printf(b, ", \"switch_lease_s\": %.1f",
					      (double)lease_left_ms(rt, &s, now) / 1000.0);
			sp_buf_printf(b, "}");
			n++;
		}
	}
	sp_buf_printf(b, "%s]\n", n ? "\n" : "");
}

static void
counters_json(struct sp_buf *b, const uint64_t *cnt)
{
	sp_buf_printf(b, "{");
	for (unsigned c = 0; c < SP_CNT_MAX; c++) {
		uint64_t v = cnt != NULL ?
			__atomic_load_n(&cnt[c], __ATOMIC_RELAXED) :
			sp_counter_sum(c);

		sp_buf_printf(b, "%s\"%s\": %llu", c ? ", " : "",
			      sp_counter_names[c], (unsigned long long)v);
	}
	sp_buf_printf(b, "}");
}

/* , "pools": [{"name", "ports" (per protocol), "in_use": {tcp, udp, icmp}}],
 * the controller's form (service.py pool_usage); workers' counts read as
 * they are (relaxed: a gauge). */
static void
pools_json(struct sp_buf *b)
{
	static const char *const names[SP_PI_MAX] = { "tcp", "udp", "icmp" };
	unsigned n = 0;

	sp_buf_printf(b, ", \"pools\": [");
	for (unsigned i = 0; i < sp.n_pools; i++) {
		const struct sp_pool *pool = sp.pools[i];
		uint64_t used[SP_PI_MAX] = { 0 };

		if (pool == NULL || pool->internal)
			continue;
		for (unsigned w = 0; w < pool->n_workers; w++)
			for (uint32_t a = 0; a < pool->n_addrs; a++) {
				const struct sp_pool_space *s =
					&pool->space[w * pool->n_addrs + a];

				for (unsigned pi = 0; pi < SP_PI_MAX; pi++)
					for (unsigned k = 0; k < 4; k++)
						used[pi] += __atomic_load_n(
							&s->used[pi][k >> 1][k & 1],
							__ATOMIC_RELAXED);
			}
		sp_buf_printf(b, "%s{\"name\": \"%s\", \"ports\": %u, \"in_use\": {",
			      n++ ? ", " : "", pool->name,
			      pool->n_addrs * (uint32_t)(pool->port_max -
							  pool->port_min + 1));
		for (unsigned pi = 0; pi < SP_PI_MAX; pi++)
			sp_buf_printf(b, "%s\"%s\": %llu", pi ? ", " : "", names[pi],
				      (unsigned long long)used[pi]);
		sp_buf_printf(b, "}}");
	}
	sp_buf_printf(b, "]");
}

/* , "histograms": {"session_open": {"bounds": [s...], "counts": [n...,
 * one over every bound], "sum": s}}: the workers' (open_hist.h) summed,
 * read relaxed as the counters are; quicknat/latency.py's form. */
static void
histograms_json(struct sp_buf *b)
{
	uint64_t count[SP_OPEN_HIST_N + 1] = { 0 }, sum_tsc = 0;

	for (unsigned w = 0; w < sp.n_workers; w++) {
		const struct sp_open_hist *h = &sp.workers[w]->open_hist;

		for (unsigned i = 0; i <= SP_OPEN_HIST_N; i++)
			count[i] += __atomic_load_n(&h->count[i], __ATOMIC_RELAXED);
		sum_tsc += __atomic_load_n(&h->sum_tsc, __ATOMIC_RELAXED);
	}
	sp_buf_printf(b, ", \"histograms\": {\"session_open\": {\"bounds\": [");
	for (unsigned i = 0; i < SP_OPEN_HIST_N; i++)
		sp_buf_printf(b, "%s%g", i ? ", " : "",
			      sp_open_hist_bound_ns[i] / 1e9);
	sp_buf_printf(b, "], \"counts\": [");
	for (unsigned i = 0; i <= SP_OPEN_HIST_N; i++)
		sp_buf_printf(b, "%s%llu", i ? ", " : "",
			      (unsigned long long)count[i]);
	sp_buf_printf(b, "], \"sum\": %.9f}}",
		      sp.tsc_hz ? (double)sum_tsc / (double)sp.tsc_hz : 0.0);
}

void
sp_format_stats_json(struct sp_buf *b)
{
	uint32_t sessions = sp_session_count();
	uint32_t mappings = 0;

	for (unsigned w = 0; w < sp.n_workers; w++)
		mappings += __atomic_load_n(&sp.workers[w]->nat.n_mappings,
					    __ATOMIC_RELAXED);
	/* version and pid: `quicknat exporter`'s quicknat_build_info and its
	 * process metrics of this process (/proc/PID) */
	sp_buf_printf(b,
		      "{\"version\": \"%s\", \"pid\": %ld, "
		      "\"sessions\": %u, \"installed\": %u, \"mappings\": %u, "
		      "\"neighbors\": %u, "
		      "\"rules\": %zu, \"workers\": %u, \"dispatch\": \"%s\", "
		      "\"counters\": ",
		      SP_VERSION, (long)getpid(), sessions, sessions, mappings,
		      sp.neigh_entries, qns_count(sp.qns), sp.n_workers,
		      sp.hw_rss ? "rss" : "software");
	counters_json(b, NULL);
	pools_json(b);
	histograms_json(b);
	sp_buf_printf(b, ", \"lcores\": [");
	for (unsigned w = 0; w < sp.n_workers; w++) {
		const struct sp_worker *wk = sp.workers[w];
		uint64_t busy_tsc = __atomic_load_n(&wk->busy_tsc,
						    __ATOMIC_RELAXED);

		sp_buf_printf(b, "%s\n {\"worker\": %u, \"lcore\": %u, "
			      "\"sessions\": %u, \"mappings\": %u, "
			      "\"busy_us\": %llu, \"counters\": ",
			      w ? "," : "", w, wk->lcore,
			      __atomic_load_n(&wk->nat.n_sessions, __ATOMIC_RELAXED),
			      __atomic_load_n(&wk->nat.n_mappings, __ATOMIC_RELAXED),
			      (unsigned long long)(busy_tsc /
						   (sp.tsc_hz / 1000000)));
		counters_json(b, wk->cnt);
		sp_buf_printf(b, "}");
	}
	sp_buf_printf(b, "]}\n");
}

struct rule_list {
	const struct qns_rule **r;
	size_t n;
};

static void
collect_rule(const struct qns_rule *rule, void *arg)
{
	struct rule_list *l = arg;

	l->r[l->n++] = rule;
}

static int
rule_cmp(const void *a, const void *b)
{
	const struct qns_rule *x = *(const struct qns_rule *const *)a;
	const struct qns_rule *y = *(const struct qns_rule *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* A rule as `rule add` gives it, for the command table to write back. */
static void
rule_command(const struct qns_rule *r, struct sp_cmd *cmd)
{
	struct sp_cmd_rule *c = &cmd->u.rule;
	uint64_t u = r->user;

	memset(cmd, 0, sizeof(*cmd));
	cmd->verb = SP_CMD_RULE_ADD;
	c->id = r->id;
	c->kind = r->kind;
	c->proto = r->proto;
	c->has_port = r->has_port;
	c->port = r->port;
	c->prefix = (struct sp_prefix){ .addr = r->prefix, .len = r->plen };
	if (SP_ACT_KIND(u) == SP_ACT_SNAT) {
		const struct sp_pool *pool = sp.pools[SP_ACT_POOL(u)];

		/* an SNAT `to A` has a pool of its own (rules.c) */
		c->has_pool = !pool->internal;
		c->has_to = pool->internal;
		snprintf(c->pool, sizeof(c->pool), "%s", pool->name);
		c->to = (struct sp_prefix){ .addr = pool->addrs[0], .len = 32 };
	} else {
		c->has_to = true;
		c->to = (struct sp_prefix){ .addr = SP_ACT_TO(u),
					    .len = SP_ACT_TO_LEN(u) };
		c->has_to_port = SP_ACT_HAS_TO_PORT(u);
		c->to_port = SP_ACT_TO_PORT(u);
	}
}

/* The `rule add` line of each rule, by id: written by the command table,
 * so each is what the controller writes for the rule (quicknat reload
 * compares them). */
void
sp_format_rules(struct sp_buf *b)
{
	struct rule_list l = { .n = 0 };
	size_t count = qns_count(sp.qns);

	l.r = calloc(count ? count : 1, sizeof(*l.r));
	if (l.r == NULL)
		return;
	qns_foreach(sp.qns, collect_rule, &l);
	qsort(l.r, l.n, sizeof(*l.r), rule_cmp);
	for (size_t i = 0; i < l.n; i++) {
		struct sp_cmd cmd;

		rule_command(l.r[i], &cmd);
		sp_cmd_format(&cmd, b);
		sp_buf_printf(b, "\n");
	}
	free(l.r);
}
