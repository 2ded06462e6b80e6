/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Slow-path peers (peer.h). A short array, scanned: a switch has a handful
 * of instances, and only hairpins, and ICMP errors and fragments from
 * outside that miss, ask.
 */
#include <rte_ether.h>

#include "dataplane/dispatch.h"
#include "dataplane/fwd.h"
#include "dataplane/peer.h"

struct sp_peers sp_peers;

/* A pool's address (not an SNAT `to` address, which has a pool of its own
 * inside; the switch steers only pools by block). */
static bool
pool_address(uint32_t addr)
{
	for (unsigned i = 0; i < sp.n_pools; i++) {
		const struct sp_pool *pool = sp.pools[i];

		if (pool == NULL || pool->internal)
			continue;
		for (uint32_t j = 0; j < pool->n_prefixes; j++) {
			const struct sp_prefix *pf = &pool->prefixes[j];
			uint32_t mask = sp_prefix_mask(pf->len);

			if ((addr & mask) == (pf->addr & mask))
				return true;
		}
	}
	return false;
}

unsigned
sp_peer_owner(uint32_t addr, uint16_t port, bool has_port)
{
	if (has_port && pool_address(addr))
		for (unsigned i = 0; i < sp_peers.n; i++)
			if (port >= sp_peers.p[i].port_min &&
			    port <= sp_peers.p[i].port_max)
				return i;
	return sp_peers.deflt;  /* the switch's lowest-priority entries' */
}

int
sp_peer_elsewhere(struct rte_mbuf *m)
{
	uint32_t addr = 0;
	uint16_t port = 0;
	unsigned owner;
	int has_port;

	if (likely(sp_peers.n == 0))
		return -1;
	has_port = sp_outside_end(m, &addr, &port);
	owner = sp_peer_owner(addr, port, has_port);
	return owner == sp_peers.self ? -1 : (int)owner;
}

int
sp_peer_elsewhere_port(rte_be32_t dst, rte_be16_t dport)
{
	unsigned owner;

	if (likely(sp_peers.n == 0))
		return -1;
	owner = sp_peer_owner(rte_be_to_cpu_32(dst), rte_be_to_cpu_16(dport),
			      true);
	return owner == sp_peers.self ? -1 : (int)owner;
}

void
sp_peer_send(struct sp_worker *w, struct rte_mbuf *m, unsigned owner,
	     bool relay)
{
	uint64_t mac = __atomic_load_n(&sp.neigh[sp_peers.neigh].mac,
				       __ATOMIC_RELAXED);

	sp_set_eth(rte_pktmbuf_mtod(m, struct rte_ether_hdr *), mac,
		   sp_peers.iface);
	m->vlan_tci = sp_peers.p[owner].vid + (relay ? 1 : 0);
	if (unlikely(rte_vlan_insert(&m) < 0)) {
		sp_drop(w, m, SP_CNT_drop_slow_path_tag);
		return;
	}
	SP_INC(w, peer_handoff);
	sp_tx_frame(w, sp_peers.iface, m);
}
