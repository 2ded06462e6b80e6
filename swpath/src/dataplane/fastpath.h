/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-packet path. fastpath.c parses a burst, looks all flow keys up at
 * once (sp_nat_lookup_bulk) and translates the hits; misses go to
 * in2out.c / out2in.c, which open sessions (nat.c) or hand the packet to the
 * worker that owns it.
 */
#ifndef SP_FASTPATH_H
#define SP_FASTPATH_H

#include "dataplane/fwd.h"
#include "dataplane/icmp_gen.h"
#include "persist/session_stream.h"

/* A burst received on interface iface; outside: process as outside zone. */
void sp_process_burst(struct sp_worker *w, struct rte_mbuf **pkts, uint16_t n,
		      uint16_t iface, int outside,
		      const struct sp_runtime *rt);

/* Packets from the worker's ring: any interface, grouped in runs. */
void sp_process_ring(struct sp_worker *w, struct rte_mbuf **pkts, uint16_t n,
		     const struct sp_runtime *rt);

/* Software RSS: spread a burst over the workers (worker 0 only). */
void sp_dispatch_burst(struct sp_worker *w, struct rte_mbuf **pkts,
		       uint16_t n, uint16_t iface,
		       const struct sp_runtime *rt);

/* The worker that owns a packet before it hits a session (for tests too). */
unsigned sp_dispatch_owner(struct rte_mbuf *m, uint16_t iface);
/* The same for a packet arriving in zone (SP_ZONE_*), whatever its port. */
unsigned sp_owner_of(struct rte_mbuf *m, unsigned zone);
/* An outside packet's external (address, port), host order: its
 * destination, or an ICMP error's quoted source; 0 when it has none. */
int sp_outside_end(struct rte_mbuf *m, uint32_t *addr, uint16_t *port);

/* in2out.c, out2in.c */
void sp_in2out_miss(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
		    const struct sp_flow_key *key,
		    const struct sp_runtime *rt);
void sp_out2in_miss(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
		    const struct sp_flow_key *key,
		    const struct sp_runtime *rt);
void sp_in2out_icmp_error(struct sp_worker *w, struct rte_mbuf *m,
			  struct sp_pkt *p, const struct sp_runtime *rt);
void sp_out2in_icmp_error(struct sp_worker *w, struct rte_mbuf *m,
			  struct sp_pkt *p, const struct sp_runtime *rt);

/* Hairpinning: an in2out-translated packet to a NAT-owned address. */
void sp_hairpin(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
		uint16_t iface, const struct sp_runtime *rt);

/* The worker owning a flow to external (addr, port): DNAT or mapping. */
unsigned sp_owner_external(uint8_t proto, uint32_t addr, uint16_t port);

/*
 * A hairpinned packet on its second pass, as it arrived for its first: the
 * sender's own source (stashed in the mbuf by sp_translate) and the TTL
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
 * RFC 4787 REQ-13, RFC 1191: a packet bigger than the MTU of the interface
 * route ri leaves by is dropped, never fragmented; with DF set, and error,
 * its sender gets fragmentation needed quoting m as it arrived on iface
 * (untranslated yet, or a hairpinned packet unwound). Returns 1 when m was
 * consumed.
 */
static inline int
sp_too_big(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	   uint16_t ri, uint16_t iface, int error, const struct sp_runtime *rt)
{
	uint16_t mtu;

	if (unlikely(ri == SP_ROUTE_NONE))
		return 0;       /* sp_forward drops it: no route */
	mtu = sp_route_mtu(ri);
	if (likely(rte_be_to_cpu_16(p->ip->total_length) <= mtu))
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

/*
 * Applies session sidx's rewrite for direction dir, refreshes it and sends
 * the packet on. The TTL was checked (> 1) by the caller.
 */
static inline void
sp_translate(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	     uint32_t sidx, unsigned dir, uint16_t iface,
	     const struct sp_runtime *rt)
{
	struct sp_session *s = &w->nat.sessions[sidx];
	int second_pass = *sp_meta(m) & SP_META_OUTSIDE;

	/* The size is checked before any rewrite, so that the error quotes
	 * the packet as it arrived. A hairpinned packet learns its egress on
	 * its second pass (iface is still the one it arrived on): its first
	 * pass keeps what it rewrites, so that the error can quote it whole. */
	if (!(dir == SP_DIR_IN2OUT && (s->flags & SP_SESS_HAIRPIN)) &&
	    sp_too_big(w, m, p, sp_session_route(s, dir), iface, 1, rt))
		return;

	/* a hairpinned packet had its TTL decremented on the way in2out */
	if (likely(!second_pass))
		sp_ttl_decrement(p->ip);
	if (dir == SP_DIR_IN2OUT) {
		if (unlikely(s->flags & SP_SESS_HAIRPIN)) {
			struct sp_mbuf_meta *meta = sp_mbuf_meta(m);

			meta->hp_src_addr = p->ip->src_addr;
			meta->hp_src_port = p->proto == IPPROTO_ICMP ?
				((struct rte_icmp_hdr *)p->l4)->icmp_ident :
				*(rte_be16_t *)p->l4;
		}
		sp_rewrite_src(p, s->ext_addr, s->ext_port);
	} else
		sp_rewrite_dst(p, s->int_addr, s->int_port);
	/* RFC 7857 sec. 2.2: a RST does not refresh the session */
	if (likely(!(p->tcp_flags & RTE_TCP_RST_FLAG)))
		s->last_seen = w->now;
	sp_stream_count(&w->nat, s, w->now);
	if (p->proto == IPPROTO_TCP) {
		uint8_t before = s->tcp;

		sp_nat_tcp_track(s, dir, p->tcp_flags);
		if (unlikely(s->tcp != before))
			sp_nat_tcp_changed(&w->nat, sidx, before, w->now);
		/* closing: due sooner than the wheel has it */
		if (unlikely(p->tcp_flags &
			     (RTE_TCP_FIN_FLAG | RTE_TCP_RST_FLAG)))
			sp_nat_reschedule(&w->nat, rt, sidx);
	}
	if (dir == SP_DIR_IN2OUT) {
		SP_INC(w, in2out);
		if (unlikely(s->flags & SP_SESS_HAIRPIN)) {
			sp_hairpin(w, m, p, iface, rt);
			return;
		}
	} else {
		SP_INC(w, out2in);
	}
	sp_forward(w, m, p, s, dir);
}

#endif /* SP_FASTPATH_H */
