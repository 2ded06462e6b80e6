/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>

#include "control/format.h"
#include "dataplane/sp.h"
#include "qns.h"

void
sp_buf_printf(struct sp_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < room) {
			b->len += (size_t)n;
			if (b->sink != NULL && b->len >= 65536)
				sp_buf_drain(b);
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap - b->len <= (size_t)n)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (p == NULL)
			return;
		b->p = p;
		b->cap = cap;
	}
}

void
sp_buf_drain(struct sp_buf *b)
{
	if (b->sink == NULL || b->len == 0)
		return;
	b->sink(b, b->sink_arg);
	b->len = 0;
}

void
sp_buf_json_string(struct sp_buf *b, const char *s)
{
	sp_buf_printf(b, "\"");
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			sp_buf_printf(b, "\\%c", c);
		else if (c < 0x20)
			sp_buf_printf(b, "\\u%04x", c);
		else
			sp_buf_printf(b, "%c", c);
	}
	sp_buf_printf(b, "\"");
}

void
sp_buf_free(struct sp_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

const char *const sp_origin_names[] = { "snat", "inbound", "dnat" };

int
sp_session_copy(const struct sp_session *s, struct sp_session *out)
{
	for (int attempt = 0; attempt < 4; attempt++) {
		uint32_t a = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);

		if (a & 1)
			continue;
		memcpy(out, s, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == a)
			return out->proto != 0;
	}
	return 0;
}

const char *const sp_tcp_phase_names[] = {
	[SP_TCP_OPENING] = "opening", [SP_TCP_ESTABLISHED] = "established",
	[SP_TCP_CLOSING] = "closing", [SP_TCP_RESET] = "reset",
};

static const char *
tcp_state(const struct sp_session *s)
{
	return s->proto == IPPROTO_TCP ? sp_tcp_phase_names[sp_nat_tcp_phase(s)] :
					 NULL;
}

void
sp_format_endpoint(struct sp_buf *b, const char *name, rte_be32_t addr,
		   rte_be16_t port)
{
	char ip[16];

	sp_buf_printf(b, "\"%s\": \"%s:%u\"", name,
		      sp_ip_str(rte_be_to_cpu_32(addr), ip),
		      rte_be_to_cpu_16(port));
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
				      sp_origin_names[s.origin < 3 ? s.origin : 0],
				      s.rule_id);
			sp_format_endpoint(b, "internal", s.int_addr, s.int_port);
			sp_buf_printf(b, ", ");
			sp_format_endpoint(b, "external", s.ext_addr, s.ext_port);
			sp_buf_printf(b, ", ");
			sp_format_endpoint(b, "remote", s.rem_addr, s.rem_port);
			sp_buf_printf(b, ", \"age_s\": %.1f, \"idle_s\": %.1f, "
				      "\"timeout_s\": %u, \"installed\": true, "
				      "\"offloaded\": %s, \"worker\": %u",
				      (double)(uint32_t)(now - s.created) / 1000.0,
				      (double)(uint32_t)(now - s.last_seen) / 1000.0,
				      sp_nat_timeout_ms(rt, &s) / 1000u,
				      (s.flags & SP_SESS_OFFLOADED) ? "true" : "false", w);
			state = tcp_state(&s);
			if (state != NULL)
				sp_buf_printf(b, ", \"tcp_state\": \"%s\"", state);
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

void
sp_format_stats_json(struct sp_buf *b)
{
	uint32_t sessions = sp_session_count();
	uint32_t mappings = 0;

	for (unsigned w = 0; w < sp.n_workers; w++)
		mappings += __atomic_load_n(&sp.workers[w]->nat.n_mappings,
					    __ATOMIC_RELAXED);
	sp_buf_printf(b,
		      "{\"sessions\": %u, \"installed\": %u, \"mappings\": %u, "
		      "\"rules\": %zu, \"workers\": %u, \"dispatch\": \"%s\", "
		      "\"counters\": ",
		      sessions, sessions, mappings, qns_count(sp.qns),
		      sp.n_workers, sp.hw_rss ? "rss" : "software");
	counters_json(b, NULL);
	pools_json(b);
	sp_buf_printf(b, ", \"lcores\": [");
	for (unsigned w = 0; w < sp.n_workers; w++) {
		const struct sp_worker *wk = sp.workers[w];

		sp_buf_printf(b, "%s\n {\"worker\": %u, \"lcore\": %u, "
			      "\"sessions\": %u, \"mappings\": %u, "
			      "\"busy_us\": %llu, \"counters\": ",
			      w ? "," : "", w, wk->lcore,
			      __atomic_load_n(&wk->nat.n_sessions, __ATOMIC_RELAXED),
			      __atomic_load_n(&wk->nat.n_mappings, __ATOMIC_RELAXED),
			      (unsigned long long)(wk->busy_tsc /
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
		const struct qns_rule *r = l.r[i];
		uint64_t u = r->user;
		char ip[16];

		sp_buf_printf(b, "rule add id %u type %s prefix %s/%u", r->id,
			      r->kind == QNS_SNAT ? "snat" : "dnat",
			      sp_ip_str(r->prefix, ip), r->plen);
		if (r->has_port)
			sp_buf_printf(b, " port %u", r->port);
		sp_buf_printf(b, " protocol %s", sp_proto_name(r->proto));
		if (SP_ACT_KIND(u) == SP_ACT_SNAT) {
			const struct sp_pool *pool = sp.pools[SP_ACT_POOL(u)];

			if (pool->internal)
				sp_buf_printf(b, " to %s/32",
					      sp_ip_str(pool->addrs[0], ip));
			else
				sp_buf_printf(b, " pool %s", pool->name);
		} else {
			sp_buf_printf(b, " to %s/%u", sp_ip_str(SP_ACT_TO(u), ip),
				      SP_ACT_TO_LEN(u));
			if (SP_ACT_HAS_TO_PORT(u))
				sp_buf_printf(b, " to_port %u", SP_ACT_TO_PORT(u));
		}
		sp_buf_printf(b, "\n");
	}
	free(l.r);
}
