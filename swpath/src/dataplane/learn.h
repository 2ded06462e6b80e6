/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Learn mode on the packet path (core/learn.h says what the tag holds and
 * which sessions get one): translate() captures a packet's 5-tuple before
 * it rewrites it (sp_learn_begin), then puts the tag in front of its IPv4
 * header (sp_learn_finish); sp_tx() puts the 802.1Q header in front of that
 * as for any packet (vlan.h), whose EtherType is then the tag's. In place,
 * in the mbuf's headroom: no allocation, no lock.
 */
#ifndef SP_DATAPLANE_LEARN_H
#define SP_DATAPLANE_LEARN_H

#include <rte_icmp.h>
#include <rte_mbuf.h>

#include "core/learn.h"
#include "dataplane/fwd.h"

/* The tag of packet p as it is now (before its rewrite): its 5-tuple, the
 * class cls, and the direction dir it is translated in. */
static inline void
sp_learn_capture(const struct sp_pkt *p, unsigned dir, uint8_t cls,
		 struct sp_learn_tag *t)
{
	t->orig_src = p->ip->src_addr;
	t->orig_dst = p->ip->dst_addr;
	if (p->proto == IPPROTO_ICMP) {
		/* an echo's key has the identifier as both ports */
		t->orig_sport = ((const struct rte_icmp_hdr *)p->l4)->icmp_ident;
		t->orig_dport = t->orig_sport;
	} else {
		/* TCP and UDP: the ports are the first four bytes */
		t->orig_sport = ((const rte_be16_t *)p->l4)[0];
		t->orig_dport = ((const rte_be16_t *)p->l4)[1];
	}
	t->lease = cls;
	t->flags = dir == SP_DIR_OUT2IN ? SP_LEARN_DIR_OUT2IN : 0;
	t->eth_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
}

/*
 * Puts tag t between m's Ethernet header (p->eth, at the start of its data)
 * and its IPv4 header, the Ethernet type saying SP_LEARN_ETHERTYPE; p->eth
 * follows the header. Returns -1, m unchanged, when the headroom cannot
 * take the tag and the 802.1Q header that sp_tx() adds in front of it.
 */
static inline int
sp_learn_push(struct rte_mbuf *m, struct sp_pkt *p,
	      const struct sp_learn_tag *t)
{
	struct rte_ether_hdr *eth;

	if (unlikely(rte_pktmbuf_headroom(m) <
		     sizeof(*t) + sizeof(struct rte_vlan_hdr)))
		return -1;
	eth = (struct rte_ether_hdr *)rte_pktmbuf_prepend(m, sizeof(*t));
	memmove(eth, p->eth, 2 * RTE_ETHER_ADDR_LEN);
	eth->ether_type = RTE_BE16(SP_LEARN_ETHERTYPE);
	memcpy(eth + 1, t, sizeof(*t));
	p->eth = eth;
	return 0;
}

/* Whether session s's packets in direction dir leave towards the switch
 * (a slow-path interface): the tag is for it alone. */
static inline bool
sp_learn_towards_switch(struct sp_session *s, unsigned dir)
{
	uint16_t ri = sp_session_route(s, dir);

	return ri != SP_ROUTE_NONE && sp.ifaces[sp.routes[ri].iface].slow_path;
}

/*
 * Before translate() rewrites packet p of session s in direction dir:
 * whether it leaves with a learn tag, whose tuple is then captured in *t.
 * Counts a packet that learn mode leaves untagged (core/learn.h says which).
 */
static inline bool
sp_learn_begin(struct sp_worker *w, struct rte_mbuf *m, const struct sp_pkt *p,
	       struct sp_session *s, unsigned dir, const struct sp_runtime *rt,
	       struct sp_learn_tag *t)
{
	uint8_t cls = 0;
	enum sp_learn_skip r = sp_learn_class(
		rt, s, p->frag != SP_FRAG_NONE,
		(p->tcp_flags & RTE_TCP_RST_FLAG) != 0,
		(*sp_meta(m) & (SP_META_OUTSIDE | SP_META_RELAYED)) != 0, &cls);

	if (likely(r == SP_LEARN_OFF))
		return false;
	if (r != SP_LEARN_TAG || !sp_learn_towards_switch(s, dir)) {
		SP_INC(w, learn_not_learnable);
		return false;
	}
	sp_learn_capture(p, dir, cls, t);
	return true;
}

/*
 * After the rewrite: puts the tag on the packet, and records its lease in
 * the session, whose idle timeout it lengthens (sp_session_timeout_ms).
 * Without headroom the packet goes untagged (counted): the switch then
 * learns nothing and the flow's next packet comes here again.
 */
static inline void
sp_learn_finish(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
		struct sp_session *s, const struct sp_learn_tag *t,
		const struct sp_runtime *rt)
{
	if (unlikely(sp_learn_push(m, p, t) < 0)) {
		SP_INC(w, learn_no_headroom);
		return;
	}
	sp_learn_record(rt, s, t->lease);
	if (t->flags & SP_LEARN_DIR_OUT2IN)
		SP_INC(w, learn_tagged_out2in);
	else
		SP_INC(w, learn_tagged_in2out);
}

#endif /* SP_DATAPLANE_LEARN_H */
