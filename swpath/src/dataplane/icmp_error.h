/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ICMP error translation (RFC 5508 sec. 4): the packet an error quotes is
 * the translated form of one of our sessions' packets. The outer header and
 * the embedded header and L4 ports are translated back, the embedded
 * checksums adjusted, and the ICMP checksum recomputed; type and code are
 * unchanged, and the session is not refreshed (RFC 5508 REQ-5, RFC 7857).
 */
#ifndef SP_ICMP_ERROR_H
#define SP_ICMP_ERROR_H

#include "dataplane/packet.h"

/* The embedded packet of an ICMP error, located and checked. */
struct sp_icmp_inner {
	struct rte_ipv4_hdr *ip;
	uint8_t *l4;
	uint16_t l4_avail;      /* bytes of its L4 header present (>= 8) */
	uint8_t proto;
};

/* Locates the embedded packet; 0 or minus a drop counter. */
static inline int
sp_icmp_inner(struct sp_pkt *p, struct sp_icmp_inner *in)
{
	unsigned ihl, avail;

	if (p->l4_len < sizeof(struct rte_icmp_hdr) + sizeof(struct rte_ipv4_hdr))
		return -SP_CNT_drop_truncated;
	avail = p->l4_len - sizeof(struct rte_icmp_hdr);
	in->ip = (struct rte_ipv4_hdr *)(p->l4 + sizeof(struct rte_icmp_hdr));
	ihl = (in->ip->version_ihl & 0x0f) * 4u;
	if ((in->ip->version_ihl >> 4) != 4 || ihl < 20)
		return -SP_CNT_drop_malformed;
	if (avail < ihl + 8)
		return -SP_CNT_drop_truncated;
	in->l4 = (uint8_t *)in->ip + ihl;
	in->l4_avail = (uint16_t)(avail - ihl);
	in->proto = in->ip->next_proto_id;
	switch (in->proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		return 0;
	case IPPROTO_ICMP:
		if (in->l4[0] == SP_ICMP_ECHO_REQUEST ||
		    in->l4[0] == SP_ICMP_ECHO_REPLY)
			return 0;
		return -SP_CNT_drop_unsupported;
	default:
		return -SP_CNT_drop_unsupported;
	}
}

/* The embedded packet's port fields (ICMP echo: the identifier twice). */
static inline rte_be16_t *
sp_inner_sport(struct sp_icmp_inner *in)
{
	return in->proto == IPPROTO_ICMP ? (rte_be16_t *)(in->l4 + 4) :
					    (rte_be16_t *)in->l4;
}

static inline rte_be16_t *
sp_inner_dport(struct sp_icmp_inner *in)
{
	return in->proto == IPPROTO_ICMP ? (rte_be16_t *)(in->l4 + 4) :
					    (rte_be16_t *)(in->l4 + 2);
}

/*
 * The error's quoted packet, located, and the key of the packets that come
 * back to it: the quoted packet reversed, which is how the session that sent
 * it (translated) knows its replies. The error must travel back to the
 * quoted packet's source; 0, or minus a drop counter.
 */
static inline int
sp_icmp_quoted_key(struct sp_pkt *p, struct sp_icmp_inner *in,
		   struct sp_flow_key *key)
{
	int rc = sp_icmp_inner(p, in);

	if (rc < 0)
		return rc;
	if (p->ip->dst_addr != in->ip->src_addr)
		return -SP_CNT_drop_icmp_error;
	memset(key, 0, sizeof(*key));
	key->proto = in->proto;
	key->src = in->ip->dst_addr;
	key->dst = in->ip->src_addr;
	key->sport = *sp_inner_dport(in);
	key->dport = *sp_inner_sport(in);
	return 0;
}

/*
 * Rewrites the embedded source (src != 0) or destination address and the
 * port *port_field, adjusting the inner IP checksum and whatever inner L4
 * checksum is present in the quoted bytes. (The quoted header is only
 * 2-byte aligned: its addresses are accessed through the packed struct.)
 */
static inline void
sp_inner_rewrite(struct sp_icmp_inner *in, int src, rte_be32_t addr,
		 rte_be16_t *port_field, rte_be16_t port)
{
	rte_be32_t old_addr = src ? in->ip->src_addr : in->ip->dst_addr;
	rte_be16_t old_port = *port_field;

	in->ip->hdr_checksum = sp_cksum_adjust32(in->ip->hdr_checksum,
						 old_addr, addr);
	switch (in->proto) {
	case IPPROTO_UDP: {
		struct rte_udp_hdr *udp = (void *)in->l4;

		if (udp->dgram_cksum != 0) {
			udp->dgram_cksum = sp_cksum_adjust_addr_port(
				udp->dgram_cksum, old_addr, addr, old_port,
				port);
			if (udp->dgram_cksum == 0)
				udp->dgram_cksum = 0xffff;
		}
		break;
	}
	case IPPROTO_TCP:
		/* the checksum is quoted only if 18+ bytes of TCP are */
		if (in->l4_avail >= 18) {
			struct rte_tcp_hdr *tcp = (void *)in->l4;

			tcp->cksum = sp_cksum_adjust_addr_port(tcp->cksum,
							       old_addr, addr,
							       old_port, port);
		}
		break;
	default: {
		struct rte_icmp_hdr *icmp = (void *)in->l4;

		icmp->icmp_cksum = sp_cksum_adjust16(icmp->icmp_cksum,
						     old_port, port);
		break;
	}
	}
	if (src)
		in->ip->src_addr = addr;
	else
		in->ip->dst_addr = addr;
	*port_field = port;
}

/* Recomputes the outer ICMP checksum over the whole message. */
static inline void
sp_icmp_recompute(struct sp_pkt *p)
{
	struct rte_icmp_hdr *icmp = (void *)p->l4;

	icmp->icmp_cksum = 0;
	icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(icmp, p->l4_len);
}

#endif /* SP_ICMP_ERROR_H */
