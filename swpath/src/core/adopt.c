/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sessions this process did not open, and offload mode's commands
 * (adopt.h).
 */
#include <errno.h>

#include "core/adopt.h"
#include "core/learn.h"
#include "core/lifecycle.h"
#include "core/mapping.h"
#include "core/rule.h"

const char *const sp_adopt_reasons[SP_ADOPT_MAX] = {
	[SP_ADOPT_OK] = "adopted",
	[SP_ADOPT_INVALID] = "not a valid record",
	[SP_ADOPT_NO_RULE] = "no rule gives it now",
	[SP_ADOPT_PORT] = "its port is not one of this worker's in the pool",
	[SP_ADOPT_CONFLICT] = "its key or port is taken",
	[SP_ADOPT_FULL] = "the table is full",
};

/* Whether the flow index has a key of rec in direction dir. */
static bool
key_taken(const struct sp_nat *nat, const struct sp_session *rec, unsigned dir)
{
	uint64_t w1, w0 = sp_session_key_words(rec, dir, &w1);

	for (uint32_t e = sp_hix_first(&nat->flows,
				       sp_hix_hash(&nat->flows, w0, w1));
	     e != SP_HIX_NONE; e = sp_hix_next(&nat->flows, e)) {
		uint64_t v1, v0 = sp_session_key_words(&nat->sessions[e >> 1],
						       e & 1, &v1);

		if (v0 == w0 && v1 == w1)
			return true;
	}
	return false;
}

/* The mapping an SNAT or inbound session rec needs: found, or made with
 * its port claimed from the pool of the rule that gives it now. */
static enum sp_adopt
adopt_mapping(struct sp_nat *nat, const struct sp_session *rec,
	      uint32_t *rule_id, uint32_t *midx)
{
	uint32_t int_addr = be32toh(rec->int_addr);
	uint16_t int_port = be16toh(rec->int_port);
	uint32_t ext_addr = be32toh(rec->ext_addr);
	uint16_t ext_port = be16toh(rec->ext_port);
	const struct qns_rule *rule;
	struct sp_mapping *m;
	struct sp_pool *pool;
	struct sp_alloc a;
	int rc;

	rule = qns_lookup_kind(nat->shared.qns, QNS_SNAT, rec->proto, int_addr,
			       int_port);
	if (rule == NULL)
		return SP_ADOPT_NO_RULE;
	pool = sp_nat_pool(nat, SP_ACT_POOL(rule->user));
	if (pool == NULL)
		return SP_ADOPT_NO_RULE;
	*rule_id = rec->origin == SP_ORIGIN_SNAT ? rule->id : 0;
	m = sp_mapping_find(nat, 0, rec->proto, int_addr, int_port, midx);
	if (m != NULL)
		return m->ext.addr == ext_addr && m->ext.port == ext_port ?
			SP_ADOPT_OK : SP_ADOPT_CONFLICT;
	if (nat->free_mapping == SP_NONE)
		return SP_ADOPT_FULL;
	rc = sp_pool_claim(pool, &nat->alloc, sp_proto_index(rec->proto),
			   int_addr, ext_addr, ext_port, &a);
	if (rc == -ERANGE)
		return SP_ADOPT_PORT;
	if (rc == -EEXIST)
		return SP_ADOPT_CONFLICT;
	if (rc < 0)
		return SP_ADOPT_FULL;
	*midx = sp_mapping_insert(nat, rec->proto, int_addr, int_port, &a);
	return SP_ADOPT_OK;
}

/* A DNAT session rec: the rule that still sends its external endpoint to
 * its internal one. */
static enum sp_adopt
adopt_dnat(const struct sp_nat *nat, const struct sp_session *rec,
	   uint32_t *rule_id)
{
	uint32_t ext_addr = be32toh(rec->ext_addr), to;
	uint16_t ext_port = be16toh(rec->ext_port), to_port;
	const struct qns_rule *rule =
		qns_lookup_kind(nat->shared.qns, QNS_DNAT, rec->proto,
				ext_addr, ext_port);

	if (rule == NULL || SP_ACT_KIND(rule->user) != SP_ACT_DNAT)
		return SP_ADOPT_NO_RULE;
	sp_dnat_target(rule, ext_addr, ext_port, &to, &to_port);
	if (to != be32toh(rec->int_addr) || to_port != be16toh(rec->int_port))
		return SP_ADOPT_NO_RULE;
	*rule_id = rule->id;
	return SP_ADOPT_OK;
}

static bool
record_valid(const struct sp_session *rec)
{
	return (rec->proto == IPPROTO_TCP || rec->proto == IPPROTO_UDP ||
		rec->proto == IPPROTO_ICMP) && rec->origin <= SP_ORIGIN_DNAT &&
	       rec->int_port != 0 && rec->ext_port != 0;
}

enum sp_adopt
sp_nat_adopt(struct sp_nat *nat, const struct sp_runtime *rt,
	     const struct sp_session *rec, uint32_t *sidx)
{
	uint32_t idx = nat->free_session, midx = SP_NONE, rule_id, next, seq;
	struct sp_session *s;
	enum sp_adopt r;

	if (!record_valid(rec))
		return SP_ADOPT_INVALID;
	if (idx == SP_NONE)
		return SP_ADOPT_FULL;
	if (key_taken(nat, rec, SP_DIR_IN2OUT) ||
	    key_taken(nat, rec, SP_DIR_OUT2IN))
		return SP_ADOPT_CONFLICT;
	r = rec->origin == SP_ORIGIN_DNAT ? adopt_dnat(nat, rec, &rule_id) :
					    adopt_mapping(nat, rec, &rule_id,
							  &midx);
	if (r != SP_ADOPT_OK)
		return r;
	s = &nat->sessions[idx];
	sp_session_seq_begin(s); /* the control thread may be listing them */
	next = s->next;
	seq = s->seq;
	*s = *rec;
	s->next = next;
	s->seq = seq;
	/* what this process decides anew: owned addresses, routes, rules */
	s->flags = (uint8_t)((rec->flags &
			      (SP_SESS_OFFLOADED | SP_SESS_SWITCH_IDLE)) |
			     (sp_rt_owned(rt, be32toh(rec->rem_addr)) ?
				      SP_SESS_HAIRPIN : 0));
	/* learn mode: the switch may hold it under any lease (learn.h) */
	s->lease = sp_learn_lease_adopted(rt, s);
	s->route[0] = s->route[1] = SP_ROUTE_UNSET;
	s->neigh[0] = s->neigh[1] = SP_NEIGH_NONE;
	s->rule_id = rule_id;
	s->mapping = midx;
	sp_session_link(nat, rt, idx);
	/* ids stay (the offload manager knows sessions by them): new ones
	 * start above every adopted one */
	if (rec->id / nat->n_workers >= nat->next_id)
		nat->next_id = rec->id / nat->n_workers + 1;
	sp_session_seq_end(s);
	*sidx = idx;
	return SP_ADOPT_OK;
}

enum sp_adopt
sp_nat_adopt_hold(struct sp_nat *nat, uint8_t proto, uint32_t ext_addr,
		  uint16_t ext_port, uint32_t end, uint32_t now)
{
	struct sp_mapping *m;
	uint32_t midx;

	if ((int32_t)(end - now) <= 0)
		return SP_ADOPT_OK;     /* the lease is over: nothing held */
	m = sp_mapping_find(nat, 1, proto, ext_addr, ext_port, &midx);
	if (m != NULL) {
		/* its port goes when its last session does: held till then */
		if (!m->leased || (int32_t)(end - m->lease_end) > 0)
			m->lease_end = end;
		m->leased = 1;
		return SP_ADOPT_OK;
	}
	for (unsigned i = 0; i < SP_MAX_POOLS; i++) {
		struct sp_pool *pool = sp_nat_pool(nat, (uint16_t)i);

		if (pool != NULL &&
		    sp_pool_hold(pool, &nat->alloc, sp_proto_index(proto),
				 ext_addr, ext_port, end, now) == 0)
			return SP_ADOPT_OK;
	}
	return SP_ADOPT_PORT;
}

/* The TCP flags that give a session the phase (sp_session_tcp_phase). */
static uint8_t
tcp_flags_of(enum sp_tcp_phase phase)
{
	const uint8_t open = SP_TCP_SYN_I2O | SP_TCP_SYN_O2I |
			     SP_TCP_SEEN_I2O | SP_TCP_SEEN_O2I;

	switch (phase) {
	case SP_TCP_ESTABLISHED:
		return open;
	case SP_TCP_CLOSING:
		return open | SP_TCP_FIN_I2O;
	case SP_TCP_RESET:
		return open | SP_TCP_RST;
	default:
		return SP_TCP_SYN_I2O | SP_TCP_SEEN_I2O;
	}
}

void
sp_nat_handback(struct sp_nat *nat, const struct sp_runtime *rt,
		const struct sp_session_cmd *c, uint32_t now)
{
	struct sp_session rec = {
		.int_addr = htobe32(c->int_addr),
		.ext_addr = htobe32(c->ext_addr),
		.rem_addr = htobe32(c->rem_addr),
		.int_port = htobe16(c->int_port),
		.ext_port = htobe16(c->ext_port),
		.rem_port = htobe16(c->rem_port),
		.proto = c->proto,
		.origin = c->origin,
		.tcp = c->proto == IPPROTO_TCP ?
			tcp_flags_of((enum sp_tcp_phase)c->tcp_phase) : 0,
		/* the switch forwards it: aged by its idle notifications */
		.flags = SP_SESS_OFFLOADED,
		/* announced now, below; never again by its packet count */
		.pkts = rt->after_packets,
		.last_seen = now,
		.created = now,
	};
	struct sp_session *s;
	uint32_t sidx;

	if (sp_nat_adopt(nat, rt, &rec, &sidx) != SP_ADOPT_OK) {
		SP_COUNT_ADD(nat->cnt[SP_CNT_handback_refused], 1);
		return;
	}
	s = &nat->sessions[sidx];
	/* an id of this process's: the manager learns it from the stream */
	sp_session_seq_begin(s);
	s->id = nat->next_id++ * nat->n_workers + nat->worker + 1;
	sp_session_seq_end(s);
	SP_COUNT_ADD(nat->cnt[SP_CNT_sessions_handed_back], 1);
	SP_COUNT_ADD(nat->cnt[SP_CNT_sessions_offloaded], 1);
	sp_nat_notify(nat, sidx, SP_SESSION_OPENED, now);
	sp_nat_notify(nat, sidx, SP_SESSION_ANNOUNCED, now);
}

/* The session c names: its inside-to-outside key, and its id. */
static int64_t
session_named(const struct sp_nat *nat, const struct sp_session_cmd *c)
{
	const struct sp_flow_key key = {
		.src = htobe32(c->int_addr),
		.dst = htobe32(c->rem_addr),
		.sport = htobe16(c->int_port),
		/* an ICMP query's key has its identifier as both ports */
		.dport = htobe16(c->proto == IPPROTO_ICMP ? c->int_port :
							    c->rem_port),
		.proto = c->proto,
	};
	int64_t found = sp_nat_lookup(nat, &key);

	if (found < 0 || (found & 1) != SP_DIR_IN2OUT ||
	    nat->sessions[found >> 1].id != c->id)
		return -1;
	return found >> 1;
}

void
sp_nat_session_cmd(struct sp_nat *nat, const struct sp_runtime *rt,
		   const struct sp_session_cmd *c, uint32_t now)
{
	int64_t found;
	uint32_t sidx;
	struct sp_session *s;

	if (c->action == SP_SESSION_CMD_ADOPT) {
		sp_nat_handback(nat, rt, c, now);
		return;
	}
	found = session_named(nat, c);
	if (found < 0) {
		SP_COUNT_ADD(nat->cnt[SP_CNT_offload_unknown], 1);
		return;
	}
	sidx = (uint32_t)found;
	s = &nat->sessions[sidx];
	switch (c->action) {
	case SP_SESSION_CMD_OFFLOAD:
		if (!(s->flags & SP_SESS_OFFLOADED))
			SP_COUNT_ADD(nat->cnt[SP_CNT_sessions_offloaded], 1);
		s->flags = (uint8_t)((s->flags | SP_SESS_OFFLOADED) &
				     ~SP_SESS_SWITCH_IDLE);
		break;
	case SP_SESSION_CMD_ONLOAD:
		/* software again: its packets refresh it from now on */
		s->flags &= (uint8_t)~(SP_SESS_OFFLOADED | SP_SESS_SWITCH_IDLE);
		s->last_seen = now;
		sp_nat_reschedule(nat, rt, sidx);
		break;
	case SP_SESSION_CMD_IDLE:
		s->flags |= SP_SESS_SWITCH_IDLE;
		/* due now unless swpath saw it within its timeout (a SYN, FIN
		 * or RST it took from the switch): the wheel decides */
		sp_nat_reschedule(nat, rt, sidx);
		break;
	}
	/* a successor must not expire what the switch still forwards */
	sp_nat_notify(nat, sidx, SP_SESSION_OFFLOAD, now);
}
