/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The router's own traffic: ARP (replies for our addresses, and for the
 * NAT-owned public addresses on outside links: proxy ARP), learning
 * neighbours from ARP, and ICMP echo replies for the router's addresses.
 */
#include <rte_arp.h>

#include "dataplane/fwd.h"
#include "dataplane/l2.h"

int
sp_is_local(rte_be32_t addr)
{
	for (unsigned i = 0; i < sp.n_ifaces; i++)
		if (sp.ifaces[i].has_addr && sp.ifaces[i].addr_be == addr)
			return 1;
	return 0;
}

static int
on_link(const struct sp_iface *ifc, uint32_t addr)
{
	uint32_t mask = ifc->plen == 0 ? 0 : ~0u << (32 - ifc->plen);

	return ifc->has_addr && (addr & mask) == (ifc->addr & mask);
}

/*
 * RFC 826's merge: the sender of an ARP packet on this link updates its
 * entry when there is one, and makes one only when the packet is for us
 * (we are its target). Hosts asking each other do not fill the table, as
 * in Linux. The control thread keeps the table.
 */
static void
arp_learn(struct sp_worker *w, const struct rte_arp_hdr *arp, uint16_t iface,
	  uint32_t sip, bool for_us)
{
	const struct sp_iface *ifc = &sp.ifaces[iface];
	struct sp_msg msg = { .type = SP_MSG_LEARN, .iface = iface, .addr = sip };

	if (!on_link(ifc, sip) || sip == ifc->addr ||
	    !rte_is_unicast_ether_addr(&arp->arp_data.arp_sha))
		return;
	if (!for_us && sp_neigh_find(sip, iface) == SP_NEIGH_NONE)
		return;
	memcpy(msg.mac, &arp->arp_data.arp_sha, RTE_ETHER_ADDR_LEN);
	if (rte_ring_mp_enqueue_elem(sp.msg_ring, &msg, sizeof(msg)) == 0)
		SP_INC(w, arp_learned);
}

/*
 * RFC 5227 sec. 2.4: an ARP packet whose sender address is ours, from a MAC
 * not ours, is an address conflict. Another host on the link uses one of
 * our addresses (a misconfiguration that takes our traffic): counted, not
 * learned, not answered; the control thread logs it and defends the
 * address (routing.c). A slow-path link is the switch's alone: not looked
 * at there.
 */
static bool
arp_conflict(struct sp_worker *w, const struct rte_arp_hdr *arp,
	     uint16_t iface, uint32_t sip, const struct sp_runtime *rt)
{
	const struct sp_iface *ifc = &sp.ifaces[iface];
	struct sp_msg msg = { .type = SP_MSG_CONFLICT, .iface = iface,
			      .addr = sip };

	if (ifc->slow_path ||
	    !((ifc->has_addr && sip == ifc->addr) ||
	      (ifc->zone == SP_ZONE_OUTSIDE && sp_rt_owned(rt, sip))))
		return false;
	/* ours, looped back or from another of our interfaces on the link
	 * (two that defend each other's pool addresses would never stop) */
	for (unsigned i = 0; i < sp.n_ifaces; i++)
		if (rte_is_same_ether_addr(&arp->arp_data.arp_sha,
					   &sp.ifaces[i].mac))
			return false;
	SP_INC(w, arp_conflicts);
	memcpy(msg.mac, &arp->arp_data.arp_sha, RTE_ETHER_ADDR_LEN);
	rte_ring_mp_enqueue_elem(sp.msg_ring, &msg, sizeof(msg));
	return true;
}

void
sp_arp_input(struct sp_worker *w, struct rte_mbuf *m, uint16_t iface,
	     const struct sp_runtime *rt)
{
	const struct sp_iface *ifc = &sp.ifaces[iface];
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *arp;
	uint32_t sip, tip;
	int ours;

	if (rte_pktmbuf_data_len(m) < sizeof(*eth) + sizeof(*arp)) {
		sp_drop(w, m, SP_CNT_drop_arp);
		return;
	}
	arp = (struct rte_arp_hdr *)(eth + 1);
	if (arp->arp_hardware != RTE_BE16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != RTE_BE16(RTE_ETHER_TYPE_IPV4) ||
	    arp->arp_hlen != RTE_ETHER_ADDR_LEN || arp->arp_plen != 4) {
		sp_drop(w, m, SP_CNT_drop_arp);
		return;
	}
	sip = rte_be_to_cpu_32(arp->arp_data.arp_sip);
	tip = rte_be_to_cpu_32(arp->arp_data.arp_tip);
	if (unlikely(arp_conflict(w, arp, iface, sip, rt))) {
		sp_drop(w, m, SP_CNT_drop_arp);
		return;
	}
	ours = (ifc->has_addr && tip == ifc->addr) ||
	       (ifc->zone == SP_ZONE_OUTSIDE && sp_rt_owned(rt, tip));
	arp_learn(w, arp, iface, sip, ours);
	if (arp->arp_opcode != RTE_BE16(RTE_ARP_OP_REQUEST) || !ours ||
	    sip == tip) {
		sp_drop(w, m, SP_CNT_drop_arp);
		return;
	}
	/* Answer in place. */
	arp->arp_opcode = RTE_BE16(RTE_ARP_OP_REPLY);
	rte_ether_addr_copy(&arp->arp_data.arp_sha, &arp->arp_data.arp_tha);
	arp->arp_data.arp_tip = arp->arp_data.arp_sip;
	rte_ether_addr_copy(&ifc->mac, &arp->arp_data.arp_sha);
	arp->arp_data.arp_sip = rte_cpu_to_be_32(tip);
	rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
	rte_ether_addr_copy(&ifc->mac, &eth->src_addr);
	SP_INC(w, arp_replies);
	sp_tx(w, iface, m);
}

void
sp_local_input(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	       uint16_t iface)
{
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)p->l4;
	rte_be32_t addr;
	uint16_t old, new;

	if (p->proto != IPPROTO_ICMP ||
	    p->l4_len < sizeof(struct rte_icmp_hdr) ||
	    icmp->icmp_type != SP_ICMP_ECHO_REQUEST || icmp->icmp_code != 0) {
		sp_drop(w, m, SP_CNT_drop_local);
		return;
	}
	memcpy(&old, &icmp->icmp_type, sizeof(old));
	icmp->icmp_type = SP_ICMP_ECHO_REPLY;
	memcpy(&new, &icmp->icmp_type, sizeof(new));
	icmp->icmp_cksum = sp_cksum_adjust16(icmp->icmp_cksum, old, new);
	addr = p->ip->src_addr;
	p->ip->src_addr = p->ip->dst_addr;
	p->ip->dst_addr = addr;
	p->ip->time_to_live = 64;
	p->ip->hdr_checksum = 0;
	p->ip->hdr_checksum = rte_ipv4_cksum(p->ip);
	rte_ether_addr_copy(&p->eth->src_addr, &p->eth->dst_addr);
	rte_ether_addr_copy(&sp.ifaces[iface].mac, &p->eth->src_addr);
	SP_INC(w, icmp_echo_replies);
	sp_tx(w, iface, m);
}

/* An ARP request from iface's MAC and sender (network order) for target,
 * broadcast or to dst alone. */
static struct rte_mbuf *
arp_request(uint16_t iface, rte_be32_t sender, uint32_t target,
	    const struct rte_ether_addr *dst)
{
	const struct sp_iface *ifc = &sp.ifaces[iface];
	struct rte_mbuf *m;
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;

	m = rte_pktmbuf_alloc(sp.mbuf_pool);
	if (m == NULL)
		return NULL;
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(
		m, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
	if (eth == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memset(eth, 0, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
	if (dst != NULL)
		rte_ether_addr_copy(dst, &eth->dst_addr);
	else
		memset(&eth->dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
	rte_ether_addr_copy(&ifc->mac, &eth->src_addr);
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);
	arp = (struct rte_arp_hdr *)(eth + 1);
	arp->arp_hardware = RTE_BE16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = RTE_BE16(RTE_ARP_OP_REQUEST);
	rte_ether_addr_copy(&ifc->mac, &arp->arp_data.arp_sha);
	arp->arp_data.arp_sip = sender;
	arp->arp_data.arp_tip = rte_cpu_to_be_32(target);
	m->port = ifc->port;
	sp_mbuf_meta(m)->iface = iface;
	return m;
}

struct rte_mbuf *
sp_arp_request(uint16_t iface, uint32_t target,
	       const struct rte_ether_addr *dst)
{
	const struct sp_iface *ifc = &sp.ifaces[iface];

	if (!ifc->has_addr)
		return NULL;
	return arp_request(iface, ifc->addr_be, target, dst);
}

struct rte_mbuf *
sp_arp_announce(uint16_t iface, uint32_t addr)
{
	return arp_request(iface, rte_cpu_to_be_32(addr), addr, NULL);
}
