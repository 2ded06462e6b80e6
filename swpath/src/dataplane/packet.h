/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Header parsing and in-place rewriting: the one definition of what swpath
 * accepts and how it updates checksums.
 *
 * Accepted (everything else is dropped and counted, never forwarded):
 * - Ethernet II, one buffer per packet; IPv4 version 4, IHL >= 5, total
 *   length within the frame, header checksum valid;
 * - IPv4 options are carried unchanged (the L4 header is found through the
 *   IHL), except loose/strict source route (131, 137): dropped, as RFC 7126
 *   advises; malformed options are dropped;
 * - fragments: a first fragment (MF set, offset 0) is parsed as a flow
 *   packet whose L4 header must be whole (RFC 1858, RFC 3128); a later
 *   fragment is SP_PKT_FRAGMENT, translated with its datagram's ports
 *   (frag.h), except a TCP fragment at offset 8 bytes, which would overwrite
 *   the flags; no fragment may reach past 65,535 bytes (drop_frag_overlap
 *   for all three: IN-IP-9);
 * - TCP with a data offset of 5 words or more that fits the segment, a flag
 *   combination a TCP peer sends (sp_tcp_flags_valid) and no port 0; UDP
 *   with its 8-byte header, a length that fits and no port 0; ICMP with 8
 *   bytes; ICMP echo request/reply are flows (identifier as both ports),
 *   destination unreachable, source quench, time exceeded and parameter
 *   problem are errors translated through their embedded header.
 *
 * Addresses (martians, non-unicast destinations, our own addresses as a
 * source) are checked by sp_address_check, which needs the runtime's owned
 * ranges. The whole contract, with the counter of each drop, is the input
 * contract of docs/nat-behavior.md (IN-*).
 *
 * Checksums are updated incrementally (RFC 1624 eqn. 3) on the raw 16-bit
 * words as they sit in memory, which is byte-order independent. A UDP
 * checksum of zero (none) stays zero; a computed zero is sent as 0xffff.
 */
#ifndef SP_PACKET_H
#define SP_PACKET_H

#include <stdint.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "core/counters.h"
#include "core/session.h"

enum sp_class {
	SP_PKT_FLOW = 0,        /* TCP, UDP, ICMP echo: has a flow key */
	SP_PKT_ICMP_ERROR = 1,  /* ICMP error: translated via its payload */
	SP_PKT_OTHER = 2,       /* another IP protocol or ICMP type */
	SP_PKT_ARP = 3,
	SP_PKT_FRAGMENT = 4,    /* a later fragment: no L4 header (frag.h) */
};

/* sp_pkt.frag */
#define SP_FRAG_NONE 0
#define SP_FRAG_FIRST 1         /* MF set, offset 0: a flow with its ports */
#define SP_FRAG_LATER 2         /* offset not 0: ports from the first */

struct sp_pkt {
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	uint8_t *l4;
	uint16_t l4_len;        /* bytes after the IP header, per total length */
	uint8_t proto;
	uint8_t tcp_flags;
	uint8_t frag;           /* SP_FRAG_* */
};

#define SP_ICMP_ECHO_REPLY 0
#define SP_ICMP_DEST_UNREACH 3
#define SP_ICMP_SOURCE_QUENCH 4
#define SP_ICMP_ECHO_REQUEST 8
#define SP_ICMP_TIME_EXCEEDED 11
#define SP_ICMP_PARAM_PROBLEM 12

static inline int
sp_icmp_is_error(uint8_t type)
{
	return type == SP_ICMP_DEST_UNREACH || type == SP_ICMP_SOURCE_QUENCH ||
	       type == SP_ICMP_TIME_EXCEEDED || type == SP_ICMP_PARAM_PROBLEM;
}

/* -- checksums ----------------------------------------------------------- */

static inline uint16_t
sp_cksum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), raw in-memory words. */
static inline uint16_t
sp_cksum_adjust16(uint16_t cksum, uint16_t old, uint16_t new)
{
	uint32_t sum = (uint16_t)~cksum;

	sum += (uint16_t)~old;
	sum += new;
	return (uint16_t)~sp_cksum_fold(sum);
}

static inline uint16_t
sp_cksum_adjust32(uint16_t cksum, uint32_t old, uint32_t new)
{
	uint32_t sum = (uint16_t)~cksum;

	sum += (uint16_t)~(old & 0xffff);
	sum += (uint16_t)~(old >> 16);
	sum += new & 0xffff;
	sum += new >> 16;
	return (uint16_t)~sp_cksum_fold(sum);
}

/* An address and a port changed: what TCP and UDP see (pseudo-header). */
static inline uint16_t
sp_cksum_adjust_addr_port(uint16_t cksum, uint32_t old_addr,
			  uint32_t new_addr, uint16_t old_port,
			  uint16_t new_port)
{
	uint32_t sum = (uint16_t)~cksum;

	sum += (uint16_t)~(old_addr & 0xffff);
	sum += (uint16_t)~(old_addr >> 16);
	sum += (uint16_t)~old_port;
	sum += new_addr & 0xffff;
	sum += new_addr >> 16;
	sum += new_port;
	return (uint16_t)~sp_cksum_fold(sum);
}

/* -- parsing ------------------------------------------------------------- */

/*
 * TCP flag combinations a TCP peer sends, after ECE, CWR and PSH are masked
 * out (the set Linux conntrack calls valid, nf_conntrack_proto_tcp.c):
 * SYN, SYN+URG, SYN+ACK, RST, RST+ACK, FIN+ACK, FIN+ACK+URG, ACK, ACK+URG.
 * Anything else (SYN+FIN, SYN+RST, no flag at all, FIN without ACK: scans
 * and evasion) is dropped (IN-TCP-2) before it can open or touch a session.
 */
#define SP_TCP_FLAGS_CHECKED 0x37u /* FIN SYN RST ACK URG */
#define SP_TCP_FLAGS_VALID                                                  \
	((1ull << 0x02) | (1ull << 0x22) | (1ull << 0x12) | (1ull << 0x04) | \
	 (1ull << 0x14) | (1ull << 0x11) | (1ull << 0x31) | (1ull << 0x10) | \
	 (1ull << 0x30))

static inline int
sp_tcp_flags_valid(uint8_t flags)
{
	return (SP_TCP_FLAGS_VALID >> (flags & SP_TCP_FLAGS_CHECKED)) & 1;
}

/* Options: drop source routes and malformed lists (RFC 7126 sec. 4.3/4.4). */
static inline int
sp_check_options(const uint8_t *opt, unsigned len)
{
	unsigned i = 0;

	while (i < len) {
		uint8_t type = opt[i];
		uint8_t olen;

		if (type == 0)                  /* end of list */
			return 0;
		if (type == 1) {                /* no-op */
			i++;
			continue;
		}
		if (i + 1 >= len)
			return -SP_CNT_drop_malformed;
		olen = opt[i + 1];
		if (olen < 2 || i + olen > len)
			return -SP_CNT_drop_malformed;
		if (type == 131 || type == 137) /* LSRR, SSRR */
			return -SP_CNT_drop_ip_options;
		i += olen;
	}
	return 0;
}

/*
 * The IPv4 header of a frame of len bytes (IN-IP-1..4): version, header
 * length, total length within the frame, checksum (unless the NIC checked
 * it), options. Returns 0 or minus the counter to drop it under.
 */
static __rte_always_inline int
sp_parse_ipv4(struct rte_mbuf *m, const struct rte_ipv4_hdr *ip, uint16_t len,
	      unsigned *ihl, unsigned *total)
{
	*ihl = (ip->version_ihl & 0x0f) * 4u;
	if (unlikely((ip->version_ihl >> 4) != 4 || *ihl < 20))
		return -SP_CNT_drop_malformed;
	*total = rte_be_to_cpu_16(ip->total_length);
	if (unlikely(*total < *ihl))
		return -SP_CNT_drop_malformed;
	if (unlikely(len < sizeof(struct rte_ether_hdr) + *total))
		return -SP_CNT_drop_truncated;
	if ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) !=
	    RTE_MBUF_F_RX_IP_CKSUM_GOOD) {
		if (unlikely((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) ==
				     RTE_MBUF_F_RX_IP_CKSUM_BAD ||
			     rte_raw_cksum(ip, *ihl) != 0xffff))
			return -SP_CNT_drop_bad_checksum;
	}
	if (unlikely(*ihl > 20))
		return sp_check_options((const uint8_t *)(ip + 1), *ihl - 20);
	return 0;
}

/*
 * A fragment (IN-IP-8): a first one (MF set, offset 0) goes on as a flow
 * packet whose L4 header must be whole; a later one is SP_PKT_FRAGMENT,
 * its key without ports (frag.h). Returns 1 to go on, else the class or
 * minus the counter.
 */
static __rte_always_inline int
sp_parse_fragment(struct sp_pkt *p, const struct rte_ipv4_hdr *ip,
		  struct sp_flow_key *key)
{
	uint16_t frag = rte_be_to_cpu_16(ip->fragment_offset);
	uint16_t offset = frag & RTE_IPV4_HDR_OFFSET_MASK;

	if (likely(!(frag & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))))
		return 1;
	if (offset == 0) {
		p->frag = SP_FRAG_FIRST;
		return 1;
	}
	/* IN-IP-9: no datagram is longer than 65,535 bytes (the ping of death
	 * reached past it with a fragment at offset 65,528) */
	if (unlikely(offset * 8u + rte_be_to_cpu_16(ip->total_length) > 65535))
		return -SP_CNT_drop_frag_overlap;
	/* RFC 1858 sec. 3.2: offset 1 (8 bytes) rewrites TCP's flags */
	if (p->proto == IPPROTO_TCP && offset == 1)
		return -SP_CNT_drop_frag_overlap;
	if (p->proto != IPPROTO_TCP && p->proto != IPPROTO_UDP &&
	    p->proto != IPPROTO_ICMP)
		return SP_PKT_OTHER;
	p->frag = SP_FRAG_LATER;
	key->src = ip->src_addr;
	key->dst = ip->dst_addr;
	key->proto = p->proto;
	key->sport = key->dport = 0;
	key->pad[0] = key->pad[1] = key->pad[2] = 0;
	return SP_PKT_FRAGMENT;
}

/* A header cut short: a first fragment's is a tiny fragment (RFC 1858 sec.
 * 3.1, RFC 3128: the rest of the header would travel in a later fragment,
 * past the checks made on this one; IN-IP-9), any other packet's is
 * truncated or malformed. */
static __rte_always_inline int
sp_short_l4(const struct sp_pkt *p, unsigned counter)
{
	return p->frag == SP_FRAG_FIRST ? -SP_CNT_drop_frag_overlap :
					  -(int)counter;
}

/* TCP (IN-TCP-1/2, IN-L4-1): a header of 5..15 words inside the segment, a
 * flag combination a peer sends, no port 0. */
static __rte_always_inline int
sp_parse_tcp(struct sp_pkt *p, struct sp_flow_key *key)
{
	const struct rte_tcp_hdr *tcp = (const void *)p->l4;
	unsigned doff;

	if (unlikely(p->l4_len < sizeof(struct rte_tcp_hdr)))
		return sp_short_l4(p, SP_CNT_drop_truncated);
	doff = (tcp->data_off >> 4) * 4u;
	if (unlikely(doff < sizeof(struct rte_tcp_hdr)))
		return -SP_CNT_drop_malformed;
	if (unlikely(doff > p->l4_len))
		return sp_short_l4(p, SP_CNT_drop_malformed);
	if (unlikely(!sp_tcp_flags_valid(tcp->tcp_flags)))
		return -SP_CNT_drop_bad_tcp_flags;
	if (unlikely(tcp->src_port == 0 || tcp->dst_port == 0))
		return -SP_CNT_drop_port_zero;
	p->tcp_flags = tcp->tcp_flags;
	key->sport = tcp->src_port;
	key->dport = tcp->dst_port;
	return SP_PKT_FLOW;
}

/* UDP: its 8 bytes, a length that fits (a first fragment's covers the
 * whole datagram), no port 0. */
static __rte_always_inline int
sp_parse_udp(struct sp_pkt *p, struct sp_flow_key *key)
{
	const struct rte_udp_hdr *udp = (const void *)p->l4;

	if (unlikely(p->l4_len < sizeof(struct rte_udp_hdr)))
		return sp_short_l4(p, SP_CNT_drop_truncated);
	if (unlikely(rte_be_to_cpu_16(udp->dgram_len) <
			     sizeof(struct rte_udp_hdr) ||
		     (rte_be_to_cpu_16(udp->dgram_len) > p->l4_len &&
		      p->frag == SP_FRAG_NONE)))
		return -SP_CNT_drop_malformed;
	if (unlikely(udp->src_port == 0 || udp->dst_port == 0))
		return -SP_CNT_drop_port_zero;
	key->sport = udp->src_port;
	key->dport = udp->dst_port;
	return SP_PKT_FLOW;
}

/* ICMP: echo is a flow (the identifier as both ports), an error is
 * translated through what it quotes, any other type is not translated. */
static __rte_always_inline int
sp_parse_icmp(struct sp_pkt *p, struct sp_flow_key *key)
{
	const struct rte_icmp_hdr *icmp = (const void *)p->l4;

	if (unlikely(p->l4_len < sizeof(struct rte_icmp_hdr)))
		return sp_short_l4(p, SP_CNT_drop_truncated);
	if (icmp->icmp_type == SP_ICMP_ECHO_REQUEST ||
	    icmp->icmp_type == SP_ICMP_ECHO_REPLY) {
		key->sport = icmp->icmp_ident;
		key->dport = icmp->icmp_ident;
		return SP_PKT_FLOW;
	}
	if (!sp_icmp_is_error(icmp->icmp_type))
		return SP_PKT_OTHER;
	/* an error quotes at most 576 bytes: never fragmented */
	return p->frag == SP_FRAG_NONE ? SP_PKT_ICMP_ERROR :
					 -SP_CNT_drop_fragment;
}

/*
 * Parses an Ethernet frame. Returns an enum sp_class, or minus the counter
 * of the reason to drop it. For SP_PKT_FLOW the flow key is filled.
 */
static inline int
sp_parse(struct rte_mbuf *m, struct sp_pkt *p, struct sp_flow_key *key)
{
	uint16_t len = rte_pktmbuf_data_len(m);
	uint8_t *data = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ipv4_hdr *ip;
	unsigned ihl, total;
	int rc;

	if (unlikely(m->nb_segs != 1))
		return -SP_CNT_drop_multiseg;
	if (unlikely(len < sizeof(struct rte_ether_hdr)))
		return -SP_CNT_drop_truncated;
	p->eth = (struct rte_ether_hdr *)data;
	if (p->eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_ARP))
		return SP_PKT_ARP;
	if (unlikely(p->eth->ether_type != RTE_BE16(RTE_ETHER_TYPE_IPV4)))
		return -SP_CNT_drop_not_ipv4;
	if (unlikely(len < sizeof(struct rte_ether_hdr) +
			   sizeof(struct rte_ipv4_hdr)))
		return -SP_CNT_drop_truncated;
	ip = (struct rte_ipv4_hdr *)(data + sizeof(struct rte_ether_hdr));
	p->ip = ip;
	rc = sp_parse_ipv4(m, ip, len, &ihl, &total);
	if (unlikely(rc < 0))
		return rc;
	p->proto = ip->next_proto_id;
	p->l4 = (uint8_t *)ip + ihl;
	p->l4_len = (uint16_t)(total - ihl);
	p->tcp_flags = 0;
	p->frag = SP_FRAG_NONE;
	rc = sp_parse_fragment(p, ip, key);
	if (unlikely(rc != 1))
		return rc;
	switch (p->proto) {
	case IPPROTO_TCP:
		rc = sp_parse_tcp(p, key);
		break;
	case IPPROTO_UDP:
		rc = sp_parse_udp(p, key);
		break;
	case IPPROTO_ICMP:
		rc = sp_parse_icmp(p, key);
		break;
	default:
		return SP_PKT_OTHER;
	}
	if (rc != SP_PKT_FLOW)
		return rc;
	key->src = ip->src_addr;
	key->dst = ip->dst_addr;
	key->proto = p->proto;
	key->pad[0] = key->pad[1] = key->pad[2] = 0;
	return SP_PKT_FLOW;
}

/* -- rewriting ----------------------------------------------------------- */

static inline void
sp_ttl_decrement(struct rte_ipv4_hdr *ip)
{
	uint16_t old, new;

	memcpy(&old, &ip->time_to_live, sizeof(old));
	ip->time_to_live--;
	memcpy(&new, &ip->time_to_live, sizeof(new));
	ip->hdr_checksum = sp_cksum_adjust16(ip->hdr_checksum, old, new);
}

/*
 * Rewrites the L4 port (or ICMP identifier) at *port_field together with the
 * IP address at *addr_field, fixing the L4 checksum. addr_changes_l4: the
 * pseudo-header carries the address (TCP, UDP; not ICMP).
 */
static inline void
sp_rewrite_l4(uint8_t proto, uint8_t *l4, uint32_t old_addr,
	      uint32_t new_addr, rte_be16_t *port_field, rte_be16_t new_port)
{
	rte_be16_t old_port = *port_field;

	switch (proto) {
	case IPPROTO_TCP: {
		struct rte_tcp_hdr *tcp = (void *)l4;

		tcp->cksum = sp_cksum_adjust_addr_port(tcp->cksum, old_addr,
						       new_addr, old_port,
						       new_port);
		break;
	}
	case IPPROTO_UDP: {
		struct rte_udp_hdr *udp = (void *)l4;

		if (udp->dgram_cksum != 0) {
			udp->dgram_cksum = sp_cksum_adjust_addr_port(
				udp->dgram_cksum, old_addr, new_addr, old_port,
				new_port);
			if (udp->dgram_cksum == 0)
				udp->dgram_cksum = 0xffff;
		}
		break;
	}
	default: { /* ICMP echo: no pseudo-header */
		struct rte_icmp_hdr *icmp = (void *)l4;

		icmp->icmp_cksum = sp_cksum_adjust16(icmp->icmp_cksum,
						     old_port, new_port);
		break;
	}
	}
	*port_field = new_port;
}

/* New source (in2out) for a TCP/UDP/ICMP-echo packet. */
static inline void
sp_rewrite_src(struct sp_pkt *p, rte_be32_t addr, rte_be16_t port)
{
	rte_be16_t *port_field = p->proto == IPPROTO_ICMP ?
		&((struct rte_icmp_hdr *)p->l4)->icmp_ident :
		(rte_be16_t *)p->l4;

	sp_rewrite_l4(p->proto, p->l4, p->ip->src_addr, addr, port_field, port);
	p->ip->hdr_checksum = sp_cksum_adjust32(p->ip->hdr_checksum,
						p->ip->src_addr, addr);
	p->ip->src_addr = addr;
}

/* New destination (out2in). */
static inline void
sp_rewrite_dst(struct sp_pkt *p, rte_be32_t addr, rte_be16_t port)
{
	rte_be16_t *port_field = p->proto == IPPROTO_ICMP ?
		&((struct rte_icmp_hdr *)p->l4)->icmp_ident :
		(rte_be16_t *)(p->l4 + 2);

	sp_rewrite_l4(p->proto, p->l4, p->ip->dst_addr, addr, port_field, port);
	p->ip->hdr_checksum = sp_cksum_adjust32(p->ip->hdr_checksum,
						p->ip->dst_addr, addr);
	p->ip->dst_addr = addr;
}

#endif /* SP_PACKET_H */
