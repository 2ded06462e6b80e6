/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Session timers: swpath's wheel against DPDK's rte_timer on the session
 * workload (timer_sides.h says how each is used and how rte_timer is given
 * a simulated clock). bench/timers_bench.py runs it, alternating the two.
 *
 *   bench_timers wheel|rte_timer|rte_lazy SESSIONS PACKETS
 *
 * The workload, the same for both (a fixed seed):
 * - SESSIONS sessions open over the first 60 simulated seconds: 45 % UDP
 *   (300 s idle timeout), 45 % TCP established (2 h 4 min, RFC 5382
 *   REQ-5), 10 % TCP still opening (240 s, transitory);
 * - then PACKETS packets over the next 60 s, each refreshing a session
 *   drawn at random; 1 % of those to established TCP sessions carry a FIN
 *   (the session turns transitory, 240 s from then on: RFC 7857 sec. 2.2);
 * - then the clock runs on, a second a step, past the last expiry, and
 *   every session expires.
 * No session is due before that phase (the shortest timeout is 240 s), so
 * it holds all the work of expiring, the wheel's rechecks included (a
 * session comes up at least once a minute, SP_WHEEL_RECHECK_MS, and again
 * after a refresh: "examined" counts them).
 *
 * Measured: ns per session opened (arming), ns per packet (the wheel: the
 * last_seen store, and a reschedule on a FIN; rte_timer: rte_timer_reset;
 * rte_lazy: rte_timer refreshed as the wheel is, timer_sides.h),
 * ns per session expired and expiries per second (the wheel: its walk
 * SP_AGE_BUDGET at a time; rte_timer: rte_timer_manage, the wait for its
 * clock not counted), and the DPDK heap the timers take (rte_malloc
 * stats; for rte_timer with what rte_timer_subsystem_init took). Prints
 * one JSON object; exits 1 when not every session expired.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>

#include "timer_sides.h"

#define OPEN_SPAN_MS 60000u
#define PACKET_SPAN_MS 60000u
#define STEP_MS 1000u           /* the expiry phase's clock steps */
#define FIN_BIT 0x80000000u     /* in struct packet's sidx */

struct packet {
	uint32_t sidx;          /* | FIN_BIT */
	uint32_t at;            /* simulated ms */
};

static const char *const kind_names[] = {
	[TM_WHEEL] = "wheel",
	[TM_RTE_TIMER] = "rte_timer",
	[TM_RTE_LAZY] = "rte_lazy",
};

static struct sp_runtime rt = {
	.timeout_ms = {
		[SP_TO_UDP] = 300000,
		[SP_TO_TCP_EST] = 7440000,
		[SP_TO_TCP_TRANS] = 240000,
		[SP_TO_ICMP] = 60000,
	},
};

static uint64_t
splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Session i's protocol and TCP state as it opens. */
static void
session_kind(uint32_t i, uint8_t *proto, uint8_t *tcp)
{
	uint64_t x = i;
	unsigned r = (unsigned)(splitmix(&x) % 100);

	*proto = r < 45 ? IPPROTO_UDP : IPPROTO_TCP;
	*tcp = r < 45 ? 0 :
	       r < 90 ? SP_TCP_SYN_I2O | SP_TCP_SYN_O2I | SP_TCP_SEEN_I2O |
			SP_TCP_SEEN_O2I :
			SP_TCP_SYN_I2O;
}

static struct packet *
make_packets(uint32_t sessions, uint32_t n)
{
	struct packet *p = malloc((size_t)n * sizeof(*p));
	uint64_t seed = 42;

	if (p == NULL)
		return NULL;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t sidx = (uint32_t)(splitmix(&seed) % sessions);
		uint8_t proto, tcp;

		session_kind(sidx, &proto, &tcp);
		p[j].sidx = sidx;
		if (proto == IPPROTO_TCP && (tcp & SP_TCP_SEEN_O2I) &&
		    splitmix(&seed) % 100 == 0)
			p[j].sidx |= FIN_BIT;
		p[j].at = OPEN_SPAN_MS +
			  (uint32_t)((uint64_t)j * PACKET_SPAN_MS / n);
	}
	return p;
}

static double
ns_of(uint64_t ticks)
{
	return (double)ticks * 1e9 / (double)rte_get_timer_hz();
}

static int
run(enum tm_kind kind, uint32_t n, uint32_t n_packets, uint64_t sub_bytes)
{
	uint64_t hz = rte_get_timer_hz(), tpm = hz / 10000000 + 1;
	/* rte_timer: every timer armed before its tick (timer_sides.h): the
	 * arming and packet phases take under 4 us per operation (a reset in
	 * a skiplist of 1M timers: about 2.5) */
	uint64_t lead = hz + hz * 4 * ((uint64_t)n + n_packets) / 1000000;
	struct packet *pk = make_packets(n, n_packets);
	uint32_t end = OPEN_SPAN_MS + PACKET_SPAN_MS + 7440000 + 1000;
	uint64_t t0, t_open, t_pkts, t_exp;
	struct tm_side t;

	if (pk == NULL || tm_side_init(&t, kind, n, &rt, tpm, lead) != 0) {
		fprintf(stderr, "bench_timers: out of memory\n");
		free(pk);
		return 1;
	}
	t.follow_tsc = true;    /* its steps fall behind the clock */
	t0 = rte_get_timer_cycles();
	for (uint32_t i = 0; i < n; i++) {
		uint8_t proto, tcp;

		session_kind(i, &proto, &tcp);
		tm_open(&t, i, proto, tcp,
			(uint32_t)((uint64_t)i * OPEN_SPAN_MS / n));
	}
	t_open = rte_get_timer_cycles() - t0;
	t0 = rte_get_timer_cycles();
	for (uint32_t j = 0; j < n_packets; j++)
		tm_packet(&t, pk[j].sidx & ~FIN_BIT, pk[j].at,
			  (pk[j].sidx & FIN_BIT) != 0);
	t_pkts = rte_get_timer_cycles() - t0;
	/* a step a second, as a worker's loops would pass it; rte_timer's
	 * wait for its clock to reach the step is not timed */
	t_exp = 0;
	for (uint32_t now = OPEN_SPAN_MS + PACKET_SPAN_MS;; now += STEP_MS) {
		tm_wait_until(&t, now);
		t0 = rte_get_timer_cycles();
		tm_advance(&t, now);
		t_exp += rte_get_timer_cycles() - t0;
		if (now >= end)
			break;
	}

	printf("{\"impl\": \"%s\", \"sessions\": %u, \"packets\": %u, "
	       "\"open_ns\": %.1f, \"packet_ns\": %.1f, "
	       "\"expire_ns\": %.1f, \"expiries_per_s\": %.0f, "
	       "\"expired\": %u, \"examined\": %llu, \"late_arms\": %llu, "
	       "\"heap_bytes\": %llu, \"subsystem_heap_bytes\": %llu, "
	       "\"heap_bytes_per_session\": %.2f, "
	       "\"in_session_bytes\": %zu}\n",
	       kind_names[kind], n, n_packets,
	       ns_of(t_open) / n, ns_of(t_pkts) / n_packets,
	       ns_of(t_exp) / n, (double)n * 1e9 / ns_of(t_exp),
	       t.n_expired, (unsigned long long)t.examined,
	       (unsigned long long)t.late_arms,
	       (unsigned long long)t.heap_bytes,
	       (unsigned long long)sub_bytes,
	       (double)(t.heap_bytes + sub_bytes) / n,
	       /* the wheel's links live in the session's cache line */
	       kind == TM_WHEEL ? 2 * sizeof(uint32_t) : (size_t)0);
	free(pk);
	n = t.n - t.n_expired;
	tm_side_free(&t);
	if (n != 0) {
		fprintf(stderr, "bench_timers: %u sessions never expired\n", n);
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	char prefix[64], runtime_dir[PATH_MAX];
	char *eal[] = {
		argv[0], "--no-huge", "-m", "512", "--no-pci", "--no-shconf",
		"--no-telemetry", "-l", "0", "--log-level=*:error",
		"--file-prefix", prefix, NULL,
	};
	enum tm_kind kind;
	uint64_t before, sub_bytes = 0;
	char *end1, *end2;
	unsigned long n, packets;
	int rc;

	for (kind = TM_WHEEL; kind <= TM_RTE_LAZY; kind++)
		if (argc == 4 && strcmp(argv[1], kind_names[kind]) == 0)
			break;
	if (kind > TM_RTE_LAZY) {
		fprintf(stderr, "usage: %s wheel|rte_timer|rte_lazy SESSIONS PACKETS\n",
			argv[0]);
		return 2;
	}
	n = strtoul(argv[2], &end1, 10);
	packets = strtoul(argv[3], &end2, 10);
	if (*end1 != '\0' || *end2 != '\0' || n == 0 || n > 16000000 ||
	    packets == 0 || packets > 100000000) {
		fprintf(stderr, "bench_timers: SESSIONS 1..16000000, PACKETS 1..100000000\n");
		return 2;
	}
	snprintf(prefix, sizeof(prefix), "bench-timers-%d", (int)getpid());
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0) {
		fprintf(stderr, "bench_timers: EAL init failed\n");
		return 1;
	}
	if (kind != TM_WHEEL) {
		before = tm_heap_in_use();
		if (rte_timer_subsystem_init() != 0) {
			fprintf(stderr, "bench_timers: rte_timer_subsystem_init failed\n");
			rte_eal_cleanup();
			return 1;
		}
		sub_bytes = tm_heap_in_use() - before;
	}
	rc = run(kind, (uint32_t)n, (uint32_t)packets, sub_bytes);
	if (kind != TM_WHEEL)
		rte_timer_subsystem_finalize();
	/* The EAL leaves its runtime directory behind, empty with
	 * --no-shconf and --no-telemetry: one per run (the prefix has the
	 * pid) would pile up under /var/run/dpdk. */
	snprintf(runtime_dir, sizeof(runtime_dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	rmdir(runtime_dir);
	return rc;
}
