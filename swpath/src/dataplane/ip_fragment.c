/* SPDX-License-Identifier: Apache-2.0 */
/*
 * IPv4 fragmentation on output (ip_fragment.h), by DPDK's librte_ip_frag.
 * Its copying variant, not rte_ipv4_fragment_packet: that one makes each
 * fragment a chain of a new header and an indirect mbuf over m's payload,
 * which a port sends only with RTE_ETH_TX_OFFLOAD_MULTI_SEGS, and swpath
 * keeps every frame in one buffer (drop_multiseg). Both put in a later
 * fragment only the options whose copied flag is set (RFC 791 sec. 3.1).
 */
#define ALLOW_EXPERIMENTAL_API /* rte_ipv4_fragment_copy_nonseg_packet, 22.11 */

#include <errno.h>

#include <rte_ip_frag.h>

#include "dataplane/ip_fragment.h"
#include "dataplane/tx.h"

/* A single-buffer frame (2 KB) in fragments of a 576-byte MTU: 4; a
 * 9,000-byte one would need 18. */
#define FRAGMENTS_MAX 32

void
sp_fragment_send(struct sp_worker *w, uint16_t iface, struct rte_mbuf *m)
{
	struct rte_mbuf *frags[FRAGMENTS_MAX];
	struct rte_ether_hdr eth = *rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	int32_t n;

	rte_pktmbuf_adj(m, sizeof(eth));
	n = rte_ipv4_fragment_copy_nonseg_packet(m, frags, FRAGMENTS_MAX,
						 sp.ifaces[iface].mtu,
						 sp.mbuf_pool);
	if (n <= 0) {           /* DF (-ENOTSUP), or no mbuf (-ENOMEM) */
		sp_drop(w, m, SP_CNT_drop_mtu);
		return;
	}
	rte_pktmbuf_free(m);
	SP_INC(w, fragmented);
	for (int32_t i = 0; i < n; i++) {
		struct rte_ipv4_hdr *ip =
			rte_pktmbuf_mtod(frags[i], struct rte_ipv4_hdr *);
		struct rte_ether_hdr *e = (struct rte_ether_hdr *)
			rte_pktmbuf_prepend(frags[i], sizeof(eth));

		ip->hdr_checksum = rte_ipv4_cksum(ip);
		*e = eth;
		sp_tx(w, iface, frags[i]);
	}
}
