/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The worker loop (one per worker lcore), after l3fwd: report a quiescent
 * state, receive bursts from the worker's queues (or, with software RSS,
 * worker 0 receives and spreads), process what other workers handed over,
 * drain TX buffers on a TSC timer, and age a bounded number of sessions.
 * No allocation, lock or system call per packet.
 */
#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_rcu_qsbr.h>

#include "core/adopt.h"
#include "core/lifecycle.h"
#include "dataplane/dispatch.h"
#include "dataplane/fastpath.h"
#include "dataplane/frag.h"
#include "dataplane/fwd.h"
#include "dataplane/vlan.h"
#include "dataplane/worker.h"
#include "util/tsan.h"

/* Worker 0 with software RSS: transmit what the others queued. */
static void
drain_tx_rings(struct sp_worker *w)
{
	struct rte_mbuf *pkts[SP_BURST];

	for (unsigned i = 0; i < sp.n_ifaces; i++) {
		struct sp_txq *q = &w->tx[i];
		unsigned n;

		if (sp.tx_rings[i] == NULL)
			continue;
		n = rte_ring_sc_dequeue_burst(sp.tx_rings[i], (void **)pkts,
					      SP_BURST, NULL);
		for (unsigned j = 0; j < n; j++)
			rte_eth_tx_buffer(q->port, q->queue, q->buf, pkts[j]);
	}
}

/* Packets the control thread built: ARP requests, and announcements
 * (l2.h sp_arp_announce), whose sender and target are the same. */
static void
drain_ctl_ring(struct sp_worker *w)
{
	struct rte_mbuf *pkts[SP_BURST];
	unsigned n = rte_ring_sc_dequeue_burst(w->ctl_ring, (void **)pkts,
					       SP_BURST, NULL);

	for (unsigned j = 0; j < n; j++) {
		const struct rte_arp_hdr *arp = rte_pktmbuf_mtod_offset(
			pkts[j], const struct rte_arp_hdr *,
			sizeof(struct rte_ether_hdr));

		if (arp->arp_data.arp_sip == arp->arp_data.arp_tip)
			SP_INC(w, arp_announcements);
		else
			SP_INC(w, arp_requests);
		sp_tx(w, sp_in_iface(pkts[j]), pkts[j]);
	}
}

static void
input(struct sp_worker *w, struct rte_mbuf **pkts, uint16_t n, uint16_t iface,
      bool spread, const struct sp_runtime *rt)
{
	if (spread)
		n = sp_dispatch_burst(w, pkts, n, iface);
	if (n != 0)
		sp_process_burst(w, pkts, n, iface,
				 sp.ifaces[iface].zone == SP_ZONE_OUTSIDE, rt);
}

/* A port with 802.1Q sub-interfaces: untag, then runs of one interface. */
static void
trunk_input(struct sp_worker *w, struct rte_mbuf **pkts, uint16_t n,
	    bool spread, const struct sp_runtime *rt)
{
	uint16_t start = 0;

	n = sp_vlan_demux(w, pkts, n);
	while (start < n) {
		uint16_t iface = sp_in_iface(pkts[start]);
		uint16_t end = start + 1;

		while (end < n && sp_in_iface(pkts[end]) == iface)
			end++;
		input(w, &pkts[start], end - start, iface, spread, rt);
		start = end;
	}
}

/* The offload manager's session commands for this worker (core/adopt.h). */
static void
drain_cmd_ring(struct sp_worker *w, const struct sp_runtime *rt)
{
	struct sp_session_cmd c[SP_BURST];
	unsigned n = rte_ring_sc_dequeue_burst_elem(w->cmd_ring, c, sizeof(c[0]),
						    SP_BURST, NULL);

	for (unsigned i = 0; i < n; i++)
		sp_nat_session_cmd(&w->nat, rt, &c[i], w->now);
}

/*
 * Adaptive polling (as VPP's adaptive mode, DPDK's l3fwd-power): a worker
 * whose queues had less than a full burst waiting flushes what it holds and
 * sleeps idle_sleep_us, offline for RCU meanwhile so that no writer waits
 * for it. Under light load the rings fill while it sleeps, so it wakes to a
 * batch: at 300k packets/s on AF_XDP, polling without a pause costs a whole
 * core (each poll finds one packet, or none), sleeping 20 to 50 us about
 * half of one, the transmit's system calls included (docs/swpath.md). Under full load every poll fills a burst and
 * it never sleeps. The price is latency: a packet may wait up to
 * idle_sleep_us (plus the kernel's timer slack) before it is polled. Off by
 * default: a dedicated core polls without a pause.
 */
static void
idle_sleep(struct sp_worker *w)
{
	sp_tx_flush_all(w);
	rte_rcu_qsbr_thread_offline(sp.rcu, w->index);
	rte_delay_us_sleep(sp.idle_sleep_us);
	rte_rcu_qsbr_thread_online(sp.rcu, w->index);
}

/* One poll of the worker's queues; whether any had packets, and whether
 * one had a full burst (a backlog: no sleeping). */
static void
poll_queues(struct sp_worker *w, bool spread, const struct sp_runtime *rt,
	    bool *worked, bool *backlog)
{
	struct rte_mbuf *pkts[SP_BURST];
	unsigned n;

	for (unsigned i = 0; i < w->n_rxq; i++) {
		const struct sp_rxq *q = &w->rxq[i];

		n = rte_eth_rx_burst(q->port, q->queue, pkts, SP_BURST);
		if (n == 0)
			continue;
		*worked = true;
		*backlog |= n == SP_BURST;
		SP_ADD(w, rx, n);
		if (unlikely(q->iface == SP_IFACE_TRUNK)) {
			trunk_input(w, pkts, (uint16_t)n, spread, rt);
			continue;
		}
		for (unsigned j = 0; j < n; j++) {
			struct sp_mbuf_meta *meta = sp_mbuf_meta(pkts[j]);

			meta->flags = 0;
			meta->iface = q->iface;
		}
		input(w, pkts, (uint16_t)n, q->iface, spread, rt);
	}
	n = rte_ring_sc_dequeue_burst(w->in_ring, (void **)pkts, SP_BURST,
				      NULL);
	if (n != 0) {
		*worked = true;
		*backlog |= n == SP_BURST;
		SP_ADD(w, ring_rx, n);
		sp_process_ring(w, pkts, (uint16_t)n, rt);
	}
}

/* What a loop does besides packets: the offload manager's commands, a
 * bounded step of aging (sessions and held fragments), and an operator's
 * `sessions delete|flush` (control/control.c waits for the answer). */
static void
housekeeping(struct sp_worker *w, const struct sp_runtime *rt)
{
	/* no rte_ring_empty() first: a dequeue finds an empty ring as cheaply,
	 * and reads the producer's tail atomically where rte_ring_count()
	 * does not (a race ThreadSanitizer reports) */
	drain_cmd_ring(w, rt);
	sp_nat_age(&w->nat, rt, w->now, SP_AGE_BUDGET);
	sp_frag_age(w->frag, w->now, SP_FRAG_AGE_BUDGET, w->cnt);
	if (unlikely(__atomic_load_n(&w->del_req, __ATOMIC_ACQUIRE) !=
		     w->del_done)) {
		uint32_t req = __atomic_load_n(&w->del_req, __ATOMIC_ACQUIRE);

		w->del_count = sp_nat_delete(&w->nat, rt, &w->del_filter,
					     w->now);
		__atomic_store_n(&w->del_done, req, __ATOMIC_RELEASE);
	}
}

/* At exit: what is buffered goes out; worker 0 transmits for the others
 * (software RSS) until they have all stopped. */
/* The held packets whose next hop now has a MAC leave, in their order;
 * those held SP_UNRES_MS are dropped (or all, at stop). */
static void
unres_poll(struct sp_worker *w, bool stopping)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < w->n_unres; i++) {
		struct sp_unres *u = &w->unres[i];
		uint16_t ni = sp_neigh_find(u->nh, u->iface);
		uint64_t mac = 0;

		if (ni != SP_NEIGH_NONE)
			mac = __atomic_load_n(&sp.neigh[ni].mac, __ATOMIC_ACQUIRE);
		if (mac & SP_NEIGH_VALID) {
			sp_set_eth(u->eth, mac, u->iface);
			sp_route_tx(w, u->iface, u->m, u->eth);
		} else if (stopping || w->now - u->since >= SP_UNRES_MS) {
			sp_drop(w, u->m, SP_CNT_drop_no_neighbor);
		} else {
			w->unres[kept++] = *u;
		}
	}
	w->n_unres = kept;
}

static void
stop(struct sp_worker *w, bool io, bool spread)
{
	unres_poll(w, true);
	sp_tx_flush_all(w);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	if (!io || !spread)
		return;
	for (;;) {
		unsigned done = 0;

		for (unsigned q = 0; q < sp.n_workers; q++)
			done += __atomic_load_n(&sp.workers[q]->done,
						__ATOMIC_ACQUIRE);
		drain_tx_rings(w);
		sp_tx_flush_all(w);
		if (done == sp.n_workers)
			break;
	}
	drain_tx_rings(w);
	sp_tx_flush_all(w);
}

int
sp_worker_main(void *arg)
{
	struct sp_worker *w = arg;
	const uint64_t drain_tsc = (sp.tsc_hz + US_PER_S - 1) / US_PER_S *
				   SP_TX_DRAIN_US;
	const bool io = w->index == 0;
	const bool spread = !sp.hw_rss && sp.n_workers > 1;
	uint64_t prev_tsc = 0;

	rte_rcu_qsbr_thread_register(sp.rcu, w->index);
	rte_rcu_qsbr_thread_online(sp.rcu, w->index);
	while (!__atomic_load_n(&sp.quit, __ATOMIC_RELAXED)) {
		const struct sp_runtime *rt;
		uint64_t cur = rte_rdtsc();
		bool worked = false, backlog = false;

		w->now = (uint32_t)((cur - sp.tsc0) * 1000 / sp.tsc_hz);
		/* Nothing from the last iteration is referenced past here. */
		rte_rcu_qsbr_quiescent(sp.rcu, w->index);
		rt = sp_runtime_get();
		poll_queues(w, spread, rt, &worked, &backlog);
		/* once a millisecond: an ARP round trip is longer, and the
		 * loop runs far more often than that */
		if (unlikely(w->n_unres != 0) && w->now != w->unres_polled) {
			w->unres_polled = w->now;
			unres_poll(w, false);
		}
		if (io) {
			if (spread)
				drain_tx_rings(w);
			drain_ctl_ring(w);
		}
		if (unlikely(cur - prev_tsc > drain_tsc)) {
			sp_tx_flush_all(w);
			prev_tsc = cur;
		}
		housekeeping(w, rt);
		if (worked)
			SP_COUNT_ADD(w->busy_tsc, rte_rdtsc() - cur);
		if (unlikely(sp.idle_sleep_us != 0) && !backlog)
			idle_sleep(w);
	}
	stop(w, io, spread);
	rte_rcu_qsbr_thread_offline(sp.rcu, w->index);
	rte_rcu_qsbr_thread_unregister(sp.rcu, w->index);
	/* the control thread's teardown follows (control/main.c) */
	SP_TSAN_RELEASE(w);
	return 0;
}
