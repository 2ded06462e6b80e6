/* SPDX-License-Identifier: Apache-2.0 */
/*
 * New-flow decisions (nat.h): core.py's new_flow / _outbound / _inbound /
 * _dnat, with the same refusals, each one a counter.
 */
#include "core/lifecycle.h"
#include "core/mapping.h"
#include "core/nat.h"
#include "core/rule.h"
#include "qns.h"

static int
existing(const struct sp_nat *nat, const struct sp_flow_key *key,
	 uint32_t *sidx)
{
	int64_t d = sp_nat_lookup(nat, key);

	if (d < 0)
		return 0;
	*sidx = (uint32_t)(d >> 1);
	return 1;
}

/*
 * A RST ends a connection; with no session there is none to end here, and
 * a session opened for it would hold a port (inside) or a slot of a host's
 * session limit (outside: a spoofed RST flood at a port forward) for the
 * transitory timeout, for a packet no peer can use (RFC 6888's resource
 * exhaustion; Linux conntrack calls such a RST invalid). Checked once the
 * flow is on its owner worker and has no session there.
 */
static inline int
opens_session(const struct sp_flow_key *key, uint8_t tcp_flags)
{
	return key->proto != IPPROTO_TCP || !(tcp_flags & TH_RST);
}

/* Whether another worker owns the flow: *owner, when it does. */
static inline bool
elsewhere(const struct sp_nat *nat, unsigned o, unsigned *owner)
{
	if (o == nat->worker)
		return false;
	*owner = o;
	return true;
}

int
sp_nat_outbound(struct sp_nat *nat, const struct sp_runtime *rt,
		const struct sp_flow_key *key, uint8_t tcp_flags, uint32_t now,
		int check_owner, uint32_t *sidx, unsigned *owner)
{
	uint32_t src = be32toh(key->src);
	uint16_t sport = be16toh(key->sport);
	struct sp_session_spec spec = {
		.proto = key->proto, .origin = SP_ORIGIN_SNAT,
		.int_addr = src, .int_port = sport,
		.rem_addr = be32toh(key->dst),
		.rem_port = key->proto == IPPROTO_ICMP ? sport :
							 be16toh(key->dport),
	};
	const struct qns_rule *rule;
	struct sp_mapping *m;
	bool fresh;
	int rc;

	if (check_owner && nat->n_workers > 1 &&
	    elsewhere(nat, sp_owner_inside(nat->shared.rss, src), owner))
		return SP_NAT_HANDOFF;
	if (existing(nat, key, sidx))
		return SP_NAT_OK;
	if (!opens_session(key, tcp_flags))
		return SP_CNT_drop_rst_no_session;
	rule = qns_lookup_kind(nat->shared.qns, QNS_SNAT, key->proto, src,
			       sport);
	if (rule == NULL)
		return SP_CNT_drop_no_rule;
	spec.rule_id = rule->id;
	if (sp_host_limit_reached(nat, rt, src, now))
		return SP_CNT_drop_session_limit;
	m = sp_mapping_find(nat, 0, key->proto, src, sport, &spec.mapping);
	fresh = m == NULL;
	if (fresh) {
		rc = sp_mapping_new(nat, rt, rule->user, key, now,
				    &spec.mapping);
		if (rc != SP_NAT_OK)
			return rc;
		m = &nat->mappings[spec.mapping];
	}
	spec.ext_addr = m->ext.addr;
	spec.ext_port = m->ext.port;
	rc = sp_session_open(nat, rt, &spec, now, sidx);
	if (rc != SP_NAT_OK) {
		/* a mapping that never carried a session is not logged */
		if (fresh)
			sp_mapping_free(nat, spec.mapping, now);
		return rc;
	}
	if (fresh)
		sp_mapping_event(nat, SP_EVENT_CREATED, m, now);
	return SP_NAT_OK;
}

/* The session a DNAT rule opens for key: to its target, 1:1 by prefix or
 * to one address, its port rewritten or kept. */
static void
dnat_spec(const struct qns_rule *rule, const struct sp_flow_key *key,
	  struct sp_session_spec *spec)
{
	*spec = (struct sp_session_spec){
		.proto = key->proto, .origin = SP_ORIGIN_DNAT,
		.rule_id = rule->id, .mapping = SP_NONE,
		.ext_addr = be32toh(key->dst), .ext_port = be16toh(key->dport),
		.rem_addr = be32toh(key->src), .rem_port = be16toh(key->sport),
	};
	sp_dnat_target(rule, spec->ext_addr, spec->ext_port, &spec->int_addr,
		       &spec->int_port);
}

/* A new flow from outside on mapping midx, if its filtering mode lets the
 * remote in (RFC 4787 sec. 5). */
static int
inbound_flow(struct sp_nat *nat, const struct sp_runtime *rt,
	     const struct sp_flow_key *key, uint32_t midx, uint32_t now,
	     uint32_t *sidx)
{
	const struct sp_mapping *m = &nat->mappings[midx];
	struct sp_session_spec spec = {
		.proto = key->proto, .origin = SP_ORIGIN_INBOUND,
		.rule_id = 0, .mapping = midx,
		.int_addr = m->int_addr, .int_port = m->int_port,
		.ext_addr = m->ext.addr, .ext_port = m->ext.port,
		.rem_addr = be32toh(key->src), .rem_port = be16toh(key->sport),
	};

	switch (rt->filtering[m->pi]) {
	case SP_FILTER_EIM:
		break;
	case SP_FILTER_ADDR:
		if (!sp_mapping_has_remote(nat, midx, spec.rem_addr))
			return SP_CNT_drop_filtered;
		break;
	default:
		/* the one allowed 5-tuple already has its keys */
		return SP_CNT_drop_filtered;
	}
	if (sp_host_limit_reached(nat, rt, m->int_addr, now))
		return SP_CNT_drop_session_limit;
	return sp_session_open(nat, rt, &spec, now, sidx);
}

int
sp_nat_inbound(struct sp_nat *nat, const struct sp_runtime *rt,
	       const struct sp_flow_key *key, uint8_t tcp_flags, uint32_t now,
	       int check_owner, uint32_t *sidx, unsigned *owner)
{
	uint32_t dst = be32toh(key->dst);
	uint16_t dport = be16toh(key->dport);
	const struct qns_rule *rule;
	uint32_t midx;

	if (existing(nat, key, sidx))
		return SP_NAT_OK;
	rule = qns_lookup_kind(nat->shared.qns, QNS_DNAT, key->proto, dst,
			       dport);
	if (rule != NULL && SP_ACT_KIND(rule->user) == SP_ACT_DNAT) {
		struct sp_session_spec spec;

		dnat_spec(rule, key, &spec);
		/* A DNAT session lives with its inside host (rss.h). */
		if (check_owner && nat->n_workers > 1 &&
		    elsewhere(nat, sp_owner_inside(nat->shared.rss,
						   spec.int_addr), owner))
			return SP_NAT_HANDOFF;
		if (!opens_session(key, tcp_flags))
			return SP_CNT_drop_rst_no_session;
		if (sp_host_limit_reached(nat, rt, spec.int_addr, now))
			return SP_CNT_drop_session_limit;
		return sp_session_open(nat, rt, &spec, now, sidx);
	}
	if (check_owner && nat->n_workers > 1 &&
	    elsewhere(nat, sp_owner_outside(nat->shared.rss, dst, dport), owner))
		return SP_NAT_HANDOFF;
	if (!opens_session(key, tcp_flags))
		return SP_CNT_drop_rst_no_session;
	if (sp_mapping_find(nat, 1, key->proto, dst, dport, &midx) == NULL)
		return SP_CNT_drop_unsolicited;
	return inbound_flow(nat, rt, key, midx, now, sidx);
}

unsigned
sp_nat_owner_external(const struct sp_nat *nat, uint8_t proto, uint32_t addr,
		      uint16_t port)
{
	const struct qns_rule *rule =
		qns_lookup_kind(nat->shared.qns, QNS_DNAT, proto, addr, port);

	if (rule != NULL && SP_ACT_KIND(rule->user) == SP_ACT_DNAT) {
		uint32_t to;
		uint16_t to_port;

		sp_dnat_target(rule, addr, port, &to, &to_port);
		return sp_owner_inside(nat->shared.rss, to);
	}
	return sp_owner_outside(nat->shared.rss, addr, port);
}

void
sp_nat_prefetch_miss(const struct sp_nat *nat, const struct sp_flow_key *key,
		     int outside, unsigned stage)
{
	const struct sp_hix *ix = outside ? &nat->map_ext : &nat->map_int;
	uint32_t hash = outside ?
		sp_endpoint_hash(ix, key->proto, be32toh(key->dst),
				 be16toh(key->dport)) :
		sp_endpoint_hash(ix, key->proto, be32toh(key->src),
				 be16toh(key->sport));
	uint32_t first;

	if (stage == 0) {
		sp_hix_prefetch(ix, hash);
		return;
	}
	first = sp_hix_first(ix, hash);
	if (first != SP_NONE)
		__builtin_prefetch(&nat->mappings[first]);
}
