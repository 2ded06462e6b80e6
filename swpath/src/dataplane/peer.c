/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Slow-path peers (peer.h). A short array, scanned: a switch has a handful
 * of instances, and only hairpins, and ICMP errors and fragments from
 * outside that miss, ask.
 */
#include <rte_ether.h>

#include "core/allocator.h"
#include "dataplane/fastpath.h"
#include "dataplane/fwd.h"
#include "dataplane/peer.h"

struct sp_peers sp_peers;

int
sp_peer_add(const struct sp_cmd_peer *c, char *err, size_t errlen)
{
	if (sp.running)
		return sp_fail(err, errlen, "peer: only at start-up");
	if (sp_peers.n == SP_MAX_PEERS)
		return sp_fail(err, errlen, "peer: more than %d instances",
			       SP_MAX_PEERS);
	for (unsigned i = 0; i < sp_peers.n; i++) {
		const struct sp_peer *o = &sp_peers.p[i];

		/* each has two: vid and vid + 1 */
		if (o->vid == c->vid || o->vid + 1 == c->vid ||
		    c->vid + 1 == o->vid)
			return sp_fail(err, errlen,
				       "peer vid %u: overlaps vid %u (each instance has two, V and V + 1)",
				       c->vid, o->vid);
		if (c->port_min <= o->port_max && o->port_min <= c->port_max)
			return sp_fail(err, errlen,
				       "peer vid %u: ports %u-%u overlap those of vid %u (%u-%u); each instance owns its own block",
				       c->vid, c->port_min, c->port_max, o->vid,
				       o->port_min, o->port_max);
	}
	if (c->self && sp_peers.has_self)
		return sp_fail(err, errlen,
			       "peer vid %u: a second 'self' (vid %u is)",
			       c->vid, sp_peers.p[sp_peers.self].vid);
	if (c->is_default && sp_peers.has_default)
		return sp_fail(err, errlen,
			       "peer vid %u: a second 'default' (vid %u is)",
			       c->vid, sp_peers.p[sp_peers.deflt].vid);
	if (c->self) {
		sp_peers.self = sp_peers.n;
		sp_peers.has_self = true;
	}
	if (c->is_default) {
		sp_peers.deflt = sp_peers.n;
		sp_peers.has_default = true;
	}
	sp_peers.p[sp_peers.n++] = (struct sp_peer){
		.vid = c->vid, .port_min = c->port_min,
		.port_max = c->port_max,
	};
	return 0;
}

int
sp_peers_setup(char *err, size_t errlen)
{
	int iface = -1;

	if (sp_peers.n == 0)
		return 0;
	if (!sp_peers.has_self)
		return sp_fail(err, errlen,
			       "peer: none is 'self' (which instance is this one?)");
	for (unsigned i = 0; i < sp.n_ifaces && iface < 0; i++)
		if (sp.ifaces[i].slow_path &&
		    sp.ifaces[i].zone == SP_ZONE_OUTSIDE)
			iface = (int)i;
	if (iface < 0)
		return sp_fail(err, errlen,
			       "peer: needs an outside interface with slow_path true (peers are reached through the switch)");
	sp_peers.iface = (uint16_t)iface;
	sp_peers.neigh = SP_NEIGH_NONE;
	for (unsigned r = 0; r < sp.n_routes; r++)
		if (sp.routes[r].iface == iface && sp.routes[r].has_via)
			sp_peers.neigh = sp_neigh_find(sp.routes[r].via,
						       (uint16_t)iface);
	if (sp_peers.neigh == SP_NEIGH_NONE)
		return sp_fail(err, errlen,
			       "peer: interface %s needs a route via the switch and its neighbour entry",
			       sp.ifaces[iface].name);
	return 0;
}

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
			uint32_t mask = pf->len == 0 ? 0 : ~0u << (32 - pf->len);

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
