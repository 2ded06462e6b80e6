/* SPDX-License-Identifier: Apache-2.0 */
#include <rte_prefetch.h>

#include "dataplane/fastpath.h"
#include "dataplane/frag.h"
#include "dataplane/peer.h"
#include "qns.h"

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
		if (found[j] != SP_NONE) {
			sp_translate(w, fm[j], &pk[j], found[j] >> 1,
				     found[j] & 1, iface, rt);
		} else if (outside) {
			sp_out2in_miss(w, fm[j], &pk[j], &keys[j], rt);
		} else {
			sp_in2out_miss(w, fm[j], &pk[j], &keys[j], rt);
		}
	}
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
 * A later fragment (frag.h): its datagram's ports from the first fragment
 * (this worker's table, or the mbuf when another worker handed it over),
 * then the session they name, whose address rewrite it gets: no L4 header
 * to rewrite, and the first fragment's checksum update covers the whole
 * datagram (RFC 1624 on the pseudo-header).
 */
static __rte_noinline void
later_fragment(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	       struct sp_flow_key *key, uint16_t iface, int outside,
	       const struct sp_runtime *rt)
{
	struct sp_mbuf_meta *meta = sp_mbuf_meta(m);
	unsigned want = outside ? SP_DIR_OUT2IN : SP_DIR_IN2OUT;
	struct sp_session *s;
	int64_t d;

	if (meta->flags & SP_META_FRAG) {
		key->sport = meta->frag_sport;
		key->dport = meta->frag_dport;
	} else {
		struct sp_frag_key fk = {
			.src = key->src, .dst = key->dst,
			.id = p->ip->packet_id, .proto = key->proto,
		};
		int rc = sp_frag_later(w->frag, &fk, m, w->now, &key->sport,
				       &key->dport, w->cnt);

		if (rc == SP_FRAG_HELD)
			return;
		if (rc < 0) {
			sp_drop(w, m, (unsigned)-rc);
			return;
		}
	}
	d = sp_nat_lookup(&w->nat, key);
	if (d < 0) {
		int peer = fragment_peer(m, key, outside);

		/* a datagram of another instance's flow (peer.h) */
		if (unlikely(peer >= 0)) {
			sp_peer_send(w, m, (unsigned)peer, true);
			return;
		}
		/* the session lives where the first fragment was handed */
		if (sp.n_workers > 1 && !(meta->flags & SP_META_HANDED)) {
			unsigned owner = outside ?
				sp_owner_external(key->proto,
						  rte_be_to_cpu_32(key->dst),
						  rte_be_to_cpu_16(key->dport)) :
				sp_owner_inside(&sp.rss,
						rte_be_to_cpu_32(key->src));

			if (owner != w->index) {
				meta->frag_sport = key->sport;
				meta->frag_dport = key->dport;
				sp_handoff(w, m, owner, SP_META_FRAG);
				return;
			}
		}
		sp_drop(w, m, SP_CNT_drop_fragment);
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

		n = sp_frag_first(w->frag, &fk, key->sport, key->dport, w->now,
				  held, w->cnt);
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
 * Parses the burst, gathering the packets of flows; they are looked up
 * together. Any other packet that is not dropped first flushes what was
 * gathered, so packets are handled (and sent) in the order they came.
 */
void
sp_process_burst(struct sp_worker *w, struct rte_mbuf **pkts, uint16_t n,
		 uint16_t iface, int outside, const struct sp_runtime *rt)
{
	struct sp_pkt pk[SP_BURST];
	struct sp_flow_key keys[SP_BURST];
	struct rte_mbuf *fm[SP_BURST];
	const struct rte_ether_addr *mac = &sp.ifaces[iface].mac;
	const bool slow_path = sp.ifaces[iface].slow_path;
	unsigned nk = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct sp_pkt *p = &pk[nk];
		uint32_t meta = *sp_meta(m);
		int rc;

		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		rc = sp_parse(m, p, &keys[nk]);
		if (unlikely(rc < 0)) {
			sp_drop(w, m, (unsigned)-rc);
			continue;
		}
		if (unlikely(rc == SP_PKT_ARP)) {
			sp_arp_input(w, m, iface, rt);
			continue;
		}
		/* from a link (a hairpinned packet re-enters with our source) */
		if (!(meta & SP_META_OUTSIDE)) {
			unsigned bad;

			/* a slow-path link carries the switch's misses, sent
			 * to the switch's own MACs (p4src/README.md) */
			if (unlikely(!rte_is_same_ether_addr(&p->eth->dst_addr,
							     mac)) &&
			    !slow_path) {
				sp_drop(w, m, SP_CNT_drop_l2_other);
				continue;
			}
			bad = sp_address_check(p->ip, rt);
			if (unlikely(bad != 0)) {
				sp_drop(w, m, bad);
				continue;
			}
			if (unlikely(sp_is_local(p->ip->dst_addr))) {
				sp_local_input(w, m, p, iface);
				continue;
			}
			/* RFC 1812 sec. 5.3.1: it would leave with TTL 0 */
			if (unlikely(p->ip->time_to_live <= 1)) {
				SP_INC(w, drop_ttl);
				sp_icmp_error_send(w, m, iface,
						   SP_ICMP_TIME_EXCEEDED, 0, 0,
						   rt);
				continue;
			}
		}
		if (unlikely(p->frag != SP_FRAG_NONE)) {
			/* in order: after the flows gathered before it */
			if (nk > 0) {
				struct sp_pkt frag = *p;
				struct sp_flow_key fkey = keys[nk];

				flush_flows(w, fm, pk, keys, nk, iface, outside,
					    rt);
				nk = 0;
				pk[0] = frag;
				keys[0] = fkey;
				p = &pk[0];
			}
			fragment_input(w, m, p, &keys[0], iface, outside, rt);
			continue;
		}
		if (likely(rc == SP_PKT_FLOW)) {
			fm[nk++] = m;
			continue;
		}
		if (rc == SP_PKT_OTHER) {
			sp_drop(w, m, SP_CNT_drop_unsupported);
			continue;
		}
		/* an ICMP error may be about a flow opened earlier in the burst */
		if (nk > 0) {
			struct sp_pkt err = *p;

			flush_flows(w, fm, pk, keys, nk, iface, outside, rt);
			nk = 0;
			pk[0] = err;
			p = &pk[0];
		}
		if (outside)
			sp_out2in_icmp_error(w, m, p, rt);
		else
			sp_in2out_icmp_error(w, m, p, rt);
	}
	if (nk > 0)
		flush_flows(w, fm, pk, keys, nk, iface, outside, rt);
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

unsigned
sp_owner_external(uint8_t proto, uint32_t addr, uint16_t port)
{
	const struct qns_rule *rule =
		qns_lookup_kind(sp.qns, QNS_DNAT, proto, addr, port);

	if (rule != NULL && SP_ACT_KIND(rule->user) == SP_ACT_DNAT) {
		uint32_t mask = rule->plen == 0 ? 0 : ~0u << (32 - rule->plen);
		uint32_t to = SP_ACT_TO(rule->user);

		if (SP_ACT_TO_LEN(rule->user) < 32)
			to |= addr & ~mask;
		return sp_owner_inside(&sp.rss, to);
	}
	return sp_owner_outside(&sp.rss, addr, port);
}

void
sp_hairpin(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	   uint16_t iface, const struct sp_runtime *rt)
{
	int peer = sp_peer_elsewhere(m);
	unsigned owner;

	RTE_SET_USED(p);
	SP_INC(w, hairpin);
	/* a mapping of another instance behind the switch (peer.h) */
	if (unlikely(peer >= 0)) {
		sp_peer_send(w, m, (unsigned)peer, false);
		return;
	}
	/* It enters again as from outside: the worker RSS would give it there
	 * (for an ICMP error, the owner of the quoted packet's source). */
	owner = sp.n_workers > 1 ? sp_owner_of(m, SP_ZONE_OUTSIDE) : 0;
	if (owner != w->index) {
		sp_handoff(w, m, owner, SP_META_OUTSIDE);
		return;
	}
	*sp_meta(m) |= SP_META_OUTSIDE;
	sp_process_burst(w, &m, 1, iface, 1, rt);
}

unsigned
sp_dispatch_owner(struct rte_mbuf *m, uint16_t iface)
{
	return sp_owner_of(m, sp.ifaces[iface].zone);
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
		if (l4[0] == SP_ICMP_ECHO_REQUEST || l4[0] == SP_ICMP_ECHO_REPLY) {
			memcpy(&be_port, l4 + 4, sizeof(be_port));
			break;
		}
		if (sp_icmp_is_error(l4[0])) {
			/* the embedded packet's source is our external end */
			const struct rte_ipv4_hdr *in = (const void *)(l4 + 8);
			unsigned iihl;

			if (len < sizeof(struct rte_ether_hdr) + ihl + 8 + 20)
				return 0;
			iihl = (in->version_ihl & 0x0f) * 4u;
			if (iihl < 20 || len < sizeof(struct rte_ether_hdr) +
						       ihl + 8 + iihl + 8)
				return 0;
			l4 = (const uint8_t *)in + iihl;
			if (in->next_proto_id == IPPROTO_ICMP)
				memcpy(&be_port, l4 + 4, sizeof(be_port));
			else
				memcpy(&be_port, l4, sizeof(be_port));
			*addr = rte_be_to_cpu_32(in->src_addr);
			break;
		}
		return 0;
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

void
sp_dispatch_burst(struct sp_worker *w, struct rte_mbuf **pkts, uint16_t n,
		  uint16_t iface, const struct sp_runtime *rt)
{
	struct rte_mbuf *mine[SP_BURST];
	struct rte_mbuf *other[SP_MAX_WORKERS][SP_BURST];
	uint16_t n_other[SP_MAX_WORKERS];
	uint16_t n_mine = 0;

	for (unsigned q = 0; q < sp.n_workers; q++)
		n_other[q] = 0;
	for (uint16_t i = 0; i < n; i++) {
		unsigned q = sp_dispatch_owner(pkts[i], iface);

		if (q == w->index)
			mine[n_mine++] = pkts[i];
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
	if (n_mine != 0)
		sp_process_burst(w, mine, n_mine, iface,
				 sp.ifaces[iface].zone == SP_ZONE_OUTSIDE, rt);
}
