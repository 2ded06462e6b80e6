/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_acl FILE.json... [--repeat R]
 *
 * QNS against DPDK's own classifier, rte_acl, on the same rules and packets
 * (the QNS vector files bench/qns_bench.py writes), side by side in one run:
 * for each file, both answer every lookup of the file first and must agree
 * with its expected ids; then, per repeat, a batch of every packet through
 * QNS (one lookup at a time, as swpath's miss path calls it), through
 * rte_acl one packet per call, and through rte_acl in bursts of 64 (its
 * fast case); the medians are reported. Also: rte_acl's build time for the
 * whole rule set, the cost of one rule change (rte_acl: the rule added, the
 * context rebuilt, which is how it changes; QNS: qns_add then qns_del of the
 * same rule), and QNS's memory. Prints one JSON object:
 * {"sizes": [{"rules": N, "packets": P, "qns_ns": m, "acl_single_ns": m,
 *   "acl_burst_ns": m, "acl_build_ms": b, "acl_change_ms": c,
 *   "qns_change_ns": q, "qns_memory_bytes": m}, ...]}
 *
 * The rule order of docs/qns.md (DNAT before SNAT, longer prefix first, exact
 * port before any port, exact protocol before any) becomes rte_acl priorities;
 * two rules of one priority never match one packet, so the answers are QNS's.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_acl.h>
#include <rte_eal.h>
#include <rte_errno.h>

#include "qns.h"
#include "sp_test_util.h"
#include "vector_file.h"

#define BURST 64
#define DEFAULT_REPEAT 31

/* One packet's key as rte_acl reads it: every field in network order. */
struct acl_key {
	uint8_t proto;
	uint32_t src;
	uint32_t dst;
	uint16_t sport;
	uint16_t dport;
} __attribute__((packed));

enum { F_PROTO, F_SRC, F_DST, F_SPORT, F_DPORT, N_FIELDS };

static const struct rte_acl_field_def field_defs[N_FIELDS] = {
	{ .type = RTE_ACL_FIELD_TYPE_BITMASK, .size = sizeof(uint8_t),
	  .field_index = F_PROTO, .input_index = 0,
	  .offset = offsetof(struct acl_key, proto) },
	{ .type = RTE_ACL_FIELD_TYPE_MASK, .size = sizeof(uint32_t),
	  .field_index = F_SRC, .input_index = 1,
	  .offset = offsetof(struct acl_key, src) },
	{ .type = RTE_ACL_FIELD_TYPE_MASK, .size = sizeof(uint32_t),
	  .field_index = F_DST, .input_index = 2,
	  .offset = offsetof(struct acl_key, dst) },
	{ .type = RTE_ACL_FIELD_TYPE_RANGE, .size = sizeof(uint16_t),
	  .field_index = F_SPORT, .input_index = 3,
	  .offset = offsetof(struct acl_key, sport) },
	{ .type = RTE_ACL_FIELD_TYPE_RANGE, .size = sizeof(uint16_t),
	  .field_index = F_DPORT, .input_index = 3,
	  .offset = offsetof(struct acl_key, dport) },
};

RTE_ACL_RULE_DEF(acl_rule, N_FIELDS);

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, unsigned n)
{
	qsort(v, n, sizeof(v[0]), cmp_double);
	return v[n / 2];
}

/* A QNS rule as an rte_acl rule, with its place in QNS's order. */
static void
to_acl(const struct qns_rule *r, struct acl_rule *a)
{
	uint32_t wild_lo = 0, wild_hi = 65535;

	memset(a, 0, sizeof(*a));
	a->data.category_mask = 1;
	a->data.userdata = r->id;
	a->data.priority = 1 + ((r->kind == QNS_DNAT) << 10 | r->plen << 4 |
				r->has_port << 1 | (r->proto != QNS_PROTO_ANY));
	a->field[F_PROTO].value.u8 = r->proto;
	a->field[F_PROTO].mask_range.u8 = r->proto != QNS_PROTO_ANY ? 0xff : 0;
	a->field[F_SRC].mask_range.u32 = 0;
	a->field[F_DST].mask_range.u32 = 0;
	a->field[F_SPORT].value.u16 = (uint16_t)wild_lo;
	a->field[F_SPORT].mask_range.u16 = (uint16_t)wild_hi;
	a->field[F_DPORT].value.u16 = (uint16_t)wild_lo;
	a->field[F_DPORT].mask_range.u16 = (uint16_t)wild_hi;
	if (r->kind == QNS_SNAT) {
		a->field[F_SRC].value.u32 = r->prefix;
		a->field[F_SRC].mask_range.u32 = r->plen;
		if (r->has_port) {
			a->field[F_SPORT].value.u16 = r->port;
			a->field[F_SPORT].mask_range.u16 = r->port;
		}
	} else {
		a->field[F_DST].value.u32 = r->prefix;
		a->field[F_DST].mask_range.u32 = r->plen;
		if (r->has_port) {
			a->field[F_DPORT].value.u16 = r->port;
			a->field[F_DPORT].mask_range.u16 = r->port;
		}
	}
}

static struct rte_acl_ctx *
acl_build(const char *name, const struct acl_rule *rules, size_t n,
	  double *build_ms)
{
	struct rte_acl_param param = {
		.name = name, .socket_id = SOCKET_ID_ANY,
		.rule_size = RTE_ACL_RULE_SZ(N_FIELDS),
		.max_rule_num = (uint32_t)n + 1,
	};
	struct rte_acl_config cfg = { .num_categories = 1,
				      .num_fields = N_FIELDS };
	struct rte_acl_ctx *ctx = rte_acl_create(&param);
	double t0;

	if (ctx == NULL)
		return NULL;
	memcpy(cfg.defs, field_defs, sizeof(field_defs));
	t0 = now_ns();
	if (rte_acl_add_rules(ctx, (const struct rte_acl_rule *)rules,
			      (uint32_t)n) != 0 ||
	    rte_acl_build(ctx, &cfg) != 0) {
		rte_acl_free(ctx);
		return NULL;
	}
	*build_ms = (now_ns() - t0) / 1e6;
	return ctx;
}

/* One file's run: its rules in QNS and in rte_acl, the lookups before its
 * first change, and what was measured. */
struct run {
	const char *path;
	struct vector_file vf;
	struct qns *q;
	struct rte_acl_ctx *ctx;
	struct acl_rule *rules;
	size_t n;                       /* rules */
	struct acl_key *keys;
	const uint8_t **data;
	uint32_t *expect, *got;
	size_t n_keys;
	double *t_qns, *t_single, *t_burst;
	double build_ms, change_ms, qns_change_ns;
};

static void
run_free(struct run *r)
{
	rte_acl_free(r->ctx);
	qns_free(r->q);
	vector_file_free(&r->vf);
	free(r->rules);
	free(r->keys);
	free(r->data);
	free(r->expect);
	free(r->got);
	free(r->t_qns);
	free(r->t_single);
	free(r->t_burst);
}

/* The file's rules into QNS and rte_acl's form, and the lookups before its
 * first change, in their order. */
static int
run_load(struct run *r, unsigned repeat)
{
	char err[512];

	if (vector_file_load(r->path, &r->vf, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	r->q = qns_create(NULL);
	r->rules = calloc(r->vf.n_rules + 1, sizeof(*r->rules));
	r->keys = calloc(r->vf.n_steps, sizeof(*r->keys));
	r->data = calloc(r->vf.n_steps, sizeof(*r->data));
	r->expect = calloc(r->vf.n_steps, sizeof(*r->expect));
	r->got = calloc(r->vf.n_steps, sizeof(*r->got));
	r->t_qns = calloc(repeat, sizeof(double));
	r->t_single = calloc(repeat, sizeof(double));
	r->t_burst = calloc(repeat, sizeof(double));
	for (size_t i = 0; i < r->vf.n_rules; i++) {
		if (qns_add(r->q, &r->vf.rules[i]) != 0) {
			fprintf(stderr, "%s: rule %u refused\n", r->path,
				r->vf.rules[i].id);
			return 1;
		}
		to_acl(&r->vf.rules[i], &r->rules[r->n++]);
	}
	for (size_t i = 0; i < r->vf.n_steps &&
			   r->vf.steps[i].type == VECTOR_LOOKUP; i++) {
		const struct vector_packet *p = &r->vf.steps[i].packet;

		if (p->kind != VECTOR_KIND_BOTH)
			continue;
		r->keys[r->n_keys] = (struct acl_key){
			.proto = p->proto, .src = htonl(p->src),
			.dst = htonl(p->dst), .sport = htons(p->sport),
			.dport = htons(p->dport),
		};
		r->data[r->n_keys] = (const uint8_t *)&r->keys[r->n_keys];
		r->expect[r->n_keys++] = r->vf.steps[i].expect_id;
	}
	return 0;
}

/* Both must give every expected answer before anything is timed. */
static int
run_check(struct run *r)
{
	rte_acl_classify(r->ctx, r->data, r->got, (uint32_t)r->n_keys, 1);
	for (size_t i = 0; i < r->n_keys; i++) {
		const struct vector_packet *p = &r->vf.steps[i].packet;
		const struct qns_rule *q = qns_lookup(r->q, p->proto, p->src,
						      p->sport, p->dst, p->dport);

		if ((q ? q->id : 0) != r->expect[i] || r->got[i] != r->expect[i]) {
			fprintf(stderr, "%s: lookup %zu: expected %u, QNS %u, rte_acl %u\n",
				r->path, i, r->expect[i], q ? q->id : 0, r->got[i]);
			return 1;
		}
	}
	return 0;
}

/* Round k: QNS, rte_acl one key at a time, rte_acl by bursts (ns/key). */
static void
run_lookups(struct run *r, unsigned k)
{
	volatile uintptr_t sink = 0;
	double t0 = now_ns();

	for (size_t i = 0; i < r->n_keys; i++) {
		const struct vector_packet *p = &r->vf.steps[i].packet;

		sink += (uintptr_t)qns_lookup(r->q, p->proto, p->src, p->sport,
					      p->dst, p->dport);
	}
	r->t_qns[k] = (now_ns() - t0) / (double)r->n_keys;
	t0 = now_ns();
	for (size_t i = 0; i < r->n_keys; i++)
		rte_acl_classify(r->ctx, &r->data[i], &r->got[i], 1, 1);
	r->t_single[k] = (now_ns() - t0) / (double)r->n_keys;
	t0 = now_ns();
	for (size_t i = 0; i + BURST <= r->n_keys; i += BURST)
		rte_acl_classify(r->ctx, &r->data[i], &r->got[i], BURST, 1);
	r->t_burst[k] = (now_ns() - t0) / (double)(r->n_keys / BURST * BURST);
	(void)sink;
}

/* One rule change: rte_acl adds it and rebuilds its tries; QNS adds and
 * deletes it in place. */
static int
run_change(struct run *r)
{
	struct qns_rule extra = { .id = 0xfffffff0u, .prefix = 0x0a0b0c00,
				  .plen = 24, .proto = QNS_PROTO_ANY,
				  .kind = QNS_SNAT };
	struct rte_acl_config cfg = { .num_categories = 1,
				      .num_fields = N_FIELDS };
	struct acl_rule a;
	double t0;

	memcpy(cfg.defs, field_defs, sizeof(field_defs));
	to_acl(&extra, &a);
	t0 = now_ns();
	if (rte_acl_add_rules(r->ctx, (const struct rte_acl_rule *)&a, 1) != 0 ||
	    rte_acl_build(r->ctx, &cfg) != 0) {
		fprintf(stderr, "%s: rte_acl rebuild failed\n", r->path);
		return 1;
	}
	r->change_ms = (now_ns() - t0) / 1e6;
	t0 = now_ns();
	for (int i = 0; i < 1000; i++) {
		qns_add(r->q, &extra);
		qns_del(r->q, extra.id);
	}
	r->qns_change_ns = (now_ns() - t0) / 1000.0;
	return 0;
}

static int
bench_file(const char *path, unsigned repeat, int first)
{
	struct run r = { .path = path };
	char name[64];
	int rc = run_load(&r, repeat);

	if (rc == 0) {
		snprintf(name, sizeof(name), "qns-vs-acl-%zu", r.n);
		r.ctx = acl_build(name, r.rules, r.n, &r.build_ms);
		if (r.ctx == NULL) {
			fprintf(stderr, "%s: rte_acl: %s\n", path,
				rte_strerror(rte_errno));
			rc = 1;
		}
	}
	if (rc == 0)
		rc = run_check(&r);
	for (unsigned k = 0; rc == 0 && k < repeat; k++)
		run_lookups(&r, k);
	if (rc == 0)
		rc = run_change(&r);
	if (rc == 0)
		printf("%s\n  {\"rules\": %zu, \"packets\": %zu, \"qns_ns\": %.2f, "
		       "\"acl_single_ns\": %.2f, \"acl_burst_ns\": %.2f, "
		       "\"acl_build_ms\": %.3f, \"acl_change_ms\": %.3f, "
		       "\"qns_change_ns\": %.1f, \"qns_memory_bytes\": %zu}",
		       first ? "" : ",", r.n, r.n_keys, median(r.t_qns, repeat),
		       median(r.t_single, repeat), median(r.t_burst, repeat),
		       r.build_ms, r.change_ms, r.qns_change_ns, qns_memory(r.q));
	run_free(&r);
	return rc;
}

int
main(int argc, char **argv)
{
	unsigned repeat = DEFAULT_REPEAT;
	int first = 1, rc;

	if (sp_test_eal_init(argv[0]) < 0) {
		fprintf(stderr, "bench_acl: EAL start failed\n");
		return 2;
	}
	printf("{\"sizes\": [");
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
			repeat = (unsigned)atoi(argv[++i]);
			continue;
		}
		rc = bench_file(argv[i], repeat ? repeat : 1, first);
		if (rc != 0)
			return rc;
		first = 0;
	}
	printf("\n]}\n");
	return 0;
}
