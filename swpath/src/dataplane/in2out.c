/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside to outside, slow path (in2out.h): new flows (SNAT via QNS and the
 * allocator) and ICMP errors sent by inside hosts about traffic they
 * received.
 */
#include "core/nat.h"
#include "dataplane/fwd.h"
#include "dataplane/icmp_error.h"
#include "dataplane/icmp_gen.h"
#include "dataplane/in2out.h"

/* Refusals for want of resources: RFC 5508 says SHOULD send 3/13. */
static inline bool
out_of_resources(int rc)
{
	return rc == SP_CNT_drop_pool_exhausted ||
	       rc == SP_CNT_drop_quota_exceeded ||
	       rc == SP_CNT_drop_session_limit || rc == SP_CNT_drop_table_full;
}

uint32_t
sp_in2out_miss(struct sp_worker *w, struct rte_mbuf *m, struct sp_pkt *p,
	       const struct sp_flow_key *key, const struct sp_runtime *rt)
{
	int check_owner = !(*sp_meta(m) & SP_META_HANDED);
	unsigned owner = 0;
	uint64_t opened = w->cnt[SP_CNT_sessions_created];
	uint32_t sidx;
	uint64_t t0;
	int rc;

	t0 = rte_rdtsc();
	rc = sp_nat_outbound(&w->nat, rt, key, p->tcp_flags, w->now, check_owner,
			     &sidx, &owner);
	if (rc == SP_NAT_OK) {
		if (w->cnt[SP_CNT_sessions_created] != opened)
			sp_open_hist_observe(&w->open_hist, sp.open_hist_bound_tsc,
					     rte_rdtsc() - t0);
		return sidx;
	}
	if (rc == SP_NAT_HANDOFF) {
		sp_handoff(w, m, owner, 0);
	} else if (out_of_resources(rc) && rt->icmp_on_exhaustion) {
		SP_COUNT_ADD(w->cnt[rc], 1);
		sp_icmp_error_send(w, m, sp_in_iface(m), SP_ICMP_DEST_UNREACH,
				   SP_ICMP_CODE_PROHIBITED, 0, rt);
	} else {
		sp_drop(w, m, (unsigned)rc);
	}
	return SP_NONE;
}

uint32_t
sp_in2out_icmp_error(struct sp_worker *w, struct rte_mbuf *m,
		     struct sp_pkt *p, const struct sp_runtime *rt)
{
	struct sp_icmp_inner in;
	struct sp_flow_key key;
	struct sp_session *s;
	int64_t d;
	int rc;

	/* The quoted packet went remote -> host: our session's out2in form
	 * after translation, so the in2out key is it reversed. The error
	 * travels back to the quoted packet's source, the remote; it may come
	 * from the host or from a router between us and it (path MTU
	 * discovery towards the host), whose address the outer header loses
	 * below (the Python core's rule too, quicknat/icmp_error.py). */
	rc = sp_icmp_quoted_key(p, &in, &key);
	if (rc < 0) {
		sp_drop(w, m, (unsigned)-rc);
		return SP_NONE;
	}
	d = sp_nat_lookup(&w->nat, &key);
	if (d < 0 || (d & 1) != SP_DIR_IN2OUT) {
		sp_drop(w, m, SP_CNT_drop_icmp_error);
		return SP_NONE;
	}
	s = &w->nat.sessions[d >> 1];
	sp_inner_rewrite(&in, 0, s->ext_addr,
			 sp_inner_dport(&in), s->ext_port);
	p->ip->hdr_checksum = sp_cksum_adjust32(p->ip->hdr_checksum,
						p->ip->src_addr, s->ext_addr);
	p->ip->src_addr = s->ext_addr;
	sp_ttl_decrement(p->ip);
	sp_icmp_recompute(p);
	if (sp_too_big(w, m, p, sp_session_route(s, SP_DIR_IN2OUT), 0, 0, rt))
		return SP_NONE;
	SP_INC(w, icmp_error_in2out);
	return (uint32_t)(d >> 1);
}
