/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A forwarded IPv4 packet over its egress interface's MTU without DF is sent
 * as fragments. RFC 4787 REQ-13: "If the packet has DF=0, the NAT MUST
 * fragment the packet and SHOULD send the fragments in order" (a router's
 * duty, RFC 791 sec. 2.3 and 3.2, RFC 1812 sec. 4.2.2.7). With DF, the
 * packet was refused before it was translated (icmp_gen.h sp_too_big: its
 * sender gets fragmentation needed). Only the exception path allocates.
 */
#ifndef SP_DATAPLANE_IP_FRAGMENT_H
#define SP_DATAPLANE_IP_FRAGMENT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "dataplane/sp.h"

/* Whether frame eth (Ethernet, then IPv4: not a learn-tagged frame) is over
 * iface's MTU and to be fragmented: not towards a switch (a slow-path
 * link), which would carry it whole to a port it does not fit
 * (icmp_gen.h sp_too_big drops those). */
static inline bool
sp_over_mtu(const struct rte_ether_hdr *eth, uint16_t iface)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);

	return eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV4) &&
	       rte_be_to_cpu_16(ip->total_length) > sp.ifaces[iface].mtu &&
	       !sp.ifaces[iface].slow_path;
}

/*
 * Sends m, an Ethernet frame whose IPv4 packet is over iface's MTU, as
 * fragments that fit, in order (their Ethernet header m's); m is consumed.
 * With DF set, or no mbuf for a fragment, nothing is sent and it counts
 * drop_mtu.
 */
void sp_fragment_send(struct sp_worker *w, uint16_t iface,
		      struct rte_mbuf *m);

#endif /* SP_DATAPLANE_IP_FRAGMENT_H */
