/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The swpath fast path on one or more worker lcores with packets made in
 * memory, no NIC: each worker allocates a burst of mbufs from the pool (as a
 * PMD's RX does), writes a 60-byte UDP frame (64 on the wire with the FCS)
 * of one of its flows, marks the IP checksum as checked (as a NIC does),
 * and runs the real sp_process_burst(); translated packets leave through a
 * net_null port, whose TX frees them. So the figure includes buffer
 * alloc/free and a 60-byte write per packet, the work of a NIC driver, but
 * no PCIe or descriptor rings.
 *
 *   bench_swpath new|new-state|established|memory SESSIONS SECONDS WORKERS [hugepages]
 *
 * new: opens SESSIONS sessions, one first packet each (new sessions/s).
 * new-state: the same with the sessions kept for a successor (--state, a
 * file in /dev/shm: session_store.h), the price of a new flow's copy.
 * established: opens them, then cycles over all flows for SECONDS (Mpps).
 * memory: heap bytes one worker's tables take for SESSIONS sessions.
 * hugepages: EAL on hugepages (reserved beforehand), as deployed; without
 * it --no-huge, the default of a fresh machine.
 * SP_BENCH_START_AT (environment): a CLOCK_MONOTONIC time in seconds; the
 * new-session pass waits for it, so that processes started together (one
 * per instance) run their passes at the same time whatever their start-up.
 * Prints one JSON object.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_udp.h>

#include "core/lifecycle.h"
#include "dataplane/fastpath.h"
#include "dataplane/fwd.h"
#include "persist/session_store.h"
#include "persist/sink.h"
#include "sp_harness.h"

#define FRAME_LEN 60
#define HOSTS 4096u             /* inside hosts; a host has SESSIONS/HOSTS flows */

static const char commands[] =
	"interface in0 zone inside port 0 address 10.0.0.1/8 mac 02:00:00:00:00:01\n"
	"interface out0 zone outside port 1 address 198.51.100.1/24 mac 02:00:00:00:00:02\n"
	"route 0.0.0.0/0 dev out0 via 198.51.100.254\n"
	"neighbor 198.51.100.254 mac 02:00:00:00:00:fe dev out0\n"
	"pool public ports 1024-65535 addresses 203.0.113.0/24\n"
	"rule add id 1 type snat prefix 10.0.0.0/8 protocol udp pool public\n";

struct gen {
	struct sp_worker *w;
	uint32_t *flows;        /* flow ids this worker owns */
	uint32_t n_flows;
	uint64_t deadline;      /* TSC; 0: one pass over the flows */
	uint64_t packets;
	uint64_t cycles;
};

static uint8_t frame[FRAME_LEN];
static struct gen gens[RTE_MAX_LCORE];

/* Flow i: 10.128.0.0 + i % HOSTS, port 1024 + i / HOSTS -> 192.0.2.1:53. */
static uint32_t
flow_src(uint32_t i)
{
	return 0x0a800000u + i % HOSTS;
}

static void
frame_init(void)
{
	struct rte_ether_hdr *eth = (void *)frame;
	struct rte_ipv4_hdr *ip = (void *)(eth + 1);
	struct rte_udp_hdr *udp = (void *)(ip + 1);

	rte_ether_unformat_addr("02:00:00:00:00:01", &eth->dst_addr);
	rte_ether_unformat_addr("02:00:00:00:10:02", &eth->src_addr);
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = RTE_BE16(FRAME_LEN - sizeof(*eth));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->dst_addr = RTE_BE32(0xc0000201);
	udp->dst_port = RTE_BE16(53);
	udp->dgram_len = RTE_BE16(FRAME_LEN - sizeof(*eth) - sizeof(*ip));
	/* not verified by swpath, but non-zero so it is updated */
	udp->dgram_cksum = RTE_BE16(0x1234);
}

static inline void
fill(struct rte_mbuf *m, uint32_t flow)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ipv4_hdr *ip = (void *)(d + sizeof(struct rte_ether_hdr));
	struct rte_udp_hdr *udp = (void *)(ip + 1);

	memcpy(d, frame, FRAME_LEN);
	ip->src_addr = rte_cpu_to_be_32(flow_src(flow));
	udp->src_port = rte_cpu_to_be_16((uint16_t)(1024 + flow / HOSTS));
	m->data_len = m->pkt_len = FRAME_LEN;
	m->port = 0;
	m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD;
	*sp_meta(m) = 0;
}

/* The worker loop of worker.c with a generator in place of RX. */
static int
gen_main(void *arg)
{
	struct gen *g = arg;
	struct sp_worker *w = g->w;
	struct rte_mbuf *pkts[SP_BURST];
	uint32_t next = 0, done = 0;
	uint64_t t0 = rte_rdtsc(), now = t0;

	for (;;) {
		const struct sp_runtime *rt = sp_runtime_get();

		if (g->deadline != 0 ? now >= g->deadline : done >= g->n_flows)
			break;
		w->now = (uint32_t)((now - sp.tsc0) * 1000 / sp.tsc_hz);
		if (rte_pktmbuf_alloc_bulk(sp.mbuf_pool, pkts, SP_BURST) != 0)
			break;
		for (unsigned j = 0; j < SP_BURST; j++) {
			fill(pkts[j], g->flows[next]);
			if (++next == g->n_flows)
				next = 0;
		}
		sp_process_burst(w, pkts, SP_BURST, 0, 0, rt);
		done += SP_BURST;
		sp_tx_flush_all(w);
		sp_nat_age(&w->nat, rt, w->now, SP_AGE_BUDGET);
		now = rte_rdtsc();
	}
	sp_tx_flush_all(w);
	g->packets = done;
	g->cycles = now - t0;
	return 0;
}

/* Runs every worker's generator at once; returns packets per second. */
static double
run(double seconds)
{
	uint64_t pkts = 0, cycles = 0;
	unsigned lcore, i = 0;

	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (i == sp.n_workers)
			break;
		gens[i].deadline = seconds > 0 ?
			rte_rdtsc() + (uint64_t)(seconds * (double)sp.tsc_hz) : 0;
		rte_eal_remote_launch(gen_main, &gens[i], lcore);
		i++;
	}
	/* sleep, do not spin: on 2 vCPUs the main lcore shares a CPU */
	RTE_LCORE_FOREACH_WORKER(lcore)
		while (rte_eal_get_lcore_state(lcore) == RUNNING)
			usleep(1000);
	rte_eal_mp_wait_lcore();
	for (i = 0; i < sp.n_workers; i++) {
		pkts += gens[i].packets;
		if (gens[i].cycles > cycles)
			cycles = gens[i].cycles;
	}
	return (double)pkts * (double)sp.tsc_hz / (double)cycles;
}

static void
wait_until(double at)
{
	struct timespec now;

	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec + now.tv_nsec / 1e9 >= at)
			return;
		usleep(100);
	}
}

static int
assign_flows(uint32_t n)
{
	/* a stride over the flows: consecutive packets hit far-apart buckets */
	const uint32_t stride = 2654435761u % n | 1;

	for (unsigned i = 0; i < sp.n_workers; i++) {
		gens[i].w = sp.workers[i];
		gens[i].flows = malloc(n * sizeof(uint32_t));
		if (gens[i].flows == NULL)
			return -1;
	}
	for (uint64_t k = 0, f = 0; k < n; k++, f = (f + stride) % n) {
		unsigned o = sp.n_workers == 1 ? 0 :
			sp_owner_inside(&sp.rss, flow_src((uint32_t)f));

		gens[o].flows[gens[o].n_flows++] = (uint32_t)f;
	}
	return 0;
}

static uint64_t
memory_used(int socket)
{
	struct rte_malloc_socket_stats s;

	rte_malloc_get_socket_stats(socket, &s);
	return s.heap_allocsz_bytes;
}

/* Memory per session: worker 0's tables made again for sessions (the
 * same names), the heap measured before and after. */
static int
measure_memory(uint32_t sessions, bool hugepages)
{
	struct sp_worker *w = sp.workers[0];
	uint64_t before, after;

	sp_nat_free(&w->nat);
	before = memory_used(w->socket);
	if (sp_nat_init(&w->nat, &(struct sp_nat_params){
				.worker = 0, .n_workers = 1,
				.max_sessions = sessions, .counters = w->cnt,
				.socket = w->socket, .env = &sp_dpdk_env,
				.shared = sp_nat_shared(),
				.observer = sp_sink_observer(w),
				.route_gen = sp.route_gen,
			}) != 0)
		return 2;
	after = memory_used(w->socket);
	printf("{\"mode\": \"memory\", \"hugepages\": %s, \"sessions\": %u, \"bytes\": %llu, \"bytes_per_session_per_direction\": %.1f}\n",
	       hugepages ? "true" : "false", sessions,
	       (unsigned long long)(after - before),
	       (double)(after - before) / sessions / 2);
	sp_harness_fini();
	return 0;
}

/* "session_open": the slow path's session opens as the workers timed them
 * (open_hist.h): the mean, and per bucket bound (ns) the opens at or under
 * it; then the object's end. */
static void
print_session_open(void)
{
	uint64_t n = 0, sum_tsc = 0, cumulative = 0;

	for (unsigned w = 0; w < sp.n_workers; w++) {
		for (unsigned i = 0; i <= SP_OPEN_HIST_N; i++)
			n += sp.workers[w]->open_hist.count[i];
		sum_tsc += sp.workers[w]->open_hist.sum_tsc;
	}
	printf("\"session_open\": {\"count\": %llu, \"mean_ns\": %.0f, \"le_ns\": {",
	       (unsigned long long)n,
	       n ? (double)sum_tsc * 1e9 / (double)sp.tsc_hz / (double)n : 0.0);
	for (unsigned i = 0; i < SP_OPEN_HIST_N; i++) {
		for (unsigned w = 0; w < sp.n_workers; w++)
			cumulative += sp.workers[w]->open_hist.count[i];
		printf("%s\"%u\": %llu", i ? ", " : "", sp_open_hist_bound_ns[i],
		       (unsigned long long)cumulative);
	}
	printf("}}}\n");
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	uint32_t sessions = argc > 2 ? (uint32_t)atol(argv[2]) : 65536;
	double seconds = argc > 3 ? atof(argv[3]) : 5;
	unsigned workers = argc > 4 ? (unsigned)atoi(argv[4]) : 1;
	bool hugepages = argc > 5 && strcmp(argv[5], "hugepages") == 0;
	/* table size per worker: its share and some slack (RSS is uneven) */
	uint32_t per_worker = sessions / workers + sessions / workers / 4 + 1024;
	double pps, new_pps;
	uint64_t created = 0;
	static char state[64];
	struct timespec pass_start, pass_end;

	if (sp_harness_init(argv[0], commands, workers,
			    strcmp(mode, "memory") == 0 ? sessions : per_worker,
			    /* the tables are on a heap of their own (memory.h) */
			    hugepages ? NULL : "512") < 0)
		return 2;
	if (strcmp(mode, "memory") == 0)
		return measure_memory(sessions, hugepages);
	if (strcmp(mode, "new-state") == 0) {
		char err[512];

		snprintf(state, sizeof(state), "/dev/shm/sp-bench-%d.state",
			 (int)getpid());
		if (sp_store_open(state, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			return 2;
		}
	}
	frame_init();
	if (assign_flows(sessions) < 0)
		return 2;
	/* pass 1: every packet is a new flow; its window on the machine's
	 * clock, so that runs in several processes can be checked for overlap */
	if (getenv("SP_BENCH_START_AT") != NULL)
		wait_until(atof(getenv("SP_BENCH_START_AT")));
	clock_gettime(CLOCK_MONOTONIC, &pass_start);
	new_pps = run(0);
	clock_gettime(CLOCK_MONOTONIC, &pass_end);
	for (unsigned i = 0; i < workers; i++)
		created += sp.workers[i]->cnt[SP_CNT_sessions_created];
	pps = strcmp(mode, "established") == 0 ? run(seconds) : 0;
	printf("{\"mode\": \"%s\", \"hugepages\": %s, \"sessions\": %u, \"workers\": %u, \"created\": %llu, \"new_per_s\": %.0f, \"new_pass_s\": [%.6f, %.6f], \"established_pps\": %.0f, \"in2out\": %llu, \"tx\": %llu, ",
	       mode, hugepages ? "true" : "false", sessions, workers,
	       (unsigned long long)created, new_pps,
	       pass_start.tv_sec + pass_start.tv_nsec / 1e9,
	       pass_end.tv_sec + pass_end.tv_nsec / 1e9,
	       pps, (unsigned long long)sp_counter_sum(SP_CNT_in2out),
	       (unsigned long long)sp_counter_sum(SP_CNT_tx));
	print_session_open();
	for (unsigned i = 0; i < workers; i++)
		free(gens[i].flows);
	if (state[0] != '\0') {
		sp_store_close();
		unlink(state);
	}
	sp_harness_fini();
	return 0;
}
