/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ICMP errors the NAT originates itself (the P4 path's controller builds
 * the same bytes in controller/quicknat/icmp_gen.py):
 * - time exceeded (11/0) when a packet would leave with TTL 0 (RFC 1812
 *   sec. 5.3.1): the NAT shows up in traceroute;
 * - destination unreachable, administratively prohibited (3/13) when a new
 *   flow from inside is refused for want of a port or over a per-host limit
 *   (RFC 5508, "out of resources"; docs/nat-behavior.md ICMP-4), unless [icmp] turns it off;
 * - fragmentation needed (3/4) with the next-hop MTU (RFC 1191) when a DF
 *   packet is bigger than the egress link's MTU (RFC 4787 REQ-13).
 *
 * The error is built in the dropped packet's own mbuf (prepend 28 bytes of
 * headers, trim the quote to 576 bytes in all, RFC 1812 sec. 4.3.2.3), so
 * nothing is allocated, and routed to the packet's source from the NAT's
 * address on the interface the packet arrived on. None answers an ICMP
 * error, a later fragment, a link-layer or IP broadcast or multicast, or a
 * source that is not one host (sec. 4.3.2.7); a token bucket per worker
 * bounds the rate (sec. 4.3.2.8), the configured rate shared evenly.
 */
#ifndef SP_ICMP_GEN_H
#define SP_ICMP_GEN_H

#include "dataplane/fwd.h"

#define SP_ICMP_ERROR_MAX 576   /* IP bytes of an error (RFC 1812 4.3.2.3) */
#define SP_ICMP_ERROR_HEADERS 28 /* its own IPv4 + ICMP headers */
#define SP_ICMP_ERROR_TTL 64
#define SP_ICMP_ERROR_TOS 0xc0  /* precedence 6, internetwork control */

#define SP_ICMP_CODE_FRAG_NEEDED 4
#define SP_ICMP_CODE_PROHIBITED 13

/*
 * Whether RFC 1812 sec. 4.3.2.7 allows an error about the frame in m (a
 * packet sp_parse accepted, unchanged since).
 */
bool sp_icmp_error_allowed(const struct rte_mbuf *m);

/*
 * Turns m into the error (type, code; mtu for fragmentation needed) from
 * src, IPv4 id ident, Ethernet addresses swapped (routing sets the real
 * ones). -1 when the mbuf has no headroom for it.
 */
int sp_icmp_error_build(struct rte_mbuf *m, rte_be32_t src, uint8_t type,
			uint8_t code, uint16_t mtu, uint16_t ident);

/*
 * The error about m, which arrived on iface and is being dropped (the
 * caller counted why): built and routed back to its source, or m freed
 * (counted: suppressed, rate-limited, no route or neighbour). m is consumed.
 */
void sp_icmp_error_send(struct sp_worker *w, struct rte_mbuf *m,
			uint16_t iface, uint8_t type, uint8_t code,
			uint16_t mtu, const struct sp_runtime *rt);

/*
 * A hairpinned packet on its second pass, as it arrived for its first: the
 * sender's own source (stashed in the mbuf by fastpath.c translate) and the TTL
 * before the first pass decremented it. Its destination is still the
 * public endpoint the sender used: the second pass has not rewritten it.
 */
static inline void
sp_hairpin_unwind(struct rte_mbuf *m, struct sp_pkt *p)
{
	const struct sp_mbuf_meta *meta = sp_mbuf_meta(m);
	uint16_t old, new;

	sp_rewrite_src(p, meta->hp_src_addr, meta->hp_src_port);
	memcpy(&old, &p->ip->time_to_live, sizeof(old));
	p->ip->time_to_live++;
	memcpy(&new, &p->ip->time_to_live, sizeof(new));
	p->ip->hdr_checksum = sp_cksum_adjust16(p->ip->hdr_checksum, old, new);
}

/*
 * RFC 4787 REQ-13, RFC 1191: a DF packet bigger than the MTU of the
 * interface route ri leaves by is dropped; with error, its sender gets
 * fragmentation needed quoting m as it arrived on iface (untranslated yet,
 * or a hairpinned packet unwound). Without DF it goes on, to be sent as
 * fragments (ip_fragment.h), but not towards a switch (an offload
 * instance's slow-path link): the switch cannot fragment what it carries
 * (docs/nat-behavior.md MTU-1), so the instance drops it as the switch
 * would. Returns 1 when m was consumed.
 */
static inline int
sp_too_big(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	   uint16_t ri, uint16_t iface, int error, const struct sp_runtime *rt)
{
	uint16_t mtu;

	if (unlikely(ri == SP_ROUTE_NONE))
		return 0;       /* sp_forward drops it: no route */
	mtu = sp_route_mtu(ri);
	if (likely(rte_be_to_cpu_16(p->ip->total_length) <= mtu) ||
	    (!(p->ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_DF_FLAG)) &&
	     !sp.ifaces[sp.routes[ri].iface].slow_path))
		return 0;
	SP_INC(w, drop_mtu);
	if (error && (p->ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_DF_FLAG))) {
		if (*sp_meta(m) & SP_META_OUTSIDE)
			sp_hairpin_unwind(m, p);
		sp_icmp_error_send(w, m, iface, SP_ICMP_DEST_UNREACH,
				   SP_ICMP_CODE_FRAG_NEEDED, mtu, rt);
	} else {
		rte_pktmbuf_free(m);
	}
	return 1;
}

#endif /* SP_ICMP_GEN_H */
