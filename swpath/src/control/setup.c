/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "control/memory.h"
#include "control/peers.h"
#include "control/publish.h"
#include "control/setup.h"
#include "dataplane/dispatch.h"
#include "dataplane/frag.h"
#include "dataplane/sp.h"
#include "dataplane/vlan.h"
#include "persist/event_export.h"
#include "persist/events.h"
#include "persist/session_stream.h"
#include "persist/sink.h"
#include "qns.h"
#include "util/log.h"
#include "util/text.h"

#define SP_RX_DESC 1024
#define SP_TX_DESC 1024

/* Fields each zone's packets are spread on (rss.h). */
#define SP_RSS_BASE (RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP | \
		     RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV4_OTHER)
#define SP_RSS_INSIDE (SP_RSS_BASE | RTE_ETH_RSS_L3_SRC_ONLY)
#define SP_RSS_OUTSIDE (SP_RSS_BASE | RTE_ETH_RSS_L3_DST_ONLY | \
			RTE_ETH_RSS_L4_DST_ONLY)
#define SP_RSS_NEEDED (RTE_ETH_RSS_NONFRAG_IPV4_TCP | \
		       RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_L3_SRC_ONLY | \
		       RTE_ETH_RSS_L3_DST_ONLY | RTE_ETH_RSS_L4_DST_ONLY)

void
sp_setup_defaults(void)
{
	for (unsigned i = 0; i < RTE_MAX_ETHPORTS; i++)
		sp.port_iface[i] = -1;
	for (unsigned t = 0; t < SP_TO_MAX; t++)
		sp.timeout_s[t] = (const uint32_t[]){ 300, 7440, 240, 60 }[t];
	for (unsigned p = 0; p < SP_PI_MAX; p++)
		sp.filtering[p] = SP_FILTER_ADDR;
	sp.icmp_on_exhaustion = true;
	sp.icmp_rate = SP_ICMP_RATE_DEFAULT;
	sp.icmp_burst = SP_ICMP_BURST_DEFAULT;
	/* RFC 6888 REQ-4/5: one host cannot take more than 1/16 of a default
	 * worker table (controller/quicknat/config/model.py, Limits) */
	sp.ports_per_host = SP_HOST_LIMIT_DEFAULT;
	sp.sessions_per_host = SP_HOST_LIMIT_DEFAULT;
	/* [offload] after_packets: a session is announced at its first */
	sp.after_packets = 1;
	/* [offload] install: the controller writes, no kind is tagged */
	sp.learn = false;
	memset(sp.lease_class, SP_LEARN_NONE, sizeof(sp.lease_class));
	memset(sp.class_s, 0, sizeof(sp.class_s));
}

int
sp_setup_core(char *err, size_t errlen)
{
	static const struct rte_mbuf_dynfield meta_desc = {
		.name = "quicknat_meta",
		.size = sizeof(struct sp_mbuf_meta),
		.align = __alignof__(struct sp_mbuf_meta),
	};
	struct qns_params qp = { .reclaim = sp_rcu_defer };
	struct rte_hash_parameters hp = {
		.name = "sp_neigh",
		.entries = SP_MAX_NEIGH,
		.key_len = sizeof(struct sp_neigh_key),
		.hash_func = rte_hash_crc,
		.socket_id = SOCKET_ID_ANY,
		/* one writer (control), lock-free readers (workers) */
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF |
			      RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};
	size_t sz;

	sp.meta_offset = rte_mbuf_dynfield_register(&meta_desc);
	if (sp.meta_offset < 0)
		return sp_fail(err, errlen, "cannot register the mbuf field: %s",
			    rte_strerror(rte_errno));
	sp.qns = qns_create(&qp);
	sz = rte_rcu_qsbr_get_memsize(sp.n_workers);
	sp.rcu = rte_zmalloc("sp_rcu", sz, RTE_CACHE_LINE_SIZE);
	sp.neigh_hash = rte_hash_create(&hp);
	sp.msg_ring = rte_ring_create_elem("sp_msgs", sizeof(struct sp_msg),
					   SP_RING_SIZE, SOCKET_ID_ANY,
					   RING_F_SC_DEQ);
	if (sp.qns == NULL || sp.rcu == NULL || sp.neigh_hash == NULL ||
	    sp.msg_ring == NULL)
		return sp_fail(err, errlen,
			    "not enough memory for the shared tables; give DPDK more memory (-m)");
	rte_rcu_qsbr_init(sp.rcu, sp.n_workers);
	return 0;
}

/* Whether interface i's port can spread the workers' packets itself: a
 * queue per worker, a RETA of the same size as the others' (*reta_size),
 * RSS on TCP and UDP; *exact when it hashes the fields swpath needs. */
static bool
port_rss_capable(unsigned i, unsigned *reta_size, bool *exact)
{
	struct rte_eth_dev_info info;

	/* one port, both zones: the NIC cannot hash them apart */
	if (sp.port_iface[sp.ifaces[i].port] == SP_IFACE_TRUNK ||
	    rte_eth_dev_info_get(sp.ifaces[i].port, &info) != 0)
		return false;
	if (info.max_rx_queues < sp.n_workers ||
	    info.max_tx_queues < sp.n_workers || info.reta_size == 0 ||
	    info.reta_size > SP_RETA_MAX ||
	    (*reta_size != 0 && info.reta_size != *reta_size) ||
	    (info.flow_type_rss_offloads &
	     (RTE_ETH_RSS_NONFRAG_IPV4_TCP | RTE_ETH_RSS_NONFRAG_IPV4_UDP)) == 0)
		return false;
	*reta_size = info.reta_size;
	if ((info.flow_type_rss_offloads & SP_RSS_NEEDED) != SP_RSS_NEEDED)
		*exact = false;
	return true;
}

int
sp_setup_dispatch(char *err, size_t errlen)
{
	unsigned reta_size = 0;
	bool capable = true, exact = true;

	if (sp.n_workers == 1) {
		sp.hw_rss = false;
		sp_rss_init(&sp.rss, sp_rss_default_key, 128, 1);
		return 0;
	}
	for (unsigned i = 0; i < sp.n_ifaces && capable; i++)
		capable = port_rss_capable(i, &reta_size, &exact);
	switch (sp.dispatch) {
	case SP_DISPATCH_RSS:
		if (!capable)
			return sp_fail(err, errlen,
				    "--dispatch rss: a port has fewer than %u queues, no RSS redirection table, or 802.1Q sub-interfaces",
				    sp.n_workers);
		if (!exact)
			sp_log("warning", "a port cannot hash on source or destination only; replies will be handed between workers");
		sp.hw_rss = true;
		break;
	case SP_DISPATCH_SOFTWARE:
		sp.hw_rss = false;
		break;
	default:
		sp.hw_rss = capable && exact;
		break;
	}
	sp_rss_init(&sp.rss, sp_rss_default_key, sp.hw_rss ? reta_size : 128,
		    sp.n_workers);
	return 0;
}

int
sp_setup_mempool(char *err, size_t errlen)
{
	unsigned nq = sp.hw_rss ? sp.n_workers : 1;
	unsigned n = sp.n_ifaces * nq * (SP_RX_DESC + SP_TX_DESC) +
		     sp.n_workers * (SP_RING_SIZE + SP_BURST * (SP_MAX_IFACES + 4)) +
		     (sp.hw_rss || sp.n_workers == 1 ? 0 : sp.n_ifaces * SP_RING_SIZE) +
		     1024;

	size_t obj;

	if (n < 8191)
		n = 8191;
	/* objects, the pool's ring of pointers, its header with the caches */
	obj = rte_mempool_calc_obj_size(sizeof(struct rte_mbuf) +
					RTE_MBUF_DEFAULT_BUF_SIZE, 0, NULL);
	if (sp_memory_init((size_t)n * (obj + 16) + (4u << 20), sp.n_workers,
			   sp.sessions_per_worker, err, errlen) < 0)
		return -1;
	sp.mbuf_pool = rte_pktmbuf_pool_create("sp_mbufs", n, 256, 0,
					       RTE_MBUF_DEFAULT_BUF_SIZE,
					       sp_memory_socket((int)rte_socket_id()));
	if (sp.mbuf_pool == NULL)
		return sp_fail(err, errlen,
			    "not enough memory for %u packet buffers (%u MB); give DPDK more memory (-m) or hugepages",
			    n, (unsigned)((uint64_t)n * (RTE_MBUF_DEFAULT_BUF_SIZE + 192) >> 20));
	return 0;
}

static int
tx_buffer(struct sp_worker *w, struct sp_txq *q, uint16_t port,
	  uint16_t queue)
{
	q->buf = rte_zmalloc_socket("sp_txbuf", RTE_ETH_TX_BUFFER_SIZE(SP_BURST),
				    0, w->socket);
	if (q->buf == NULL)
		return -1;
	rte_eth_tx_buffer_init(q->buf, SP_BURST);
	rte_eth_tx_buffer_set_err_callback(q->buf,
					   rte_eth_tx_buffer_count_callback,
					   &w->cnt[SP_CNT_drop_tx_full]);
	q->port = port;
	q->queue = queue;
	return 0;
}

/* The rings worker i owns: hand-offs, control's packets, session commands,
 * the session stream, and mapping events when they are logged. */
static int
worker_rings(struct sp_worker *w, unsigned i, int socket)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "sp_in_%u", i);
	w->in_ring = rte_ring_create(name, SP_RING_SIZE, socket, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "sp_ctl_%u", i);
	w->ctl_ring = rte_ring_create(name, 256, socket, RING_F_SC_DEQ);
	if (sp_events_enabled()) {
		w->event_ring = sp_events_ring_create(i, socket);
		w->listening |= SP_LISTEN_EVENTS;   /* before the workers run */
		if (sp_export_sessions())
			w->listening |= SP_LISTEN_IPFIX_SESSIONS;
	}
	w->stream_ring = sp_stream_ring_create(i, socket);
	snprintf(name, sizeof(name), "sp_cmd_%u", i);
	w->cmd_ring = rte_ring_create_elem(name, sizeof(struct sp_session_cmd),
					   SP_CMD_RING_SIZE, socket,
					   RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (w->in_ring == NULL || w->ctl_ring == NULL ||
	    w->stream_ring == NULL || w->cmd_ring == NULL ||
	    (sp_events_enabled() && w->event_ring == NULL))
		return -1;
	return 0;
}

/* Worker i's receive queues and transmit paths: with NIC RSS a queue of
 * its own on every port; with software RSS worker 0 receives and sends
 * for all, the others send through its TX rings. */
static int
worker_queues(struct sp_worker *w, unsigned i)
{
	for (unsigned f = 0; f < sp.n_ifaces; f++) {
		uint16_t port = sp.ifaces[f].port;
		uint16_t queue = (uint16_t)(sp.hw_rss ? i : 0);

		if (!sp.hw_rss && i != 0) {
			w->tx[f].ring = sp.tx_rings[f];
			w->tx[f].port = port;
			continue;
		}
		/* a port's queue once, for all its interfaces */
		if (sp_port_first_iface(f))
			w->rxq[w->n_rxq++] = (struct sp_rxq){
				.port = port, .queue = queue,
				.iface = sp.port_iface[port] == SP_IFACE_TRUNK ?
					SP_IFACE_TRUNK : (uint16_t)f,
			};
		if (tx_buffer(w, &w->tx[f], port, queue) < 0)
			return -1;
	}
	return 0;
}

/* Worker i on lcore, its tables on its NUMA node. */
static int
worker_create(unsigned i, unsigned lcore, char *err, size_t errlen)
{
	int socket = sp_memory_socket((int)rte_lcore_to_socket_id(lcore));
	struct sp_worker *w = rte_zmalloc_socket("sp_worker", sizeof(*w),
						 RTE_CACHE_LINE_SIZE, socket);

	if (w == NULL)
		return sp_fail(err, errlen, "out of memory for worker %u", i);
	sp.workers[i] = w;
	w->index = i;
	w->lcore = lcore;
	w->socket = socket;
	/* the ICMP error bucket starts full (capped at first use) */
	w->icmp_tokens = UINT64_MAX / 2;
	if (sp_nat_init(&w->nat, &(struct sp_nat_params){
				.worker = i, .n_workers = sp.n_workers,
				.max_sessions = sp.sessions_per_worker,
				.counters = w->cnt, .socket = socket,
				.now_ms = sp_now_ms(), .env = &sp_dpdk_env,
				.shared = sp_nat_shared(),
				.observer = sp_sink_observer(w),
				.route_gen = sp.route_gen,
			}) < 0)
		return sp_fail(err, errlen,
			       "not enough memory for %u sessions on each of %u workers; lower --sessions or give DPDK more memory (-m)",
			       sp.sessions_per_worker, sp.n_workers);
	w->frag = rte_zmalloc_socket("sp_frag", sizeof(*w->frag),
				     RTE_CACHE_LINE_SIZE, socket);
	if (w->frag == NULL)
		return sp_fail(err, errlen,
			       "out of memory for worker %u's fragments", i);
	if (worker_rings(w, i, socket) < 0)
		return sp_fail(err, errlen, "cannot create worker rings: %s",
			       rte_strerror(rte_errno));
	if (worker_queues(w, i) < 0)
		return sp_fail(err, errlen, "out of memory for TX buffers");
	return 0;
}

int
sp_setup_workers(char *err, size_t errlen)
{
	unsigned lcore, i = 0;
	char name[RTE_RING_NAMESIZE];

	if (!sp.hw_rss && sp.n_workers > 1) {
		for (unsigned f = 0; f < sp.n_ifaces; f++) {
			snprintf(name, sizeof(name), "sp_tx_%u", f);
			sp.tx_rings[f] = rte_ring_create(name, SP_RING_SIZE,
							 SOCKET_ID_ANY,
							 RING_F_SC_DEQ);
			if (sp.tx_rings[f] == NULL)
				return sp_fail(err, errlen, "cannot create TX ring: %s",
					       rte_strerror(rte_errno));
		}
	}
	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (i == sp.n_workers)
			break;
		if (worker_create(i, lcore, err, errlen) < 0)
			return -1;
		i++;
	}
	if (i < sp.n_workers)
		return sp_fail(err, errlen,
			       "%u workers need %u lcores (one for control); the EAL has %u: use -l or --lcores before --",
			       sp.n_workers, sp.n_workers + 1, rte_lcore_count());
	return 0;
}

static int
port_setup(const struct sp_iface *ifc, char *err, size_t errlen)
{
	uint16_t port = ifc->port;
	uint16_t nq = (uint16_t)(sp.hw_rss ? sp.n_workers : 1);
	uint16_t nb_rxd = SP_RX_DESC, nb_txd = SP_TX_DESC;
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	int socket = rte_eth_dev_socket_id(port);
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_info_get(port, &info);
	if (rc != 0)
		return sp_fail(err, errlen, "interface %s: port %u: %s", ifc->name,
			    port, rte_strerror(-rc));
	if (sp.hw_rss) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_key = sp.rss.key;
		conf.rx_adv_conf.rss_conf.rss_key_len = SP_RSS_KEY_LEN;
		conf.rx_adv_conf.rss_conf.rss_hf =
			(ifc->zone == SP_ZONE_INSIDE ? SP_RSS_INSIDE :
						      SP_RSS_OUTSIDE) &
			info.flow_type_rss_offloads;
	}
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
	rc = rte_eth_dev_configure(port, nq, nq, &conf);
	if (rc == 0)
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd);
	for (uint16_t q = 0; rc == 0 && q < nq; q++) {
		rc = rte_eth_rx_queue_setup(port, q, nb_rxd, (unsigned)socket,
					    NULL, sp.mbuf_pool);
		if (rc == 0)
			rc = rte_eth_tx_queue_setup(port, q, nb_txd,
						    (unsigned)socket, NULL);
	}
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	if (rc != 0)
		return sp_fail(err, errlen, "interface %s: cannot start DPDK port %u: %s",
			    ifc->name, port, rte_strerror(-rc));
	rte_eth_promiscuous_enable(port); /* our MAC may not be the device's */
	if (sp.hw_rss) {
		struct rte_eth_rss_reta_entry64 reta[SP_RETA_MAX /
						     RTE_ETH_RETA_GROUP_SIZE];

		memset(reta, 0, sizeof(reta));
		for (unsigned i = 0; i < info.reta_size; i++) {
			reta[i / RTE_ETH_RETA_GROUP_SIZE].mask |=
				1ull << (i % RTE_ETH_RETA_GROUP_SIZE);
			reta[i / RTE_ETH_RETA_GROUP_SIZE]
				.reta[i % RTE_ETH_RETA_GROUP_SIZE] = sp.rss.reta[i];
		}
		rc = rte_eth_dev_rss_reta_update(port, reta, info.reta_size);
		if (rc != 0)
			sp_log("warning", "interface %s: cannot program the RSS table (%s); misplaced packets will be handed between workers",
			       ifc->name, rte_strerror(-rc));
	}
	return 0;
}

int
sp_setup_ports(char *err, size_t errlen)
{
	sp_vlan_setup();
	if (sp_peers_setup(err, errlen) < 0)
		return -1;
	for (unsigned i = 0; i < sp.n_ifaces; i++)
		if (sp_port_first_iface(i) &&
		    port_setup(&sp.ifaces[i], err, errlen) < 0)
			return -1;
	return 0;
}

void
sp_ports_close(void)
{
	for (unsigned i = 0; i < sp.n_ifaces; i++) {
		if (!sp_port_first_iface(i))
			continue;
		rte_eth_dev_stop(sp.ifaces[i].port);
		rte_eth_dev_close(sp.ifaces[i].port);
	}
}

void
sp_teardown(void)
{
	sp_ports_close();
	for (unsigned i = 0; i < sp.n_workers; i++) {
		struct sp_worker *w = sp.workers[i];

		if (w == NULL)
			continue;
		sp_nat_free(&w->nat);
		if (w->frag != NULL)
			sp_frag_flush(w->frag, w->cnt);
		rte_free(w->frag);
		for (unsigned f = 0; f < SP_MAX_IFACES; f++)
			rte_free(w->tx[f].buf);
		rte_ring_free(w->in_ring);
		rte_ring_free(w->ctl_ring);
		rte_ring_free(w->event_ring);
		rte_ring_free(w->stream_ring);
		rte_ring_free(w->cmd_ring);
		rte_free(w);
		sp.workers[i] = NULL;
	}
	sp_rcu_reclaim(true);
	for (unsigned i = 0; i < sp.n_pools; i++)
		sp_pool_free(sp.pools[i]);
	sp.n_pools = 0;
	qns_free(sp.qns);
	sp.qns = NULL;
	free(sp.rt);
	sp.rt = NULL;
	rte_lpm_free(sp.lpm);
	rte_hash_free(sp.neigh_hash);
	rte_ring_free(sp.msg_ring);
	for (unsigned f = 0; f < SP_MAX_IFACES; f++)
		rte_ring_free(sp.tx_rings[f]);
	rte_free(sp.rcu);
	rte_mempool_free(sp.mbuf_pool);
	sp.mbuf_pool = NULL;
	sp_memory_fini();
}
