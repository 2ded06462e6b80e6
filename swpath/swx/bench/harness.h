/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the SWX forwarding benchmarks share (bench_swx: the P4 program;
 * bench_swx_spec: any spec, DPDK's examples and the hand-written NAT fast
 * path): frames written as a pcap file for DPDK's `source` port, which
 * copies each into a fresh mbuf as it hands it to the pipeline (the work of
 * a PMD's RX), table entries in DPDK's own text form, the pipeline built
 * from its spec as quicknat-swx builds it (src/build.c), and the timed run
 * on one thread with the `sink` ports counting what leaves. One harness, so
 * figures from the two programs compare.
 */
#ifndef SWX_BENCH_HARNESS_H
#define SWX_BENCH_HARNESS_H

#include <stdint.h>
#include <stdio.h>

struct rte_swx_ctl_pipeline;
struct rte_swx_pipeline;

/* The pcap file header and one record (time 0: the source port replays, it
 * does not pace), host byte order as libpcap reads either. */
void bench_pcap_header(FILE *f);
void bench_pcap_record(FILE *f, const uint8_t *frame, uint32_t len);

/* Records in a pcap file written as above (or by scapy); -1 when it is not
 * one. */
long bench_pcap_count(const char *path);

/* The whole of a text file, NUL-terminated; NULL when it cannot be read. */
char *bench_read_file(const char *path, size_t *len);

/* One table entry in DPDK's text form ("match ... action ... ARG VALUE");
 * 0, or -1 with the line on stderr. */
int bench_table_add(struct rte_swx_ctl_pipeline *ctl, const char *table, const char *line);

/* Every line of a file of such entries into table (blank lines and lines
 * starting with ';' or '#' skipped); the number added, or -1. */
long bench_table_add_file(struct rte_swx_ctl_pipeline *ctl, const char *table, const char *path);

/* The pipeline of the spec at spec_path, compiled into cache_dir by cc
 * (NULL: "cc"), with the ports iospec names; NULL and why on stderr. */
struct rte_swx_pipeline *bench_build(const char *spec_path, const char *cache_dir, const char *cc,
				     const char *iospec);

/* What the output ports in count_mask passed on (sinks free what they send,
 * and count it as dropped: that is their way out). */
uint64_t bench_out_packets(struct rte_swx_pipeline *p, uint32_t count_mask);

struct bench_rate {
	uint64_t packets;	/* out of the ports counted */
	double seconds;
};

/* `warmup` runs of 16 instructions, then runs of 64 for `seconds`, the
 * pipeline flushed; the packets the ports in count_mask passed on in that
 * time. */
struct bench_rate bench_run_timed(struct rte_swx_pipeline *p, uint32_t count_mask,
				  uint32_t warmup, double seconds);

/* The pipeline freed at the end of a run, its control object left to the
 * process's exit: DPDK 22.11's rte_swx_ctl_pipeline_free frees the table
 * objects its next table state shares with the pipeline's (rte_swx_ctl.c,
 * table_state_free), and rte_swx_pipeline_free then frees them again
 * ("EAL: Error: Invalid memory", once for each of the program's six
 * wildcard tables). quicknat-swx keeps its own table state
 * (src/tables.c) and frees each object once. */
void bench_teardown(struct rte_swx_ctl_pipeline *ctl, struct rte_swx_pipeline *p);

/* After rte_eal_init: the EAL's runtime directory (empty: the benches run
 * with --no-shconf and no telemetry) is removed at exit, however the bench
 * exits, so none is left under /var/run/dpdk. */
void bench_remove_runtime_dir_at_exit(void);

#endif /* SWX_BENCH_HARNESS_H */
