/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The P4 program's PNA build on DPDK's SWX pipeline, one pipeline thread,
 * established flows, packets made in memory: DPDK's own `source` port reads
 * SESSIONS 60-byte UDP frames (64 on the wire), one per session, from a pcap
 * file into memory and copies each into a fresh mbuf from the pool as it
 * hands it to the pipeline (the work of a PMD's RX and of bench_swpath's
 * generator: an allocation and a 60-byte write); the translated packets
 * leave through a `sink` port, which frees them (net_null's TX). No NIC, no
 * P4Runtime: the sessions are written with DPDK's table control API
 * (rte_swx_ctl), as quicknat-swx's table manager writes them.
 *
 *   bench_swx SPEC SESSIONS SECONDS
 *   bench_swx SPEC FLOWS 0 learn
 *   bench_swx SPEC SESSIONS SECONDS learned
 *
 * Prints one JSON object: packets out, seconds, Mpps, packets dropped.
 *
 * With `learn`, the switch's session setup capacity with learning (issue
 * 34): FLOWS first packets of new flows, each as a slow-path instance sends
 * it back translated with its learn tag (802.1Q VID 2, the 16-byte tag,
 * the translated IPv4/UDP), on the slow-path port (port 1 here), each
 * learned into both
 * learner tables as it passes: the seconds until every one went through,
 * and what the learners say they added (DPDK's learner statistics).
 *
 * With `learned`, established flows of sessions the switch learned rather
 * than had written: each session's learn trip first, from a source of its
 * own (port in 2, replayed once, on a port of the slow-path zone), then,
 * once both learners hold every session, the same timed run as without.
 * DPDK 22.11 takes a power of two of input ports, so port in 3 is an empty
 * ring: the pipeline's rx polls four ports where it polls two without.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_swx_ctl.h>
#include <rte_swx_pipeline.h>
#include <rte_udp.h>

#include "harness.h"
#include "contract/p4_constants.h"

#define FRAME_LEN 60
/* a learn trip's frame: Ethernet, 802.1Q, the learn tag, IPv4, UDP */
#define LEARN_FRAME_LEN (14 + 4 + P4_LEARN_TAG_BYTES + 20 + 8)
#define HOSTS 4096u	/* inside hosts; a host has SESSIONS/HOSTS flows (bench_swpath's) */
#define PORT_INSIDE 1
#define PORT_OUTSIDE 2
#define PORT_LEARN 2	/* learned: the learn trips' input port */

enum mode { ESTABLISHED, LEARN, LEARNED };

/* Flow i: 10.128.0.0 + i % HOSTS, port 1024 + i / HOSTS -> 192.0.2.1:53,
 * bench_swpath's flows. */
static uint32_t
flow_src(uint32_t i)
{
	return 0x0a800000u + i % HOSTS;
}

static uint16_t
flow_sport(uint32_t i)
{
	return (uint16_t)(1024 + i / HOSTS);
}

/* SESSIONS frames, one per flow, as a pcap file (host byte order, as
 * libpcap reads either). */
static int
write_frames(const char *path, uint32_t sessions)
{
	FILE *f = fopen(path, "wb");
	uint8_t frame[FRAME_LEN];
	struct rte_ipv4_hdr *ip = (void *)(frame + 14);
	struct rte_udp_hdr *udp = (void *)(ip + 1);

	if (f == NULL)
		return -1;
	bench_pcap_header(f);
	memset(frame, 0, sizeof(frame));
	memcpy(frame, "\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x10\x02\x08\x00", 14);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(FRAME_LEN - 14);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->dst_addr = rte_cpu_to_be_32(0xc0000201);
	udp->dst_port = rte_cpu_to_be_16(53);
	udp->dgram_len = rte_cpu_to_be_16(FRAME_LEN - 14 - 20);
	udp->dgram_cksum = rte_cpu_to_be_16(0x1234);
	for (uint32_t i = 0; i < sessions; i++) {
		ip->src_addr = rte_cpu_to_be_32(flow_src(i));
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		udp->src_port = rte_cpu_to_be_16(flow_sport(i));
		bench_pcap_record(f, frame, FRAME_LEN);
	}
	return fclose(f);
}

/* Flow i's first packet as its instance sends it back to the switch: its
 * source translated to 203.0.113.(i % 256):(1024 + i % 60000) and the learn
 * tag carrying the 5-tuple before (flow_src(i):flow_sport(i) ->
 * 192.0.2.1:53), lease class 4. */
static int
write_learn_frames(const char *path, uint32_t flows)
{
	FILE *f = fopen(path, "wb");
	uint8_t frame[LEARN_FRAME_LEN];
	uint8_t *tag = frame + 18;
	struct rte_ipv4_hdr *ip = (void *)(tag + P4_LEARN_TAG_BYTES);
	struct rte_udp_hdr *udp = (void *)(ip + 1);

	if (f == NULL)
		return -1;
	bench_pcap_header(f);
	memset(frame, 0, sizeof(frame));
	memcpy(frame, "\x02\x00\x00\x00\x00\x03\x02\x00\x00\x00\x10\x03\x81\x00", 14);
	frame[14] = 0;
	frame[15] = P4_ZONE_OUTSIDE;	/* VID: leaving to the outside */
	frame[16] = P4_ETHERTYPE_LEARN >> 8;
	frame[17] = P4_ETHERTYPE_LEARN & 0xff;
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(20 + 8);
	ip->time_to_live = 63;
	ip->next_proto_id = IPPROTO_UDP;
	ip->dst_addr = rte_cpu_to_be_32(0xc0000201);
	udp->dst_port = rte_cpu_to_be_16(53);
	udp->dgram_len = rte_cpu_to_be_16(8);
	for (uint32_t i = 0; i < flows; i++) {
		uint32_t orig_src = rte_cpu_to_be_32(flow_src(i)), orig_dst = ip->dst_addr;
		uint16_t orig_sport = rte_cpu_to_be_16(flow_sport(i)), orig_dport = udp->dst_port;

		memcpy(tag, &orig_src, 4);
		memcpy(tag + 4, &orig_dst, 4);
		memcpy(tag + 8, &orig_sport, 2);
		memcpy(tag + 10, &orig_dport, 2);
		tag[12] = 4;		/* lease class */
		tag[13] = 0;		/* inside to outside */
		tag[14] = 0x08;		/* IPv4 next */
		tag[15] = 0x00;
		ip->src_addr = rte_cpu_to_be_32(0xcb007100u + i % 256);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		udp->src_port = rte_cpu_to_be_16((uint16_t)(1024 + i % 60000));
		bench_pcap_record(f, frame, LEARN_FRAME_LEN);
	}
	return fclose(f);
}

/* What both learners added so far, and failed to (a full bucket). */
static void
learned(struct rte_swx_pipeline *p, uint64_t *ok, uint64_t *failed)
{
	static uint64_t per_action[1024];
	struct rte_swx_learner_stats s = { .n_pkts_action = per_action };

	*ok = *failed = 0;
	for (const char **l = (const char *[]){ "core_nat_nat_in2out_learned",
						"core_nat_nat_out2in_learned", NULL };
	     *l != NULL; l++)
		if (rte_swx_ctl_pipeline_learner_stats_read(p, *l, &s) == 0) {
			*ok += s.n_pkts_learn_ok;
			*failed += s.n_pkts_learn_err;
		}
}

/* The learn run: until every flow's learn trip went through (the source
 * port loops over them; bounded at 60 s), one JSON line. */
static int
run_learn(struct rte_swx_pipeline *p, uint32_t flows)
{
	struct rte_swx_port_out_stats out = { 0 };
	uint64_t ok = 0, failed = 0, hz = rte_get_tsc_hz(), t0, t1;

	t0 = rte_rdtsc();
	do {
		for (int n = 0; n < 64; n++)
			rte_swx_pipeline_run(p, 16);
		rte_swx_pipeline_flush(p);
		rte_swx_ctl_pipeline_port_out_stats_read(p, PORT_OUTSIDE, &out);
		t1 = rte_rdtsc();
	} while (out.n_pkts_drop < flows && t1 - t0 < 60 * hz);
	learned(p, &ok, &failed);
	for (uint32_t r = 0; r < 32; r++) {
		uint64_t v = 0;

		if (rte_swx_ctl_pipeline_regarray_read(p, "core_drop_counter", r, &v) == 0 && v)
			fprintf(stderr, "bench_swx: dropped, reason %u: %" PRIu64 "\n", r, v);
	}
	double seconds = (double)(t1 - t0) / (double)hz;
	printf("{\"flows\": %u, \"forwarded\": %" PRIu64 ", \"learned\": %" PRIu64
	       ", \"learn_failed\": %" PRIu64 ", \"seconds\": %.4f, \"flows_per_s\": %.0f}\n",
	       flows, out.n_pkts_drop, ok, failed, seconds, (double)flows / seconds);
	return out.n_pkts_drop >= flows ? 0 : 1;
}

/* The pipeline of SPEC (p4c-dpdk's), compiled into `cache`, its port 1 a
 * source of `frames` (FLOWS of them: learn trips with LEARN, established
 * frames otherwise), port 0 the CPU port's ring; with LEARNED, port 2 a
 * source of the learn trips in `learn_frames`, replayed once, and port 3
 * an empty ring. NULL and why on stderr when it does not build. */
static struct rte_swx_pipeline *
build(const char *spec_path, uint32_t flows, enum mode mode, const char *frames,
      const char *learn_frames, const char *cache)
{
	char iospec[768];
	int at;

	if ((mode == LEARN ? write_learn_frames(frames, flows) : write_frames(frames, flows)) != 0 ||
	    (mode == LEARNED && write_learn_frames(learn_frames, flows) != 0) ||
	    /* a source port keeps a copy of every frame; the rest is in flight */
	    rte_pktmbuf_pool_create("MP", 2 * flows + 16384, 256, 0, 256 + RTE_PKTMBUF_HEADROOM,
				    0) == NULL ||
	    rte_ring_create("CPU", 64, 0, 0) == NULL ||
	    (mode == LEARNED && rte_ring_create("IDLE", 64, 0, 0) == NULL)) {
		fprintf(stderr, "bench_swx: setting up: %s\n", rte_strerror(rte_errno));
		return NULL;
	}
	/* port 0 is the program's CPU port; the drop port is DPDK's, last */
	at = snprintf(iospec, sizeof(iospec),
		      "port in 0 ring CPU bsz 32\n"
		      "port in 1 source mempool MP file %s loop 0 packets %u\n"
		      "port out 0 sink file none\n"
		      "port out 1 sink file none\n"
		      "port out 2 sink file none\n"
		      "port out 3 sink file none\n",
		      frames, flows);
	if (mode == LEARNED)
		snprintf(iospec + at, sizeof(iospec) - (size_t)at,
			 "port in %d source mempool MP file %s loop 1 packets %u\n"
			 "port in 3 ring IDLE bsz 32\n",
			 PORT_LEARN, learn_frames, flows);
	/* BENCH_SWX_CC: another compiler, e.g. cc-trace.sh to count instructions */
	return bench_build(spec_path, cache, getenv("BENCH_SWX_CC"), iospec);
}

/* The controller's entries for this topology (program.static_entries):
 * zones, the pool as a NAT-owned prefix, the default route out of port 2
 * and its MTU, and (without `learn`) one session a flow; committed. 0, or
 * -1 when the commit fails. (Every table an established packet meets has
 * what a deployment gives it: an empty wildcard table is not the cost of
 * a used one.) */
static int
write_entries(struct rte_swx_ctl_pipeline *ctl, uint32_t sessions, enum mode mode)
{
	char line[256];

	/* (learn: port 1 is the slow-path port its instance sends back on;
	 * learned: port 2, which only the learn trips come in on) */
	if (bench_table_add(ctl, "core_zone_port_zone",
			    mode == LEARN ? "match 0x1 action core_zone_set_zone_0 zone 0x3"
					  : "match 0x1 action core_zone_set_zone_0 zone 0x1") != 0 ||
	    bench_table_add(ctl, "core_zone_port_zone",
			    mode == LEARNED ? "match 0x2 action core_zone_set_zone_0 zone 0x3"
					    : "match 0x2 action core_zone_set_zone_0 zone 0x2") != 0 ||
	    bench_table_add(ctl, "core_input_check_owned_source",
			    "match 0xcb007100/0xffffff00 action core_input_check_mark_owned_0") != 0 ||
	    bench_table_add(ctl, "core_routing_routing_v4",
			    "match 0x0/0x0 action core_routing_set_next_hop_0 port 0x2 "
			    "smac 0x020000000002 dmac 0x0200000000fe") != 0 ||
	    bench_table_add(ctl, "core_routing_egress_mtu",
			    "match 0x2 action core_routing_set_mtu_0 mtu 0x5dc") != 0)
		return -1;
	for (uint32_t i = 0; i < sessions && mode == ESTABLISHED; i++) {
		snprintf(line, sizeof(line),
			 "match 0x%08x 0xc0000201 0x11 0x%04x 0x35 action core_nat_rewrite_src_0 "
			 "addr 0x%08x port 0x%04x",
			 flow_src(i), flow_sport(i), 0xcb007100u + i % 256, 1024 + i % 60000);
		if (bench_table_add(ctl, "core_nat_nat_in2out", line) != 0)
			return -1;
	}
	if (rte_swx_ctl_pipeline_commit(ctl, 1) != 0) {
		fprintf(stderr, "bench_swx: the table commit failed\n");
		return -1;
	}
	return 0;
}

/* learned: until both learners hold every session (the learn trips go in
 * beside the first established frames, which miss until then; bounded at
 * 60 s). 0, or -1 and why on stderr. */
static int
learn_first(struct rte_swx_pipeline *p, uint32_t sessions)
{
	uint64_t ok = 0, failed = 0, hz = rte_get_tsc_hz(), t0 = rte_rdtsc();

	do {
		for (int n = 0; n < 64; n++)
			rte_swx_pipeline_run(p, 16);
		learned(p, &ok, &failed);
	} while (ok + failed < 2ull * sessions && rte_rdtsc() - t0 < 60 * hz);
	if (ok < 2ull * sessions) {
		fprintf(stderr, "bench_swx: learned %" PRIu64 " of %u sessions' entries (%" PRIu64
				" failed: a full bucket)\n", ok, 2 * sessions, failed);
		return -1;
	}
	return 0;
}

/* Established flows for `seconds` after a warm-up (every flow once):
 * prints the JSON line. */
static void
run_established(struct rte_swx_pipeline *p, uint32_t sessions, double seconds)
{
	struct bench_rate r = bench_run_timed(p, 1u << PORT_OUTSIDE, sessions / 8 + 1000, seconds);
	uint64_t dropped = bench_out_packets(p, 1u << 4);	/* DPDK's drop port */

	/* packets_total: every packet since the start, warm-up included, by
	 * any port (what a trace build's lines are divided by) */
	printf("{\"sessions\": %u, \"packets\": %" PRIu64 ", \"seconds\": %.3f, "
	       "\"mpps\": %.3f, \"dropped\": %" PRIu64 ", \"packets_total\": %" PRIu64 "}\n",
	       sessions, r.packets, r.seconds, (double)r.packets / r.seconds / 1e6, dropped,
	       bench_out_packets(p, 0x1f));
}

/* The pipeline built, its tables written and the mode's run: 0, or 1 with
 * why on stderr. */
static int
run(const char *spec, uint32_t sessions, double seconds, enum mode mode, const char *frames,
    const char *learn_frames, const char *cache)
{
	struct rte_swx_ctl_pipeline *ctl;
	struct rte_swx_pipeline *p;
	int status = 0;

	p = build(spec, sessions, mode, frames, learn_frames, cache);
	if (p == NULL)
		return 1;
	ctl = rte_swx_ctl_pipeline_create(p);
	if (ctl == NULL || write_entries(ctl, sessions, mode) != 0) {
		bench_teardown(ctl, p);
		return 1;
	}
	if (mode == LEARNED)
		status = learn_first(p, sessions) == 0 ? 0 : 1;
	if (status == 0 && mode == LEARN)
		status = run_learn(p, sessions);
	else if (status == 0)
		run_established(p, sessions, seconds);
	bench_teardown(ctl, p);
	return status;
}

int
main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "--no-pci", "-m", "1024", "--no-shconf",
			"--no-telemetry", "--log-level", "*:error", "--file-prefix", "bench-swx", "-l", "0" };
	char frames[64], learn_frames[64], cache[64], line[256];
	uint32_t sessions;
	double seconds;
	int status;

	enum mode mode = argc == 4 ? ESTABLISHED
			 : argc != 5 ? -1
			 : strcmp(argv[4], "learn") == 0 ? LEARN
			 : strcmp(argv[4], "learned") == 0 ? LEARNED : -1;

	if ((int)mode < 0) {
		fprintf(stderr, "usage: bench_swx SPEC SESSIONS SECONDS [learned] | SPEC FLOWS 0 learn\n");
		return 2;
	}
	sessions = (uint32_t)strtoul(argv[2], NULL, 10);
	seconds = strtod(argv[3], NULL);
	if (rte_eal_init(sizeof(eal) / sizeof(eal[0]), eal) < 0)
		return 1;
	bench_remove_runtime_dir_at_exit();
	snprintf(frames, sizeof(frames), "/tmp/bench-swx-%d.pcap", (int)getpid());
	snprintf(learn_frames, sizeof(learn_frames), "/tmp/bench-swx-%d-learn.pcap", (int)getpid());
	snprintf(cache, sizeof(cache), "%s", getenv("BENCH_SWX_CACHE") ? getenv("BENCH_SWX_CACHE") : "");
	if (cache[0] == '\0')
		snprintf(cache, sizeof(cache), "/tmp/bench-swx-%d", (int)getpid());
	status = run(argv[1], sessions, seconds, mode, frames, learn_frames, cache);
	/* what a run leaves in /tmp goes, however it ended: the frames, and
	 * the compiled pipeline unless BENCH_SWX_CACHE keeps it for the next */
	unlink(frames);
	unlink(learn_frames);
	if (getenv("BENCH_SWX_CACHE") == NULL) {
		snprintf(line, sizeof(line), "rm -rf %s", cache);
		if (system(line) != 0)
			status = 1;
	}
	return status;
}
