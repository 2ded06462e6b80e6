/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Any SWX spec through bench_swx's harness (harness.h): DPDK's own example
 * programs and the hand-written NAT fast path (nat_fastpath.spec) measured
 * exactly as the P4 program is, so the figures say what the pipeline itself
 * can forward on this machine (issue #33).
 *
 *   bench_swx_spec [-t TABLE FILE]... [-r REGARRAY]... [-s TABLE]... [-o DIR]
 *                  [-n PACKETS] [-c CC] [-C CACHE] [-R | -l LEARN] SPEC FRAMES SECONDS
 *
 * Port in 0 is a `source` replaying FRAMES (a pcap file) in a loop, each
 * frame copied into a fresh mbuf as it enters; ports out 0 to 3 are
 * `sink`s (-o DIR: each writes DIR/portK.pcap), port out 4 DPDK's drop
 * port. -t fills TABLE from FILE, entries in DPDK's text form ("match ...
 * action ..."), committed before any packet. With SECONDS > 0, a warm-up
 * (every frame once) then a timed run; with -n, exactly PACKETS frames go
 * through and the run stops (the output check, and the instruction count
 * with a tracing compiler, -c). -R adds port in 1, an empty ring, as
 * bench_swx has the P4 program's CPU port: the pipeline's rx then polls it
 * every other packet, as a switch with a controller does. -l adds port in
 * 1, a source that replays the pcap file LEARN once (an instance's learn
 * tags, for the P4 program): the pipeline's rx takes its input ports in
 * turn, so frame K of LEARN goes in beside frame K of FRAMES, and a test
 * whose traffic must find what LEARN taught puts as many frames, and the
 * 16 packets a pipeline has in flight, in front of it; -n then counts
 * LEARN's frames too. -r adds the
 * register array's non-zero slots to the output (`regarrays`: the
 * program's counters, which swpath/swx/tests/test_program_fastpath.py
 * compares). -s adds the table's hits and misses (`tables`), the lookups
 * the program's fast path repeats taken out as quicknat-swx takes them out
 * (src/fastpath_stats.h). Prints one JSON object: frames, entries, packets out of ports
 * 0-3 in the timed run, seconds, Mpps, and per port what left since the
 * start (`out`, `dropped`).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_swx_ctl.h>
#include <rte_swx_pipeline.h>

#include "fastpath_stats.h"
#include "harness.h"

#define PORTS_OUT 4
#define DROP_PORT PORTS_OUT	/* DPDK adds it after the I/O spec's ports */
#define TABLES_MAX 8
#define REGARRAYS_MAX 8
#define STATS_MAX 8
#define COUNT_MAX (1u << 26)	/* -n: bounded, so a stuck pipeline ends */

struct args {
	const char *spec, *frames, *out_dir, *cc, *cache, *learn;
	const char *table[TABLES_MAX], *table_file[TABLES_MAX];
	unsigned n_tables;
	const char *regarray[REGARRAYS_MAX];
	unsigned n_regarrays;
	const char *stats[STATS_MAX];
	unsigned n_stats;
	bool cpu_ring;		/* -R */
	long learn_frames;	/* -l: LEARN's frames */
	double seconds;
	uint64_t packets;	/* -n */
};

static int
usage(void)
{
	fprintf(stderr, "usage: bench_swx_spec [-t TABLE FILE]... [-r REGARRAY]... [-s TABLE]... "
			"[-o DIR] [-n PACKETS] [-c CC] [-C CACHE] [-R | -l LEARN] SPEC FRAMES SECONDS\n");
	return 2;
}

static int
parse_args(int argc, char **argv, struct args *a)
{
	int i = 1;

	for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
		const char *opt = argv[i];

		if (strcmp(opt, "-t") == 0 && i + 2 < argc && a->n_tables < TABLES_MAX) {
			a->table[a->n_tables] = argv[++i];
			a->table_file[a->n_tables++] = argv[++i];
		} else if (strcmp(opt, "-R") == 0) {
			a->cpu_ring = true;
		} else if (i + 1 >= argc) {
			return -1;
		} else if (strcmp(opt, "-r") == 0 && a->n_regarrays < REGARRAYS_MAX) {
			a->regarray[a->n_regarrays++] = argv[++i];
		} else if (strcmp(opt, "-s") == 0 && a->n_stats < STATS_MAX) {
			a->stats[a->n_stats++] = argv[++i];
		} else if (strcmp(opt, "-o") == 0) {
			a->out_dir = argv[++i];
		} else if (strcmp(opt, "-n") == 0) {
			a->packets = strtoull(argv[++i], NULL, 10);
			if (a->packets == 0 || a->packets > COUNT_MAX)
				return -1;
		} else if (strcmp(opt, "-c") == 0) {
			a->cc = argv[++i];
		} else if (strcmp(opt, "-C") == 0) {
			a->cache = argv[++i];
		} else if (strcmp(opt, "-l") == 0) {
			a->learn = argv[++i];
		} else {
			return -1;
		}
	}
	/* DPDK 22.11 takes a power of two of input ports */
	if (argc - i != 3 || (a->learn && a->cpu_ring))
		return -1;
	a->spec = argv[i];
	a->frames = argv[i + 1];
	a->seconds = strtod(argv[i + 2], NULL);
	return (a->seconds > 0) != (a->packets > 0) ? 0 : -1;
}

/* The I/O spec: the source on port in 0, the sinks on ports out 0-3. */
static struct rte_swx_pipeline *
build(const struct args *a, long frames, const char *cache)
{
	char iospec[8192];
	int at;

	/* the source port keeps a copy of every frame; the rest is in flight */
	if (rte_pktmbuf_pool_create("MP", (unsigned)(frames + a->learn_frames) + 16384, 256, 0,
				    2048 + RTE_PKTMBUF_HEADROOM, 0) == NULL) {
		fprintf(stderr, "bench_swx_spec: mempool: %s\n", rte_strerror(rte_errno));
		return NULL;
	}
	/* timed: the frames in a loop until the time is up; -n: as many
	 * passes as PACKETS needs and no more, so that each frame goes through
	 * as often as the others (in a loop, the packets whose path is short
	 * would leave first and be counted in place of the others) */
	uint64_t own = a->packets > (uint64_t)a->learn_frames ? a->packets - (uint64_t)a->learn_frames : 1;
	uint64_t loops = a->packets ? (own + (uint64_t)frames - 1) / (uint64_t)frames : 0;

	at = snprintf(iospec, sizeof(iospec),
		      "port in 0 source mempool MP file %s loop %" PRIu64 " packets %ld\n", a->frames,
		      loops, frames);
	if (a->cpu_ring) {
		if (rte_ring_create("CPU", 64, 0, 0) == NULL) {
			fprintf(stderr, "bench_swx_spec: ring: %s\n", rte_strerror(rte_errno));
			return NULL;
		}
		at += snprintf(iospec + at, sizeof(iospec) - (size_t)at, "port in 1 ring CPU bsz 32\n");
	}
	if (a->learn)
		at += snprintf(iospec + at, sizeof(iospec) - (size_t)at,
			       "port in 1 source mempool MP file %s loop 1 packets %ld\n", a->learn,
			       a->learn_frames);
	for (int port = 0; port < PORTS_OUT; port++) {
		if (a->out_dir)
			at += snprintf(iospec + at, sizeof(iospec) - (size_t)at,
				       "port out %d sink file %s/port%d.pcap\n", port, a->out_dir, port);
		else
			at += snprintf(iospec + at, sizeof(iospec) - (size_t)at,
				       "port out %d sink file none\n", port);
	}
	/* DPDK's I/O spec parser refuses a token of RTE_SWX_NAME_SIZE (64)
	 * characters or more with a bare EINVAL: say which path it is */
	const char *too_long = strlen(a->frames) >= RTE_SWX_NAME_SIZE ? a->frames
			       : a->learn && strlen(a->learn) >= RTE_SWX_NAME_SIZE ? a->learn
			       : a->out_dir && strlen(a->out_dir) + sizeof("/portN.pcap") > RTE_SWX_NAME_SIZE
				       ? a->out_dir : NULL;

	if (too_long) {
		fprintf(stderr, "bench_swx_spec: %s: DPDK's I/O spec takes paths of at most %d "
				"characters\n", too_long, RTE_SWX_NAME_SIZE - 1);
		return NULL;
	}
	return bench_build(a->spec, cache, a->cc, iospec);
}

/* The tables' entries, committed; the control stays until the pipeline
 * goes (freed first, it takes a wildcard table's ACL with it, and the next
 * lookup in that table faults). */
static long
fill_tables(struct rte_swx_pipeline *p, const struct args *a, struct rte_swx_ctl_pipeline **ctl)
{
	long entries = 0;

	*ctl = rte_swx_ctl_pipeline_create(p);
	if (*ctl == NULL) {
		fprintf(stderr, "bench_swx_spec: no control of the pipeline\n");
		return -1;
	}
	for (unsigned i = 0; i < a->n_tables && entries >= 0; i++) {
		long n = bench_table_add_file(*ctl, a->table[i], a->table_file[i]);

		entries = n < 0 ? -1 : entries + n;
	}
	if (entries >= 0 && rte_swx_ctl_pipeline_commit(*ctl, 1) != 0) {
		fprintf(stderr, "bench_swx_spec: the table commit failed\n");
		entries = -1;
	}
	return entries;
}

/* -n: one instruction at a time until `packets` frames have left by some
 * port (the drop port included), so none is half-way when it stops. */
static struct bench_rate
run_counted(struct rte_swx_pipeline *p, uint64_t packets)
{
	uint32_t all = (1u << (DROP_PORT + 1)) - 1;
	uint64_t hz = rte_get_tsc_hz(), t0 = rte_rdtsc(), steps = 0;

	while (bench_out_packets(p, all) < packets && steps++ < 1000 * packets)
		rte_swx_pipeline_run(p, 1);
	rte_swx_pipeline_flush(p);
	return (struct bench_rate){ .packets = bench_out_packets(p, all),
				    .seconds = (double)(rte_rdtsc() - t0) / (double)hz };
}

/* -r: "name": {"slot": value, ...} for each, its non-zero slots only. */
static int
print_regarrays(struct rte_swx_pipeline *p, const struct args *a)
{
	struct rte_swx_ctl_pipeline_info info;
	struct rte_swx_ctl_regarray_info ra;

	if (rte_swx_ctl_pipeline_info_get(p, &info) != 0)
		return -1;
	printf(", \"regarrays\": {");
	for (unsigned i = 0; i < a->n_regarrays; i++) {
		uint32_t id = 0, size = 0;
		const char *sep = "";

		for (; id < info.n_regarrays; id++)
			if (rte_swx_ctl_regarray_info_get(p, id, &ra) == 0 &&
			    strcmp(ra.name, a->regarray[i]) == 0)
				break;
		if (id == info.n_regarrays) {
			fprintf(stderr, "bench_swx_spec: no register array %s\n", a->regarray[i]);
			return -1;
		}
		size = ra.size;
		printf("%s\"%s\": {", i ? ", " : "", a->regarray[i]);
		for (uint32_t slot = 0; slot < size; slot++) {
			uint64_t v = 0;

			if (rte_swx_ctl_pipeline_regarray_read(p, a->regarray[i], slot, &v) != 0)
				return -1;
			if (v) {
				printf("%s\"%u\": %" PRIu64, sep, slot, v);
				sep = ", ";
			}
		}
		printf("}");
	}
	printf("}");
	return 0;
}

/* -s: "tables": {"name": {"hits": h, "misses": m}, ...} */
static int
print_table_stats(struct rte_swx_pipeline *p, const struct args *a)
{
	static struct swx_fastpath_exits exits;
	char err[256] = "could not read it";
	long len;
	char *spec;
	FILE *f = fopen(a->spec, "r");
	int n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || (spec = malloc((size_t)len + 1)) == NULL) {
		if (f)
			fclose(f);
		return -1;
	}
	n = fread(spec, 1, (size_t)len, f) == (size_t)len
		    ? swx_fastpath_exits_parse(spec, (size_t)len, &exits, err, sizeof(err)) : -1;
	fclose(f);
	free(spec);
	if (n < 0) {
		fprintf(stderr, "bench_swx_spec: %s: %s\n", a->spec, err);
		return -1;
	}
	printf(", \"tables\": {");
	for (unsigned i = 0; i < a->n_stats; i++) {
		uint64_t hits, misses;

		if (swx_table_stats_once(p, &exits, a->stats[i], &hits, &misses) != 0) {
			fprintf(stderr, "bench_swx_spec: no table %s\n", a->stats[i]);
			return -1;
		}
		printf("%s\"%s\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64 "}",
		       i ? ", " : "", a->stats[i], hits, misses);
	}
	printf("}");
	return 0;
}

static int
print_result(struct rte_swx_pipeline *p, const struct args *a, long frames, long entries,
	     struct bench_rate r)
{
	printf("{\"frames\": %ld, \"entries\": %ld, \"packets\": %" PRIu64 ", \"seconds\": %.3f, "
	       "\"mpps\": %.3f, \"out\": [",
	       frames, entries, r.packets, r.seconds, (double)r.packets / r.seconds / 1e6);
	for (int port = 0; port < PORTS_OUT; port++)
		printf("%s%" PRIu64, port ? ", " : "", bench_out_packets(p, 1u << port));
	printf("], \"dropped\": %" PRIu64, bench_out_packets(p, 1u << DROP_PORT));
	if (a->n_regarrays && print_regarrays(p, a) != 0)
		return -1;
	if (a->n_stats && print_table_stats(p, a) != 0)
		return -1;
	printf("}\n");
	fflush(stdout);
	return 0;
}

int
main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "--no-pci", "-m", "1024", "--no-shconf",
			"--no-telemetry", "--log-level", "*:error", "--file-prefix", "bench-swx-spec", "-l", "0" };
	struct args a = { 0 };
	char cache[256], rm[300];
	struct rte_swx_ctl_pipeline *ctl = NULL;
	struct rte_swx_pipeline *p;
	struct bench_rate r;
	long frames, entries;

	if (parse_args(argc, argv, &a) != 0)
		return usage();
	frames = bench_pcap_count(a.frames);
	if (frames <= 0) {
		fprintf(stderr, "bench_swx_spec: %s: no frames (not a pcap file?)\n", a.frames);
		return 1;
	}
	if (a.learn && (a.learn_frames = bench_pcap_count(a.learn)) <= 0) {
		fprintf(stderr, "bench_swx_spec: %s: no frames (not a pcap file?)\n", a.learn);
		return 1;
	}
	if (rte_eal_init(sizeof(eal) / sizeof(eal[0]), eal) < 0)
		return 1;
	bench_remove_runtime_dir_at_exit();
	snprintf(cache, sizeof(cache), "%s", a.cache ? a.cache : "");
	if (cache[0] == '\0')
		snprintf(cache, sizeof(cache), "/tmp/bench-swx-spec-%d", (int)getpid());
	p = build(&a, frames, cache);
	if (p == NULL || (entries = fill_tables(p, &a, &ctl)) < 0)
		return 1;
	if (a.packets)
		r = run_counted(p, a.packets);
	else
		r = bench_run_timed(p, (1u << PORTS_OUT) - 1, (uint32_t)frames / 8 + 1000, a.seconds);
	if (print_result(p, &a, frames, entries, r) != 0)
		return 1;
	bench_teardown(ctl, p);
	if (a.cache)
		return 0;
	snprintf(rm, sizeof(rm), "rm -rf %s", cache);
	return system(rm) == 0 ? 0 : 1;
}
