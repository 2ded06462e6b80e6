/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-packet path (fastpath.h): a burst parsed, checked against the
 * input contract (docs/nat-behavior.md, IN-*), its flows looked up together
 * and translated; fragments by virtual reassembly (frag.h); hairpinning.
 */
#include <rte_prefetch.h>

#include "core/lifecycle.h"
#include "core/nat.h"
#include "dataplane/dispatch.h"
#include "dataplane/fastpath.h"
#include "dataplane/frag.h"
#include "dataplane/fwd.h"
#include "dataplane/icmp_gen.h"
#include "dataplane/in2out.h"
#include "dataplane/l2.h"
#include "dataplane/learn.h"
#include "dataplane/out2in.h"
#include "dataplane/peer.h"

/*
 * IN-IP-5/6 (docs/nat-behavior.md): addresses no router forwards (RFC 1812
 * sec. 5.3.7, RFC 6890) and NAT-owned addresses as the source of a packet
 * from a link (a spoofed external endpoint could reach a hairpinned session
 * or claim a mapping's address). Every packet asks, so the common answer
 * costs two loads from a 256-byte table by first octet and one branch; the
 * owned ranges are two compares away (sp_rt_owned).
 */
#define MARTIAN_SRC 0x1         /* 0/8, 127/8, 224/4, 240/4 as a source */
#define MARTIAN_DST 0x2         /* 0/8, 127/8, 240/4 (not 255/8) */
#define NOT_UNICAST_DST 0x4     /* 224/4; 255.255.255.255 is checked apart */
#define BROADCAST_OCTET 0x8     /* 255: limited broadcast, or class E */

static const uint8_t first_octet[256] = {
	[0] = MARTIAN_SRC | MARTIAN_DST,
	[127] = MARTIAN_SRC | MARTIAN_DST,
	[224 ... 239] = MARTIAN_SRC | NOT_UNICAST_DST,
	[240 ... 254] = MARTIAN_SRC | MARTIAN_DST,
	[255] = MARTIAN_SRC | BROADCAST_OCTET,
};

/* Returns 0 or the counter to drop the packet under (swpath's order and
 * the P4 program's input_check.p4: not unicast, then martians, then owned). */
static inline unsigned
sp_address_check(const struct rte_ipv4_hdr *ip, const struct sp_runtime *rt)
{
	const uint8_t *src = (const uint8_t *)&ip->src_addr;
	const uint8_t *dst = (const uint8_t *)&ip->dst_addr;
	uint8_t s = first_octet[src[0]] & MARTIAN_SRC;
	uint8_t d = first_octet[dst[0]] & (uint8_t)~MARTIAN_SRC;

	if (unlikely(s | d)) {
		if ((d & NOT_UNICAST_DST) ||
		    ((d & BROADCAST_OCTET) && ip->dst_addr == UINT32_MAX))
			return SP_CNT_drop_not_unicast;
		return SP_CNT_drop_martian;     /* class E 255/8 too */
	}
	if (unlikely(sp_rt_owned(rt, rte_be_to_cpu_32(ip->src_addr))))
		return SP_CNT_drop_martian;
	return 0;
}

/*
 * Hairpinning (RFC 4787 REQ-9): a packet translated in2out to a NAT-owned
 * address enters again as from outside, on the worker RSS would give it
 * there (for an ICMP error, the owner of the quoted packet's source), or
 * the peer instance that owns the mapping (peer.h).
 */
static void
hairpin(struct sp_worker *w, struct rte_mbuf *m, uint16_t iface,
	const struct sp_runtime *rt)
{
	int peer = sp_peer_elsewhere(m);
	unsigned owner;

	SP_INC(w, hairpin);
	if (unlikely(peer >= 0)) {
		sp_peer_send(w, m, (unsigned)peer, false);
		return;
	}
	owner = sp.n_workers > 1 ? sp_owner_of(m, SP_ZONE_OUTSIDE) : 0;
	if (owner != w->index) {
		sp_handoff(w, m, owner, SP_META_OUTSIDE);
		return;
	}
	*sp_meta(m) |= SP_META_OUTSIDE;
	sp_process_burst(w, &m, 1, iface, 1, rt);
}

/*
 * Applies session sidx's rewrite for direction dir, refreshes it and sends
 * the packet on. The TTL was checked (> 1) by the caller.
 */
static inline void
translate(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	  uint32_t sidx, unsigned dir, uint16_t iface,
	  const struct sp_runtime *rt)
{
	struct sp_session *s = &w->nat.sessions[sidx];
	int second_pass = *sp_meta(m) & SP_META_OUTSIDE;
	struct sp_learn_tag tag;
	bool learn;

	/* The size is checked before any rewrite, so that the error quotes
	 * the packet as it arrived. A hairpinned packet learns its egress on
	 * its second pass (iface is still the one it arrived on): its first
	 * pass keeps what it rewrites, so that the error can quote it whole. */
	if (!(dir == SP_DIR_IN2OUT && (s->flags & SP_SESS_HAIRPIN)) &&
	    sp_too_big(w, m, p, sp_session_route(s, dir), iface, 1, rt))
		return;

	/* learn mode: the tuple as it came, for the switch (learn.h) */
	learn = sp_learn_begin(w, m, p, s, dir, rt, &tag);
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
	sp_nat_count_packet(&w->nat, rt, s, w->now);
	if (p->proto == IPPROTO_TCP) {
		uint8_t before = s->tcp;

		sp_session_tcp_track(s, dir, p->tcp_flags);
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
			hairpin(w, m, iface, rt);
			return;
		}
	} else {
		SP_INC(w, out2in);
	}
	if (unlikely(learn))
		sp_learn_finish(w, m, p, s, &tag, rt);
	sp_forward(w, m, p, s, dir);
}

/* A packet the slow path missed on: its session, or SP_NONE (consumed). */
static __rte_noinline uint32_t
miss(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
     const struct sp_flow_key *key, int outside, const struct sp_runtime *rt)
{
	uint32_t sidx = outside ? sp_out2in_miss(w, m, p, key, rt) :
				  sp_in2out_miss(w, m, p, key, rt);

	return sidx == SP_NONE ? SP_NONE :
	       sidx << 1 | (outside ? SP_DIR_OUT2IN : SP_DIR_IN2OUT);
}

/* Looks up the flow packets gathered so far and translates them. */
static void
flush_flows(struct sp_worker *w, struct rte_mbuf **fm, struct sp_pkt *pk,
	    struct sp_flow_key *keys, unsigned nk, uint16_t iface, int outside,
	    const struct sp_runtime *rt)
{
	uint32_t found[SP_BURST];

	sp_nat_lookup_bulk(&w->nat, keys, nk, found);
	/* new flows are opened one by one: fetch their mappings' buckets
	 * first, all of them (a burst of new flows is one burst of misses) */
	for (unsigned stage = 0; stage < 2; stage++)
		for (unsigned j = 0; j < nk; j++)
			if (found[j] == SP_NONE)
				sp_nat_prefetch_miss(&w->nat, &keys[j], outside,
						     stage);
	for (unsigned j = 0; j < nk; j++) {
		uint32_t e = found[j];

		if (e == SP_NONE) {
			e = miss(w, fm[j], &pk[j], &keys[j], outside, rt);
			if (e == SP_NONE)
				continue;
		}
		translate(w, fm[j], &pk[j], e >> 1, e & 1, iface, rt);
	}
}

/*
 * An ICMP error (RFC 5508), after the flows gathered before it: translated
 * through the session of the packet it quotes, then routed as that
 * session's packets are; one about a hairpinned packet goes back in, as
 * from outside, to the session that sent that packet (sec. 6).
 */
static __rte_noinline void
icmp_error_input(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
		 int outside, const struct sp_runtime *rt)
{
	uint32_t sidx = outside ? sp_out2in_icmp_error(w, m, p, rt) :
				  sp_in2out_icmp_error(w, m, p, rt);
	struct sp_session *s;

	if (sidx == SP_NONE)
		return;
	s = &w->nat.sessions[sidx];
	if (!outside && (s->flags & SP_SESS_HAIRPIN)) {
		hairpin(w, m, sp_in_iface(m), rt);
		return;
	}
	sp_forward(w, m, p, s, outside ? SP_DIR_OUT2IN : SP_DIR_IN2OUT);
}

/*
 * The peer instance whose datagram an outside fragment from the link is
 * (the switch reads no port of a fragment: they all come to the default
 * instance), by its first fragment's ports; -1 when it is this one's.
 */
static inline int
fragment_peer(struct rte_mbuf *m, const struct sp_flow_key *key, int outside)
{
	if (likely(sp_peers.n == 0) || !outside ||
	    (*sp_meta(m) & (SP_META_OUTSIDE | SP_META_RELAYED)))
		return -1;
	return sp_peer_elsewhere_port(key->dst, key->dport);
}

/*
 * A later fragment whose datagram has no session here: another instance's
 * (peer.h), or another worker's, where its first fragment was handed (the
 * ports go along in the mbuf); else dropped.
 */
static void
fragment_elsewhere(struct sp_worker *w, struct rte_mbuf *m,
		   const struct sp_flow_key *key, int outside)
{
	struct sp_mbuf_meta *meta = sp_mbuf_meta(m);
	int peer = fragment_peer(m, key, outside);

	if (unlikely(peer >= 0)) {
		sp_peer_send(w, m, (unsigned)peer, true);
		return;
	}
	if (sp.n_workers > 1 && !(meta->flags & SP_META_HANDED)) {
		unsigned owner = outside ?
			sp_nat_owner_external(&w->nat, key->proto,
					      rte_be_to_cpu_32(key->dst),
					      rte_be_to_cpu_16(key->dport)) :
			sp_owner_inside(&sp.rss, rte_be_to_cpu_32(key->src));

		if (owner != w->index) {
			meta->frag_sport = key->sport;
			meta->frag_dport = key->dport;
			sp_handoff(w, m, owner, SP_META_FRAG);
			return;
		}
	}
	sp_drop(w, m, SP_CNT_drop_fragment);
}

/* Where a fragment's data lies in its datagram (frag.h: overlaps). */
static inline struct sp_frag_span
fragment_span(const struct sp_pkt *p)
{
	uint16_t frag = rte_be_to_cpu_16(p->ip->fragment_offset);
	uint16_t start = (uint16_t)((frag & RTE_IPV4_HDR_OFFSET_MASK) * 8u);

	/* the parser saw to it that start + l4_len < 65,536 */
	return (struct sp_frag_span){
		.start = start,
		.end = (uint16_t)(start + p->l4_len),
		.last = !(frag & RTE_IPV4_HDR_MF_FLAG),
	};
}

/* A later fragment's datagram ports: from the worker that handed it over
 * (or from its first, which released it), or this worker's table. 0, or
 * -1 when m was held or dropped. */
static int
fragment_ports(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	       struct sp_flow_key *key)
{
	const struct sp_mbuf_meta *meta = sp_mbuf_meta(m);
	struct sp_frag_key fk = {
		.src = key->src, .dst = key->dst,
		.id = p->ip->packet_id, .proto = key->proto,
	};
	struct sp_frag_span span;
	int rc;

	if (meta->flags & SP_META_FRAG) {
		key->sport = meta->frag_sport;
		key->dport = meta->frag_dport;
		return 0;
	}
	span = fragment_span(p);
	rc = sp_frag_later(w->frag, &fk, &span, m, w->now, &key->sport,
			   &key->dport, w->cnt);
	if (rc == SP_FRAG_HELD)
		return -1;
	if (rc < 0) {
		sp_drop(w, m, (unsigned)-rc);
		return -1;
	}
	return 0;
}

/*
 * A later fragment (frag.h): its datagram's ports from the first fragment,
 * then the session they name, whose address rewrite it gets: no L4 header
 * to rewrite, and the first fragment's checksum update covers the whole
 * datagram (RFC 1624 on the pseudo-header).
 */
static __rte_noinline void
later_fragment(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	       struct sp_flow_key *key, uint16_t iface, int outside,
	       const struct sp_runtime *rt)
{
	unsigned want = outside ? SP_DIR_OUT2IN : SP_DIR_IN2OUT;
	struct sp_session *s;
	int64_t d;

	if (fragment_ports(w, m, p, key) < 0)
		return;
	d = sp_nat_lookup(&w->nat, key);
	if (d < 0) {
		fragment_elsewhere(w, m, key, outside);
		return;
	}
	s = &w->nat.sessions[d >> 1];
	if ((unsigned)(d & 1) != want || (s->flags & SP_SESS_HAIRPIN)) {
		sp_drop(w, m, SP_CNT_drop_fragment);
		return;
	}
	/* no error about a later fragment (RFC 1812 sec. 4.3.2.7) */
	if (sp_too_big(w, m, p, sp_session_route(s, want), iface, 0, rt))
		return;
	sp_ttl_decrement(p->ip);
	if (want == SP_DIR_IN2OUT) {
		p->ip->hdr_checksum = sp_cksum_adjust32(p->ip->hdr_checksum,
							p->ip->src_addr,
							s->ext_addr);
		p->ip->src_addr = s->ext_addr;
		SP_INC(w, in2out);
	} else {
		p->ip->hdr_checksum = sp_cksum_adjust32(p->ip->hdr_checksum,
							p->ip->dst_addr,
							s->int_addr);
		p->ip->dst_addr = s->int_addr;
		SP_INC(w, out2in);
	}
	s->last_seen = w->now;
	SP_INC(w, frag_translated);
	sp_forward(w, m, p, s, want);
}

/*
 * IN-IP-8, RFC 4787 REQ-14: a fragment, after the flows gathered before it.
 * A first fragment is translated as any packet of its flow; then the
 * fragments of its datagram that came before it, in their order.
 */
/* out of the burst loop: fragments are rare, and their code inlined
 * into it slowed the established path (bench_swpath, 64k sessions) */
static __rte_noinline __rte_cold void
fragment_input(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	       struct sp_flow_key *key, uint16_t iface, int outside,
	       const struct sp_runtime *rt)
{
	struct rte_mbuf *held[SP_FRAG_HOLD];
	unsigned n = 0;
	int peer;

	/* a hairpinned fragment's second pass would need its ports again */
	if (unlikely(*sp_meta(m) & SP_META_OUTSIDE)) {
		sp_drop(w, m, SP_CNT_drop_fragment);
		return;
	}
	if (p->frag == SP_FRAG_LATER) {
		later_fragment(w, m, p, key, iface, outside, rt);
		return;
	}
	/* the worker that saw the first keeps the datagram's ports (the
	 * worker it may hand the first to sees no later fragment) */
	if (!(*sp_meta(m) & SP_META_HANDED)) {
		struct sp_frag_key fk = {
			.src = key->src, .dst = key->dst,
			.id = p->ip->packet_id, .proto = key->proto,
		};
		struct sp_frag_span span = fragment_span(p);
		int rc = sp_frag_first(w->frag, &fk, &span, key->sport,
				       key->dport, w->now, held, w->cnt);

		if (rc < 0) {   /* an overlap (IN-IP-9) or over the limits */
			sp_drop(w, m, (unsigned)-rc);
			return;
		}
		n = (unsigned)rc;
	}
	/* the held ones carry their ports: their ranges are recorded */
	for (unsigned i = 0; i < n; i++) {
		struct sp_mbuf_meta *meta = sp_mbuf_meta(held[i]);

		meta->flags |= SP_META_FRAG;
		meta->frag_sport = key->sport;
		meta->frag_dport = key->dport;
	}
	peer = fragment_peer(m, key, outside);
	if (unlikely(peer >= 0)) {
		/* the first, then the ones that came before it, in order: the
		 * owner keeps the ports from the first (peer.h) */
		sp_peer_send(w, m, (unsigned)peer, true);
		for (unsigned i = 0; i < n; i++)
			sp_peer_send(w, held[i], (unsigned)peer, true);
		return;
	}
	flush_flows(w, &m, p, key, 1, iface, outside, rt);
	for (unsigned i = 0; i < n; i++) {
		struct sp_pkt hp;
		struct sp_flow_key hk;

		if (sp_parse(held[i], &hp, &hk) != SP_PKT_FRAGMENT) {
			sp_drop(w, held[i], SP_CNT_drop_fragment);
			continue;
		}
		later_fragment(w, held[i], &hp, &hk,
			       sp_in_iface(held[i]), outside,
			       rt);
	}
}

/*
 * The checks of a packet from a link (a hairpinned packet re-enters with
 * our source and skips them): its Ethernet destination (a slow-path link
 * carries the switch's misses, sent to the switch's own MACs,
 * p4src/README.md), its addresses (IN-IP-5/6), the router's own
 * addresses, its TTL (RFC 1812 sec. 5.3.1: it would leave with TTL 0).
 * Returns whether it goes on; if not, m was consumed.
 */
static inline bool
link_input(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	   const struct sp_iface *ifc, uint16_t iface,
	   const struct sp_runtime *rt)
{
	unsigned bad;

	if (unlikely(!rte_is_same_ether_addr(&p->eth->dst_addr, &ifc->mac)) &&
	    !ifc->slow_path) {
		sp_drop(w, m, SP_CNT_drop_l2_other);
		return false;
	}
	bad = sp_address_check(p->ip, rt);
	if (unlikely(bad != 0)) {
		sp_drop(w, m, bad);
		return false;
	}
	if (unlikely(sp_is_local(p->ip->dst_addr))) {
		sp_local_input(w, m, p, iface);
		return false;
	}
	if (unlikely(p->ip->time_to_live <= 1)) {
		SP_INC(w, drop_ttl);
		sp_icmp_error_send(w, m, iface, SP_ICMP_TIME_EXCEEDED, 0, 0, rt);
		return false;
	}
	return true;
}

/* The flows gathered so far of a burst being parsed. */
struct gathered {
	struct sp_pkt pk[SP_BURST];
	struct sp_flow_key keys[SP_BURST];
	struct rte_mbuf *fm[SP_BURST];
	unsigned n;
};

/*
 * A packet that is not a flow packet (a fragment, an ICMP error) comes in
 * its order: the flows gathered before it go first, and its parse (the
 * next free slot) moves to slot 0. Returns its parse.
 */
static struct sp_pkt *
flush_before(struct sp_worker *w, struct gathered *g, uint16_t iface,
	     int outside, const struct sp_runtime *rt)
{
	struct sp_pkt p;
	struct sp_flow_key key;

	if (g->n == 0)
		return &g->pk[0];
	p = g->pk[g->n];
	key = g->keys[g->n];
	flush_flows(w, g->fm, g->pk, g->keys, g->n, iface, outside, rt);
	g->n = 0;
	g->pk[0] = p;
	g->keys[0] = key;
	return &g->pk[0];
}

/*
 * Parses the burst, gathering the packets of flows; they are looked up
 * together. Any other packet that is not dropped first flushes what was
 * gathered, so packets are handled (and sent) in the order they came.
 */
void
sp_process_burst(struct sp_worker *w, struct rte_mbuf **pkts, uint16_t n,
		 uint16_t iface, int outside, const struct sp_runtime *rt)
{
	const struct sp_iface *ifc = &sp.ifaces[iface];
	struct gathered g;

	g.n = 0;
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct sp_pkt *p = &g.pk[g.n];
		int rc;

		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		rc = sp_parse(m, p, &g.keys[g.n]);
		if (unlikely(rc < 0)) {
			sp_drop(w, m, (unsigned)-rc);
			continue;
		}
		if (unlikely(rc == SP_PKT_ARP)) {
			sp_arp_input(w, m, iface, rt);
			continue;
		}
		if (!(*sp_meta(m) & SP_META_OUTSIDE) &&
		    !link_input(w, m, p, ifc, iface, rt))
			continue;
		if (unlikely(p->frag != SP_FRAG_NONE)) {
			p = flush_before(w, &g, iface, outside, rt);
			fragment_input(w, m, p, &g.keys[0], iface, outside, rt);
			continue;
		}
		if (likely(rc == SP_PKT_FLOW)) {
			g.fm[g.n++] = m;
			continue;
		}
		if (rc == SP_PKT_OTHER) {
			sp_drop(w, m, SP_CNT_drop_unsupported);
			continue;
		}
		/* an ICMP error may be about a flow opened earlier in the burst */
		p = flush_before(w, &g, iface, outside, rt);
		icmp_error_input(w, m, p, outside, rt);
	}
	if (g.n > 0)
		flush_flows(w, g.fm, g.pk, g.keys, g.n, iface, outside, rt);
}

void
sp_process_ring(struct sp_worker *w, struct rte_mbuf **pkts, uint16_t n,
		const struct sp_runtime *rt)
{
	uint16_t start = 0;

	/* runs of packets from one interface and zone, order kept */
	while (start < n) {
		uint16_t iface = sp_in_iface(pkts[start]);
		uint32_t out = *sp_meta(pkts[start]) & SP_META_OUTSIDE;
		uint16_t end = start + 1;

		while (end < n && sp_in_iface(pkts[end]) == iface &&
		       (*sp_meta(pkts[end]) & SP_META_OUTSIDE) == out)
			end++;
		sp_process_burst(w, &pkts[start], end - start, iface,
				 out || sp.ifaces[iface].zone == SP_ZONE_OUTSIDE,
				 rt);
		start = end;
	}
}
