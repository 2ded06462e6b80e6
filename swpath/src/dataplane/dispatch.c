/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which worker owns a packet (dispatch.h): the RSS tables from DPDK's
 * Toeplitz hash, and software RSS over the same fields.
 */
#include <string.h>

#include <rte_common.h>
#include <rte_thash.h>

#include "dataplane/dispatch.h"
#include "dataplane/packet.h"

const uint8_t sp_rss_default_key[SP_RSS_KEY_LEN] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
	0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
	0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

void
sp_rss_init(struct sp_rss *rss, const uint8_t *key, unsigned reta_size,
	    unsigned n_queues)
{
	memset(rss, 0, sizeof(*rss));
	memcpy(rss->key, key, SP_RSS_KEY_LEN);
	/*
	 * rte_softrss takes the tuple as 32-bit words in CPU order, first byte
	 * of the wire tuple in the most significant position.
	 */
	for (unsigned k = 0; k < 6; k++) {
		for (unsigned v = 0; v < 256; v++) {
			uint32_t tuple[2] = { 0, 0 };

			tuple[k / 4] = (uint32_t)v << (8 * (3 - k % 4));
			rss->byte_hash[k][v] = rte_softrss(tuple, 2, rss->key);
		}
	}
	if (reta_size == 0 || reta_size > SP_RETA_MAX ||
	    !rte_is_power_of_2(reta_size))
		reta_size = 128;
	if (n_queues == 0)
		n_queues = 1;
	rss->reta_mask = reta_size - 1;
	rss->n_queues = n_queues;
	for (unsigned i = 0; i < reta_size; i++)
		rss->reta[i] = (uint16_t)(i % n_queues);
}

unsigned
sp_dispatch_owner(struct rte_mbuf *m, uint16_t iface)
{
	return sp_owner_of(m, sp.ifaces[iface].zone);
}

/*
 * An ICMP error's external end: the source of the packet it quotes, which
 * was ours (its address and port, or identifier). l4 is the error's ICMP
 * header, with left bytes after it in the frame. 0 when it quotes too
 * little.
 */
static int
quoted_end(const uint8_t *l4, unsigned left, uint32_t *addr,
	   rte_be16_t *be_port)
{
	const struct rte_ipv4_hdr *in = (const void *)(l4 + 8);
	unsigned iihl;

	if (left < 8 + 20)
		return 0;
	iihl = (in->version_ihl & 0x0f) * 4u;
	if (iihl < 20 || left < 8 + iihl + 8)
		return 0;
	l4 = (const uint8_t *)in + iihl;
	memcpy(be_port, in->next_proto_id == IPPROTO_ICMP ? l4 + 4 : l4,
	       sizeof(*be_port));
	*addr = rte_be_to_cpu_32(in->src_addr);
	return 1;
}

/*
 * The external end of an outside packet: its destination (address, port;
 * ICMP echo: identifier), or for an ICMP error the quoted packet's source,
 * which was ours. 0 when it has none (not IPv4, a fragment, truncated).
 */
int
sp_outside_end(struct rte_mbuf *m, uint32_t *addr, uint16_t *port)
{
	uint16_t len = rte_pktmbuf_data_len(m);
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct rte_ipv4_hdr *ip;
	const uint8_t *l4;
	unsigned ihl;
	rte_be16_t be_port;

	if (len < sizeof(struct rte_ether_hdr) + sizeof(*ip) ||
	    ((const struct rte_ether_hdr *)d)->ether_type !=
		    RTE_BE16(RTE_ETHER_TYPE_IPV4))
		return 0;
	ip = (const struct rte_ipv4_hdr *)(d + sizeof(struct rte_ether_hdr));
	ihl = (ip->version_ihl & 0x0f) * 4u;
	if (ihl < 20 || len < sizeof(struct rte_ether_hdr) + ihl + 8 ||
	    (ip->fragment_offset &
	     RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)))
		return 0;
	l4 = (const uint8_t *)ip + ihl;
	*addr = rte_be_to_cpu_32(ip->dst_addr);
	switch (ip->next_proto_id) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		memcpy(&be_port, l4 + 2, sizeof(be_port));
		break;
	case IPPROTO_ICMP:
		if (l4[0] == SP_ICMP_ECHO_REQUEST || l4[0] == SP_ICMP_ECHO_REPLY)
			memcpy(&be_port, l4 + 4, sizeof(be_port));
		else if (!sp_icmp_is_error(l4[0]) ||
			 !quoted_end(l4, len - sizeof(struct rte_ether_hdr) - ihl,
				     addr, &be_port))
			return 0;
		break;
	default:
		return 0;
	}
	*port = rte_be_to_cpu_16(be_port);
	return 1;
}

/*
 * Software RSS over the same fields as the NIC would hash (rss.h). Anything
 * that is not a well-formed flow stays with worker 0, which drops or answers
 * it after a full parse.
 */
unsigned
sp_owner_of(struct rte_mbuf *m, unsigned zone)
{
	uint32_t addr;
	uint16_t port;

	if (zone == SP_ZONE_INSIDE) {
		uint16_t len = rte_pktmbuf_data_len(m);
		const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
		const struct rte_ipv4_hdr *ip = (const void *)
			(d + sizeof(struct rte_ether_hdr));

		if (len < sizeof(struct rte_ether_hdr) + sizeof(*ip) ||
		    ((const struct rte_ether_hdr *)d)->ether_type !=
			    RTE_BE16(RTE_ETHER_TYPE_IPV4))
			return 0;
		return sp_owner_inside(&sp.rss, rte_be_to_cpu_32(ip->src_addr));
	}
	if (!sp_outside_end(m, &addr, &port))
		return 0;
	return sp_owner_outside(&sp.rss, addr, port);
}

uint16_t
sp_dispatch_burst(struct sp_worker *w, struct rte_mbuf **pkts, uint16_t n,
		  uint16_t iface)
{
	struct rte_mbuf *other[SP_MAX_WORKERS][SP_BURST];
	uint16_t n_other[SP_MAX_WORKERS];
	uint16_t n_mine = 0;

	for (unsigned q = 0; q < sp.n_workers; q++)
		n_other[q] = 0;
	for (uint16_t i = 0; i < n; i++) {
		unsigned q = sp_dispatch_owner(pkts[i], iface);

		if (q == w->index)
			pkts[n_mine++] = pkts[i];
		else
			other[q][n_other[q]++] = pkts[i];
	}
	for (unsigned q = 0; q < sp.n_workers; q++) {
		unsigned sent;

		if (n_other[q] == 0)
			continue;
		sent = rte_ring_mp_enqueue_burst(sp.workers[q]->in_ring,
						 (void **)other[q], n_other[q],
						 NULL);
		SP_ADD(w, dispatched, sent);
		if (sent < n_other[q]) {
			SP_ADD(w, drop_ring_full, n_other[q] - sent);
			rte_pktmbuf_free_bulk(&other[q][sent],
					      n_other[q] - sent);
		}
	}
	return n_mine;
}
