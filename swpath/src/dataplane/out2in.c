/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Outside to inside, slow path (out2in.h): new flows from outside (DNAT
 * rules, or an existing mapping that the filtering mode lets in; never a new
 * mapping), and ICMP errors about packets we translated out.
 */
#include "core/nat.h"
#include "dataplane/fwd.h"
#include "dataplane/icmp_error.h"
#include "dataplane/icmp_gen.h"
#include "dataplane/out2in.h"
#include "dataplane/peer.h"

uint32_t
sp_out2in_miss(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	       const struct sp_flow_key *key, const struct sp_runtime *rt)
{
	int check_owner = !(*sp_meta(m) & SP_META_HANDED);
	unsigned owner = 0;
	uint64_t opened = w->cnt[SP_CNT_sessions_created];
	uint32_t sidx;
	uint64_t t0;
	int rc;

	t0 = rte_rdtsc();
	rc = sp_nat_inbound(&w->nat, rt, key, p->tcp_flags, w->now, check_owner,
			    &sidx, &owner);
	if (rc == SP_NAT_OK) {
		if (w->cnt[SP_CNT_sessions_created] != opened)
			sp_open_hist_observe(&w->open_hist, sp.open_hist_bound_tsc,
					     rte_rdtsc() - t0);
		return sidx;
	}
	if (rc == SP_NAT_HANDOFF)
		sp_handoff(w, m, owner, 0);
	else
		sp_drop(w, m, (unsigned)rc);
	return SP_NONE;
}

/* An error about no session of ours: another instance's port (the switch
 * sends us every error, peer.h: it gets it as it came from the link), or
 * another worker's; else it is dropped. */
static void
error_elsewhere(struct sp_worker *w, struct rte_mbuf *m,
		const struct sp_flow_key *key)
{
	int peer = *sp_meta(m) & (SP_META_OUTSIDE | SP_META_RELAYED) ?
			   -1 : sp_peer_elsewhere(m);

	if (unlikely(peer >= 0)) {
		sp_peer_send(w, m, (unsigned)peer, true);
		return;
	}
	if (!(*sp_meta(m) & SP_META_HANDED) && sp.n_workers > 1) {
		unsigned owner = sp_nat_owner_external(
			&w->nat, key->proto, rte_be_to_cpu_32(key->dst),
			rte_be_to_cpu_16(key->dport));

		if (owner != w->index) {
			sp_handoff(w, m, owner, 0);
			return;
		}
	}
	sp_drop(w, m, SP_CNT_drop_icmp_error);
}

uint32_t
sp_out2in_icmp_error(struct sp_worker *w, struct rte_mbuf *m,
		     struct sp_pkt *p, const struct sp_runtime *rt)
{
	struct sp_icmp_inner in;
	struct sp_flow_key key;
	struct sp_session *s;
	int64_t d;
	int rc;

	/* The quoted packet went external -> remote; the error comes back to
	 * its source, our external address. */
	rc = sp_icmp_quoted_key(p, &in, &key);
	if (rc < 0) {
		sp_drop(w, m, (unsigned)-rc);
		return SP_NONE;
	}
	d = sp_nat_lookup(&w->nat, &key);
	if (d < 0) {
		error_elsewhere(w, m, &key);
		return SP_NONE;
	}
	if ((d & 1) != SP_DIR_OUT2IN) {
		sp_drop(w, m, SP_CNT_drop_icmp_error);
		return SP_NONE;
	}
	s = &w->nat.sessions[d >> 1];
	sp_inner_rewrite(&in, 1, s->int_addr,
			 sp_inner_sport(&in), s->int_port);
	p->ip->hdr_checksum = sp_cksum_adjust32(p->ip->hdr_checksum,
						p->ip->dst_addr, s->int_addr);
	p->ip->dst_addr = s->int_addr;
	/* a hairpinned error had its TTL decremented on the way in2out */
	if (likely(!(*sp_meta(m) & SP_META_OUTSIDE)))
		sp_ttl_decrement(p->ip);
	sp_icmp_recompute(p);
	if (sp_too_big(w, m, p, sp_session_route(s, SP_DIR_OUT2IN), 0, 0, rt))
		return SP_NONE;
	SP_INC(w, icmp_error_out2in);
	return (uint32_t)(d >> 1);
}
