/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Output: next hop from the routes and the neighbour table, Ethernet
 * rewrite, fragments over the MTU, then buffered TX (tx.h); and hand-off
 * of a packet to the worker that owns it.
 */
#ifndef SP_FWD_H
#define SP_FWD_H

#include <rte_ethdev.h>
#include <rte_hash.h>
#include <rte_lpm.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "dataplane/ip_fragment.h"
#include "dataplane/packet.h"
#include "dataplane/sp.h"
#include "dataplane/tx.h"

/* Queues routed frame m (eth at its start) for output on iface: as
 * fragments when its packet is over iface's MTU (ip_fragment.h). */
static inline void
sp_route_tx(struct sp_worker *w, uint16_t iface, struct rte_mbuf *m,
	    const struct rte_ether_hdr *eth)
{
	if (unlikely(sp_over_mtu(eth, iface)))
		sp_fragment_send(w, iface, m);
	else
		sp_tx(w, iface, m);
}

/* Passes m to worker owner's ring (at most once per packet). */
static inline void
sp_handoff(struct sp_worker *w, struct rte_mbuf *m, unsigned owner,
	   uint32_t extra_meta)
{
	*sp_meta(m) |= SP_META_HANDED | extra_meta;
	if (unlikely(rte_ring_mp_enqueue(sp.workers[owner]->in_ring, m) != 0)) {
		sp_drop(w, m, SP_CNT_drop_ring_full);
		return;
	}
	SP_INC(w, handoff);
}

static inline uint16_t
sp_route_lookup(rte_be32_t dst)
{
	uint32_t nh;

	if (rte_lpm_lookup(sp.lpm, rte_be_to_cpu_32(dst), &nh) != 0)
		return __atomic_load_n(&sp.default_route, __ATOMIC_ACQUIRE);
	return (uint16_t)nh;
}

static inline uint16_t
sp_neigh_find(uint32_t addr, uint16_t iface)
{
	struct sp_neigh_key key = { .addr = addr, .iface = iface };
	void *data;

	if (rte_hash_lookup_data(sp.neigh_hash, &key, &data) < 0)
		return SP_NEIGH_NONE;
	return (uint16_t)(uintptr_t)data;
}

/* Asks the control thread to resolve addr (at most once a second each). */
static inline void
sp_resolve(struct sp_worker *w, uint32_t addr, uint16_t iface)
{
	struct sp_msg msg = { .type = SP_MSG_RESOLVE, .iface = iface,
			      .addr = addr };

	if (addr == w->resolve_addr && w->now - w->resolve_time < 1000)
		return;
	w->resolve_addr = addr;
	w->resolve_time = w->now;
	rte_ring_mp_enqueue_elem(sp.msg_ring, &msg, sizeof(msg));
}

static inline void
sp_set_eth(struct rte_ether_hdr *eth, uint64_t mac, uint16_t iface)
{
	memcpy(&eth->dst_addr, &mac, RTE_ETHER_ADDR_LEN);
	rte_ether_addr_copy(&sp.ifaces[iface].mac, &eth->src_addr);
}

/*
 * True when slot ni still holds nh's entry on iface, its MAC word loaded
 * into *mac. The control thread reuses the slots of neighbours it forgot
 * (control/routing.h), so an index kept across packets is checked before
 * each use; the word is read first (acquire), and a slot's new address is
 * written before its word, so a reused slot never passes for the old one.
 */
static inline bool
sp_neigh_is(uint16_t ni, uint32_t nh, uint16_t iface, uint64_t *mac)
{
	const struct sp_neigh *n = &sp.neigh[ni];

	*mac = __atomic_load_n(&n->mac, __ATOMIC_ACQUIRE);
	return n->addr == nh && n->iface == iface;
}

/* Whether a packet for nh on iface is held: a later one waits behind it,
 * so that a flow's packets leave in their order. */
static inline bool
sp_unres_has(const struct sp_worker *w, uint32_t nh, uint16_t iface)
{
	for (unsigned i = 0; i < w->n_unres; i++)
		if (w->unres[i].nh == nh && w->unres[i].iface == iface)
			return true;
	return false;
}

/*
 * Holds m until nh's MAC is known (the control thread is asking for it),
 * as Linux queues packets for an unresolved neighbour (unres_qlen, 3): a
 * flow's first packet towards a next hop not yet resolved is not lost.
 * sp_unres_poll sends it or, after SP_UNRES_MS, drops it. Dropped at once
 * when SP_UNRES_PER_NEIGH wait for nh or the worker holds SP_UNRES_MAX.
 */
static inline int
sp_unres_hold(struct sp_worker *w, struct rte_mbuf *m,
	      struct rte_ether_hdr *eth, uint32_t nh, uint16_t iface)
{
	unsigned same = 0;

	for (unsigned i = 0; i < w->n_unres; i++)
		same += w->unres[i].nh == nh && w->unres[i].iface == iface;
	if (w->n_unres == SP_UNRES_MAX || same == SP_UNRES_PER_NEIGH) {
		sp_drop(w, m, SP_CNT_drop_no_neighbor);
		return -1;
	}
	w->unres[w->n_unres++] = (struct sp_unres){
		.m = m, .eth = eth, .nh = nh, .iface = iface, .since = w->now,
	};
	SP_INC(w, neighbor_held);
	return 0;
}

/*
 * Sends m, an IPv4 packet to dst, by route ri: next hop's MAC, Ethernet
 * rewrite, TX. *neigh caches the neighbour index (SP_NEIGH_NONE: look it
 * up). A next hop without a MAC yet is asked for and m held meanwhile
 * (sp_unres_hold). Returns 0 (sent or held), or -1 when m was dropped.
 */
static inline int
sp_send(struct sp_worker *w, struct rte_mbuf *m, struct rte_ether_hdr *eth,
	rte_be32_t dst, uint16_t ri, uint16_t *neigh)
{
	const struct sp_route *r = &sp.routes[ri];
	uint32_t nh = r->has_via ? r->via : rte_be_to_cpu_32(dst);
	uint16_t ni = *neigh;
	uint64_t mac;

	if (unlikely(ni == SP_NEIGH_NONE ||
		     !sp_neigh_is(ni, nh, r->iface, &mac))) {
		/* the last gateway's index saves a new session's lookup */
		if (r->has_via && w->via_route1 == ri + 1u &&
		    sp_neigh_is(w->via_neigh, nh, r->iface, &mac)) {
			ni = w->via_neigh;
		} else {
			ni = sp_neigh_find(nh, r->iface);
			if (ni == SP_NEIGH_NONE) {
				sp_resolve(w, nh, r->iface);
				return sp_unres_hold(w, m, eth, nh, r->iface);
			}
			mac = __atomic_load_n(&sp.neigh[ni].mac,
					      __ATOMIC_ACQUIRE);
			if (r->has_via) {
				w->via_route1 = (uint16_t)(ri + 1u);
				w->via_neigh = ni;
			}
		}
		*neigh = ni;
	}
	if (unlikely(!(mac & SP_NEIGH_VALID))) {
		sp_resolve(w, nh, r->iface);
		return sp_unres_hold(w, m, eth, nh, r->iface);
	}
	if (unlikely(w->n_unres != 0) && sp_unres_has(w, nh, r->iface))
		return sp_unres_hold(w, m, eth, nh, r->iface);
	/* a write only when the control thread has cleared it: about once
	 * a second per neighbour in use, not per packet */
	if (unlikely(!(mac & SP_NEIGH_USED)))
		__atomic_fetch_or(&sp.neigh[ni].mac, SP_NEIGH_USED,
				  __ATOMIC_RELAXED);
	sp_set_eth(eth, mac, r->iface);
	sp_route_tx(w, r->iface, m, eth);
	return 0;
}

_Static_assert(SP_MAX_ROUTES == 1u << SP_ROUTE_SLOT_BITS,
	       "a session's cached route holds a slot in SP_ROUTE_SLOT_BITS");

/*
 * The route of session s's packets in direction dir, cached in the session
 * with its slot's generation: to the remote in2out, to the inside host (or
 * DNAT server) out2in, their destinations once translated. Looked up again
 * when the slot's route was replaced or deleted since (control/routes.h);
 * SP_ROUTE_NONE, not cached, when there is none (a route added later is
 * found).
 */
static inline uint16_t
sp_session_route(struct sp_session *s, unsigned dir)
{
	uint16_t c = s->route[dir];
	uint16_t ri = c & (SP_MAX_ROUTES - 1);

	/* the control thread bumps a slot's gen (control/routes.c) */
	if (likely(c != SP_ROUTE_UNSET) &&
	    likely(__atomic_load_n(&sp.route_gen[ri], __ATOMIC_RELAXED) ==
		   c >> SP_ROUTE_SLOT_BITS))
		return ri;
	ri = sp_route_lookup(dir == SP_DIR_IN2OUT ? s->rem_addr : s->int_addr);
	if (ri != SP_ROUTE_NONE)
		s->route[dir] = (uint16_t)(ri | __atomic_load_n(&sp.route_gen[ri],
								__ATOMIC_RELAXED)
					   << SP_ROUTE_SLOT_BITS);
	return ri;
}

/* The MTU of the interface route ri leaves by. */
static inline uint16_t
sp_route_mtu(uint16_t ri)
{
	return sp.ifaces[sp.routes[ri].iface].mtu;
}

/*
 * Sends a translated packet of session s in direction dir towards its
 * destination; the route and neighbour are cached in the session.
 */
static inline void
sp_forward(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	   struct sp_session *s, unsigned dir)
{
	uint16_t ri = sp_session_route(s, dir);

	if (unlikely(ri == SP_ROUTE_NONE)) {
		sp_drop(w, m, SP_CNT_drop_no_route);
		return;
	}
	sp_send(w, m, p->eth, p->ip->dst_addr, ri, &s->neigh[dir]);
}

#endif /* SP_FWD_H */
