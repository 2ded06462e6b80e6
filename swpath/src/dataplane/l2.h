/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The router's own traffic: ARP (replies for our addresses, and for the
 * NAT-owned public addresses on outside links: proxy ARP), learning
 * neighbours from ARP, ARP requests for next hops, and ICMP echo replies
 * for the router's addresses.
 */
#ifndef SP_L2_H
#define SP_L2_H

#include "dataplane/packet.h"
#include "dataplane/sp.h"

/* An ARP frame received on iface: answered, learned from, or dropped. */
void sp_arp_input(struct sp_worker *w, struct rte_mbuf *m, uint16_t iface,
		  const struct sp_runtime *rt);

/* A packet to one of the router's addresses: an echo request is
 * answered, anything else dropped (drop_local). */
void sp_local_input(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
		    uint16_t iface);

/* Whether addr (network order) is one of the router's interface addresses. */
int sp_is_local(rte_be32_t addr);

/* An ARP request for target from iface's address, broadcast or (dst not
 * NULL) to dst alone, RFC 1122's unicast poll (control thread: it hands it
 * to worker 0 to send), or NULL. */
struct rte_mbuf *sp_arp_request(uint16_t iface, uint32_t target,
				const struct rte_ether_addr *dst);

/* An ARP announcement of addr (host order) on iface: a broadcast request
 * whose sender and target are both addr (RFC 5227 sec. 2.3), which makes
 * every host on the link that has addr in its cache take iface's MAC. */
struct rte_mbuf *sp_arp_announce(uint16_t iface, uint32_t addr);

#endif /* SP_L2_H */
