/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_qns FILE.json [--batch B] [--repeat R] [--linear-batch B2]
 *                     [--linear-repeat R2]
 * bench_qns FILE.json FILE.json... [--batch B] [--repeat R]
 *
 * With one file: times QNS against the linear-scan reference on the file's
 * rules and the lookup steps before its first add or remove. Each repeat
 * times a batch of lookups cycling through the file's packets; the
 * per-repeat cost is elapsed / batch, and the median, 10th and 90th
 * percentiles over the repeats are reported. The linear scan runs fewer
 * lookups so that 100,000 rules take seconds, not hours. Prints:
 * {"rules": N, "packets": P, "qns_ns": {"median": x, "p10": y, "p90": z},
 *  "linear_ns": {...}, "qns_memory_bytes": M, "qns_memory_per_rule": m,
 *  "load_ns": l, "clock_ghz": g}
 * where load_ns is what one load costs that depends on the one before and
 * goes to a random cache line of a buffer of M bytes: what a lookup pays
 * for each line of the tables it must wait for, on this machine.
 *
 * With several files: QNS side by side, for ratios between rule sets that
 * the VM's changing speed cannot skew. Each repeat times one batch of every
 * file in turn; before its batch, the file's lookups run once through all
 * its packets untimed, so that the batch meets the caches as in a run of its
 * own (every line last touched one cycle of packets ago) and not as the
 * other files left them. A shorter warm-up is not enough: with 8,192 of
 * 65,536 packets, 100,000 rules came out 1.3x slower than alone. Prints:
 * {"side_by_side": [{"rules": N, "packets": P, "qns_ns": {...}}, ...],
 *  "ratio_to_first": [{"rules": N, "median": x, "p10": y, "p90": z}, ...],
 *  "clock_ghz": g}
 * where a ratio is taken per repeat (this file's batch over the first
 * file's) before its percentiles.
 *
 * Every lookup is first checked against the file's expected id, in QNS and
 * in the linear scan, so a benchmark never times wrong answers.
 * Exit status: 0, 1 if a lookup gives a wrong answer or the rules are
 * refused, 2 for a usage or file error.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "linear_scan.h"
#include "qns.h"
#include "vector_file.h"

#define DEFAULT_BATCH 1024ul
#define DEFAULT_REPEAT 301ul
#define DEFAULT_LINEAR_REPEAT 31ul
/* Rule comparisons per linear-scan batch at most, when its batch is not given. */
#define LINEAR_BATCH_BUDGET (1ul << 24)

#define MAX_FILES 16

struct options {
	const char *path[MAX_FILES];
	size_t n_paths;
	unsigned long batch;
	unsigned long repeat;
	unsigned long linear_batch; /* 0: from LINEAR_BATCH_BUDGET */
	unsigned long linear_repeat;
};

struct stats {
	double median;
	double p10;
	double p90;
};

/* Keeps every lookup's result alive, so the compiler cannot drop one. */
static volatile uint64_t sink;

static void
usage(void)
{
	fprintf(stderr, "usage: bench_qns FILE.json [--batch B] [--repeat R] "
			"[--linear-batch B2] [--linear-repeat R2]\n"
			"       bench_qns FILE.json FILE.json... [--batch B] "
			"[--repeat R]\n");
	exit(2);
}

static unsigned long
parse_count(const char *opt, const char *text)
{
	char *end;
	unsigned long v;

	if (text == NULL)
		usage();
	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0 || text[0] == '-') {
		fprintf(stderr, "bench_qns: %s needs a positive integer, not \"%s\"\n",
			opt, text);
		exit(2);
	}
	return v;
}

static void
parse_options(int argc, char **argv, struct options *o)
{
	int i;

	*o = (struct options){ .batch = DEFAULT_BATCH,
			       .repeat = DEFAULT_REPEAT,
			       .linear_repeat = DEFAULT_LINEAR_REPEAT };
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--batch") == 0)
			o->batch = parse_count(argv[i], argv[i + 1]), i++;
		else if (strcmp(argv[i], "--repeat") == 0)
			o->repeat = parse_count(argv[i], argv[i + 1]), i++;
		else if (strcmp(argv[i], "--linear-batch") == 0)
			o->linear_batch = parse_count(argv[i], argv[i + 1]), i++;
		else if (strcmp(argv[i], "--linear-repeat") == 0)
			o->linear_repeat = parse_count(argv[i], argv[i + 1]), i++;
		else if (argv[i][0] == '-' || o->n_paths == MAX_FILES)
			usage();
		else
			o->path[o->n_paths++] = argv[i];
	}
	if (o->n_paths == 0)
		usage();
}

static inline const struct qns_rule *
qns_lookup_packet(const struct qns *q, const struct vector_packet *p)
{
	if (p->kind == VECTOR_KIND_BOTH)
		return qns_lookup(q, p->proto, p->src, p->sport, p->dst, p->dport);
	if (p->kind == QNS_SNAT)
		return qns_lookup_kind(q, QNS_SNAT, p->proto, p->src, p->sport);
	return qns_lookup_kind(q, QNS_DNAT, p->proto, p->dst, p->dport);
}

static inline const struct qns_rule *
linear_lookup_packet(const struct linear_scan *ls, const struct vector_packet *p)
{
	if (p->kind == VECTOR_KIND_BOTH)
		return linear_scan_lookup(ls, p->proto, p->src, p->sport, p->dst,
					  p->dport);
	if (p->kind == QNS_SNAT)
		return linear_scan_lookup_kind(ls, QNS_SNAT, p->proto, p->src,
					       p->sport);
	return linear_scan_lookup_kind(ls, QNS_DNAT, p->proto, p->dst, p->dport);
}

static inline uint64_t
rule_id(const struct qns_rule *r)
{
	return r != NULL ? r->id : 0;
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One add of the chain; the empty asm keeps the compiler from folding them. */
static inline uint64_t
chain_add(uint64_t x, uint64_t i)
{
	x += i;
	__asm__ volatile("" : "+r"(x));
	return x;
}

/*
 * The core's clock as this process sees it: a chain of dependent additions
 * runs one per cycle on any x86 or Arm core of the last decade, so the chain's
 * rate is cycles per second, throttling and the hypervisor's share included.
 * The paper's 43-45 ns were on a 3.5 GHz desktop; this puts our figures in
 * cycles beside them. Eight additions per iteration, so that the loop's own
 * compare and branch run beside the chain: with one, where the linker put
 * the loop decided the figure (the same code read 2.9 GHz in one build and
 * 1.4 in the next, its branch crossing a 32-byte boundary).
 */
static double
clock_ghz(void)
{
	const uint64_t rounds = 12500000ull, adds = 8 * rounds;
	uint64_t x = 0, i;
	double t0 = now_ns();

	for (i = 0; i < rounds; i++) {
		x = chain_add(x, i), x = chain_add(x, i), x = chain_add(x, i);
		x = chain_add(x, i), x = chain_add(x, i), x = chain_add(x, i);
		x = chain_add(x, i), x = chain_add(x, i);
	}
	sink += x;
	return (double)adds / (now_ns() - t0);
}

/*
 * Nanoseconds per load of a chain of dependent loads, each to a random
 * cache line of a buffer of the given size (the lines in one random cycle,
 * by Sattolo's algorithm): the latency of whichever level of the memory
 * hierarchy a buffer of that size lives in, TLB misses included. Returns
 * a negative number when the buffer cannot be allocated.
 */
static double
load_ns(size_t bytes)
{
	const size_t words_per_line = 64 / sizeof(uint64_t);
	const uint64_t steps = 4000000ull;
	size_t lines = bytes / 64 > 2 ? bytes / 64 : 2, i;
	uint64_t *buf = aligned_alloc(64, lines * 64);
	uint64_t rng = 0x9e3779b97f4a7c15ull, at = 0, k;
	double t0;

	if (buf == NULL)
		return -1.0;
	for (i = 0; i < lines; i++)
		buf[i * words_per_line] = i;
	for (i = lines - 1; i > 0; i--) {
		size_t j;
		uint64_t t;

		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		j = (size_t)(rng % i); /* j < i: one cycle through all lines */
		t = buf[i * words_per_line];
		buf[i * words_per_line] = buf[j * words_per_line];
		buf[j * words_per_line] = t;
	}
	for (k = 0; k < lines; k++) /* untimed: the pages are touched */
		at = buf[at * words_per_line];
	t0 = now_ns();
	for (k = 0; k < steps; k++)
		at = buf[at * words_per_line];
	t0 = (now_ns() - t0) / (double)steps;
	sink += at;
	free(buf);
	return t0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values. */
static double
percentile(const double *v, size_t n, double p)
{
	size_t rank = (size_t)ceil(p * (double)n);

	return v[rank > 0 ? rank - 1 : 0];
}

static struct stats
summarise(double *v, size_t n)
{
	struct stats s;

	qsort(v, n, sizeof(*v), cmp_double);
	s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	s.p10 = percentile(v, n, 0.10);
	s.p90 = percentile(v, n, 0.90);
	return s;
}

/*
 * The two timing loops are spelled out rather than sharing a function
 * pointer, so that the call in the loop is direct for both.
 */

/* Looks up batch packets from *j on (cycling); returns the sum of the ids. */
static uint64_t
run_qns(const struct qns *q, const struct vector_packet *pkt, size_t n,
	size_t *j, unsigned long batch)
{
	uint64_t acc = 0;
	unsigned long i;

	for (i = 0; i < batch; i++) {
		acc += rule_id(qns_lookup_packet(q, &pkt[*j]));
		if (++*j == n)
			*j = 0;
	}
	return acc;
}

/* Nanoseconds per lookup of one timed batch. */
static double
time_qns_batch(const struct qns *q, const struct vector_packet *pkt, size_t n,
	       size_t *j, unsigned long batch)
{
	double t0 = now_ns();

	sink += run_qns(q, pkt, n, j, batch);
	return (now_ns() - t0) / (double)batch;
}

static struct stats
time_qns(const struct qns *q, const struct vector_packet *pkt, size_t n,
	 unsigned long batch, unsigned long repeat, double *ns)
{
	size_t j = 0;
	unsigned long r;

	for (r = 0; r < repeat; r++)
		ns[r] = time_qns_batch(q, pkt, n, &j, batch);
	return summarise(ns, repeat);
}

static struct stats
time_linear(const struct linear_scan *ls, const struct vector_packet *pkt,
	    size_t n, unsigned long batch, unsigned long repeat, double *ns)
{
	size_t j = 0;
	unsigned long r, i;

	for (r = 0; r < repeat; r++) {
		uint64_t acc = 0;
		double t0 = now_ns();

		for (i = 0; i < batch; i++) {
			acc += rule_id(linear_lookup_packet(ls, &pkt[j]));
			if (++j == n)
				j = 0;
		}
		ns[r] = (now_ns() - t0) / (double)batch;
		sink += acc;
	}
	return summarise(ns, repeat);
}

/* One vector file, loaded and checked, with its QNS and linear scan. */
struct bench_case {
	struct vector_file vf;
	struct vector_packet *pkt; /* the lookups before the first change */
	size_t n;
	struct qns *q;
	struct linear_scan *ls;
};

/* Returns 0, 1 (rules refused or a wrong answer) or 2 (file or memory). */
static int
case_load(const char *path, struct bench_case *c)
{
	char err[512];
	size_t i;
	long bad;
	int rc;

	memset(c, 0, sizeof(*c));
	if (vector_file_load(path, &c->vf, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_qns: %s\n", err);
		return 2;
	}
	c->pkt = calloc(c->vf.n_steps + 1, sizeof(*c->pkt));
	c->q = qns_create(NULL);
	c->ls = linear_scan_create();
	if (c->pkt == NULL || c->q == NULL || c->ls == NULL)
		return 2;
	for (i = 0; i < c->vf.n_steps && c->vf.steps[i].type == VECTOR_LOOKUP; i++)
		c->pkt[c->n++] = c->vf.steps[i].packet;
	if (c->n == 0) {
		fprintf(stderr, "bench_qns: %s: no lookup before the first change\n",
			path);
		return 2;
	}
	if (c->n < c->vf.n_steps)
		fprintf(stderr, "bench_qns: %s: using the %zu lookups before "
			"steps[%zu], the first change\n", path, c->n, c->n);
	for (i = 0; i < c->vf.n_rules; i++) {
		rc = qns_add(c->q, &c->vf.rules[i]);
		if (rc != 0) {
			fprintf(stderr, "bench_qns: %s: rules[%zu]: qns_add: %s\n",
				path, i, strerror(-rc));
			return 1;
		}
	}
	rc = linear_scan_add_bulk(c->ls, c->vf.rules, c->vf.n_rules, &bad);
	if (rc != 0) {
		fprintf(stderr, "bench_qns: %s: rules[%ld]: linear_scan: %s\n",
			path, bad, strerror(-rc));
		return 1;
	}

	/* Check every answer (and warm the caches) before timing anything. */
	for (i = 0; i < c->n; i++) {
		uint64_t want = c->vf.steps[i].expect_id;
		uint64_t got_q = rule_id(qns_lookup_packet(c->q, &c->pkt[i]));
		uint64_t got_l = rule_id(linear_lookup_packet(c->ls, &c->pkt[i]));

		if (got_q != want || got_l != want) {
			fprintf(stderr, "bench_qns: %s: steps[%zu]: expected %llu, "
				"qns gave %llu, linear_scan gave %llu (0: none)\n",
				path, i, (unsigned long long)want,
				(unsigned long long)got_q,
				(unsigned long long)got_l);
			return 1;
		}
	}
	return 0;
}

static void
case_free(struct bench_case *c)
{
	free(c->pkt);
	linear_scan_free(c->ls);
	qns_free(c->q);
	vector_file_free(&c->vf);
}

static void
print_stats(const char *name, struct stats s)
{
	printf("\"%s\": {\"median\": %.2f, \"p10\": %.2f, \"p90\": %.2f}", name,
	       s.median, s.p10, s.p90);
}

static int
bench_one(struct bench_case *c, const struct options *o)
{
	unsigned long linear_batch = o->linear_batch;
	struct stats qs, lsn;
	size_t mem;
	double *ns;

	if (linear_batch == 0) {
		unsigned long fit = LINEAR_BATCH_BUDGET /
				    (c->vf.n_rules > 0 ? c->vf.n_rules : 1);

		linear_batch = fit < 1 ? 1 : fit < o->batch ? fit : o->batch;
	}
	ns = calloc(o->repeat > o->linear_repeat ? o->repeat : o->linear_repeat,
		    sizeof(*ns));
	if (ns == NULL)
		return 2;
	qs = time_qns(c->q, c->pkt, c->n, o->batch, o->repeat, ns);
	lsn = time_linear(c->ls, c->pkt, c->n, linear_batch, o->linear_repeat,
			  ns);
	mem = qns_memory(c->q);

	printf("{\"rules\": %zu, \"packets\": %zu, ", c->vf.n_rules, c->n);
	print_stats("qns_ns", qs);
	printf(", ");
	print_stats("linear_ns", lsn);
	printf(", \"qns_memory_bytes\": %zu, \"qns_memory_per_rule\": %.1f, "
	       "\"load_ns\": %.2f, \"clock_ghz\": %.2f}\n",
	       mem, c->vf.n_rules > 0 ? (double)mem / (double)c->vf.n_rules : 0.0,
	       load_ns(mem), clock_ghz());
	free(ns);
	return 0;
}

static int
bench_side_by_side(struct bench_case *c, size_t files,
		   const struct options *o)
{
	double *ns = calloc(files * o->repeat, sizeof(*ns));
	/* One file's repeats at a time: sorted copies, then ratios. */
	double *scratch = calloc(o->repeat, sizeof(*scratch));
	size_t j[MAX_FILES] = { 0 }, f;
	unsigned long r;

	if (ns == NULL || scratch == NULL)
		return 2;
	for (r = 0; r < o->repeat; r++) {
		for (f = 0; f < files; f++) {
			/* Untimed: one cycle of the file's packets. */
			sink += run_qns(c[f].q, c[f].pkt, c[f].n, &j[f], c[f].n);
			ns[f * o->repeat + r] = time_qns_batch(
				c[f].q, c[f].pkt, c[f].n, &j[f], o->batch);
		}
	}
	printf("{\"side_by_side\": [");
	for (f = 0; f < files; f++) {
		printf("%s{\"rules\": %zu, \"packets\": %zu, ", f ? ", " : "",
		       c[f].vf.n_rules, c[f].n);
		/* Sorted in a copy: the ratios need ns[] in time order. */
		memcpy(scratch, &ns[f * o->repeat], o->repeat * sizeof(*scratch));
		print_stats("qns_ns", summarise(scratch, o->repeat));
		printf("}");
	}
	printf("], \"ratio_to_first\": [");
	for (f = 0; f < files; f++) {
		struct stats s;

		for (r = 0; r < o->repeat; r++)
			scratch[r] = ns[f * o->repeat + r] / ns[r];
		s = summarise(scratch, o->repeat);
		printf("%s{\"rules\": %zu, \"median\": %.3f, \"p10\": %.3f, "
		       "\"p90\": %.3f}", f ? ", " : "", c[f].vf.n_rules, s.median,
		       s.p10, s.p90);
	}
	printf("], \"clock_ghz\": %.2f}\n", clock_ghz());
	free(scratch);
	free(ns);
	return 0;
}

int
main(int argc, char **argv)
{
	struct bench_case c[MAX_FILES];
	struct options o;
	size_t f, loaded;
	int rc = 0;

	parse_options(argc, argv, &o);
	for (loaded = 0; loaded < o.n_paths && rc == 0; loaded++)
		rc = case_load(o.path[loaded], &c[loaded]);
	if (rc == 0)
		rc = o.n_paths == 1 ? bench_one(&c[0], &o) :
				      bench_side_by_side(c, o.n_paths, &o);
	for (f = 0; f < loaded; f++)
		case_free(&c[f]);
	return rc;
}
