/* SPDX-License-Identifier: Apache-2.0 */
/* The NAT's own ICMP errors: see icmp_gen.h. */
#include "dataplane/icmp_gen.h"

/* A source that names one host: not 0/8, 127/8, multicast or class E. */
static bool
unicast_source(rte_be32_t addr)
{
	uint8_t first = (uint8_t)(rte_be_to_cpu_32(addr) >> 24);

	return first != 0 && first != 127 && first < 224;
}

bool
sp_icmp_error_allowed(const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth =
		rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct rte_ipv4_hdr *ip = (const void *)(eth + 1);
	uint32_t dst = rte_be_to_cpu_32(ip->dst_addr);
	unsigned ihl = (ip->version_ihl & 0x0f) * 4u;

	if (!rte_is_unicast_ether_addr(&eth->dst_addr))
		return false;
	if ((dst >> 28) == 0xe || dst == UINT32_MAX)
		return false;
	if (!unicast_source(ip->src_addr))
		return false;
	if (ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_OFFSET_MASK))
		return false;
	if (ip->next_proto_id == IPPROTO_ICMP) {
		const uint8_t *type = (const uint8_t *)ip + ihl;

		/* RFC 1812 4.3.2.7: no error about an error (redirect too) */
		if (rte_be_to_cpu_16(ip->total_length) <= ihl ||
		    sp_icmp_is_error(*type) || *type == 5)
			return false;
	}
	return true;
}

int
sp_icmp_error_build(struct rte_mbuf *m, rte_be32_t src, uint8_t type,
		    uint8_t code, uint16_t mtu, uint16_t ident)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip = (void *)(eth + 1);
	uint16_t quote = RTE_MIN(rte_be_to_cpu_16(ip->total_length),
				 SP_ICMP_ERROR_MAX - SP_ICMP_ERROR_HEADERS);
	struct rte_ether_addr from = eth->dst_addr, to = eth->src_addr;
	rte_be32_t dst = ip->src_addr;
	struct rte_icmp_hdr *icmp;

	if (rte_pktmbuf_headroom(m) < SP_ICMP_ERROR_HEADERS)
		return -1;
	/* the quote is the packet as it arrived, where it already is */
	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_data_len(m) -
				       sizeof(*eth) - quote));
	eth = (struct rte_ether_hdr *)rte_pktmbuf_prepend(
		m, SP_ICMP_ERROR_HEADERS);
	rte_ether_addr_copy(&to, &eth->dst_addr);
	rte_ether_addr_copy(&from, &eth->src_addr);
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = 0x45;
	ip->type_of_service = SP_ICMP_ERROR_TOS;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(SP_ICMP_ERROR_HEADERS +
						       quote));
	ip->packet_id = rte_cpu_to_be_16(ident);
	ip->time_to_live = SP_ICMP_ERROR_TTL;
	ip->next_proto_id = IPPROTO_ICMP;
	ip->src_addr = src;
	ip->dst_addr = dst;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	icmp = (struct rte_icmp_hdr *)(ip + 1);
	icmp->icmp_type = type;
	icmp->icmp_code = code;
	icmp->icmp_cksum = 0;
	/* RFC 1191: unused (16 bits), then the next-hop MTU */
	icmp->icmp_ident = 0;
	icmp->icmp_seq_nb = rte_cpu_to_be_16(mtu);
	icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(icmp, 8u + quote);
	m->ol_flags = 0;
	return 0;
}

/* One token (1000 units) from the worker's bucket, refilled by time. */
static bool
take_token(struct sp_worker *w, const struct sp_runtime *rt)
{
	uint64_t cap = (uint64_t)rt->icmp_burst * 1000u;
	uint64_t tokens = w->icmp_tokens +
			  (uint64_t)(uint32_t)(w->now - w->icmp_refill) *
				  rt->icmp_rate;

	w->icmp_refill = w->now;
	if (tokens > cap)
		tokens = cap;
	if (tokens < 1000u) {
		w->icmp_tokens = tokens;
		return false;
	}
	w->icmp_tokens = tokens - 1000u;
	return true;
}

void
sp_icmp_error_send(struct sp_worker *w, struct rte_mbuf *m, uint16_t iface,
		   uint8_t type, uint8_t code, uint16_t mtu,
		   const struct sp_runtime *rt)
{
	const struct sp_iface *ifc = &sp.ifaces[iface];
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	uint16_t neigh = SP_NEIGH_NONE;
	uint16_t ri;

	if (!ifc->has_addr || !sp_icmp_error_allowed(m)) {
		sp_drop(w, m, SP_CNT_icmp_error_suppressed);
		return;
	}
	if (!take_token(w, rt)) {
		sp_drop(w, m, SP_CNT_icmp_error_rate_limited);
		return;
	}
	/* the error goes to the packet's sender */
	ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *,
				     sizeof(struct rte_ether_hdr));
	ri = sp_route_lookup(ip->src_addr);
	if (ri == SP_ROUTE_NONE) {
		sp_drop(w, m, SP_CNT_drop_no_route);
		return;
	}
	/* The error goes back to the zone its packet came from: a sender on an
	 * inside link whose address routes outside (an unruled or spoofed
	 * source) would get an inside address of ours through the outside. */
	if (sp.ifaces[sp.routes[ri].iface].zone != ifc->zone) {
		sp_drop(w, m, SP_CNT_icmp_error_suppressed);
		return;
	}
	if (sp_icmp_error_build(m, sp.routes[ri].source != 0 ?
				sp.routes[ri].source : ifc->addr_be,
				type, code, mtu, w->icmp_ident++) < 0) {
		sp_drop(w, m, SP_CNT_icmp_error_suppressed);
		return;
	}
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	if (sp_send(w, m, eth, ip->dst_addr, ri, &neigh) < 0)
		return;
	if (type == SP_ICMP_TIME_EXCEEDED)
		SP_INC(w, icmp_time_exceeded);
	else if (code == SP_ICMP_CODE_FRAG_NEEDED)
		SP_INC(w, icmp_frag_needed);
	else
		SP_INC(w, icmp_prohibited);
}
