/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A session's life (lifecycle.h): open, TCP phase, the timer wheel, close.
 */
#include "core/lifecycle.h"
#include "core/mapping.h"

/* RFC 8158's NAT44 session create or delete, built only when the observer
 * asks for them (`logging ... ipfix_sessions true`): never by default, as
 * it carries the remote (RFC 6888 REQ-12). controller: Nat.on_session. */
static void
session_event(struct sp_nat *nat, uint8_t type, const struct sp_session *s,
	      uint32_t now)
{
	uint32_t when = nat->obs.session_events_when;
	struct sp_event ev;

	if (when == 0 || nat->obs.event == NULL || !sp_nat_listens(nat, when))
		return;
	ev = (struct sp_event){
		.time_ms = now, .type = type, .proto = s->proto,
		.int_addr = be32toh(s->int_addr),
		.int_port = be16toh(s->int_port),
		.ext_addr = be32toh(s->ext_addr),
		.ext_port = be16toh(s->ext_port),
		.rem_addr = be32toh(s->rem_addr),
		.rem_port = be16toh(s->rem_port),
	};
	nat->obs.event(nat->obs.ctx, &ev);
}

void
sp_session_link(struct sp_nat *nat, const struct sp_runtime *rt, uint32_t idx)
{
	struct sp_session *s = &nat->sessions[idx];

	nat->free_session = s->next;
	sp_hix_insert(&nat->flows, idx << 1 | SP_DIR_IN2OUT,
		      sp_session_hash(nat, s, SP_DIR_IN2OUT));
	sp_hix_insert(&nat->flows, idx << 1 | SP_DIR_OUT2IN,
		      sp_session_hash(nat, s, SP_DIR_OUT2IN));
	if (s->mapping != SP_NONE) {
		nat->mappings[s->mapping].sessions++;
		sp_hix_insert(&nat->remotes, idx,
			      sp_remote_hash(nat, s->mapping,
					     be32toh(s->rem_addr)));
	}
	sp_host_add_session(nat, be32toh(s->int_addr));
	SP_COUNT_ADD(nat->n_sessions, 1);
	sp_wheel_insert(nat, idx, s->last_seen + sp_session_timeout_ms(rt, s));
}

int
sp_session_open(struct sp_nat *nat, const struct sp_runtime *rt,
		const struct sp_session_spec *spec, uint32_t now,
		uint32_t *sidx)
{
	struct sp_session *s;
	uint32_t idx = nat->free_session;

	if (idx == SP_NONE)
		return SP_CNT_drop_table_full;
	s = &nat->sessions[idx];
	sp_session_seq_begin(s);
	s->proto = spec->proto;
	s->origin = spec->origin;
	s->tcp = 0;
	s->pkts = 0;
	s->lease = 0;
	s->flags = sp_rt_owned(rt, spec->rem_addr) ? SP_SESS_HAIRPIN : 0;
	s->int_addr = htobe32(spec->int_addr);
	s->int_port = htobe16(spec->int_port);
	s->ext_addr = htobe32(spec->ext_addr);
	s->ext_port = htobe16(spec->ext_port);
	s->rem_addr = htobe32(spec->rem_addr);
	s->rem_port = htobe16(spec->rem_port);
	s->route[0] = s->route[1] = SP_ROUTE_UNSET;
	s->neigh[0] = s->neigh[1] = SP_NEIGH_NONE;
	s->last_seen = now;
	s->created = now;
	s->rule_id = spec->rule_id;
	s->mapping = spec->mapping;
	s->id = nat->next_id++ * nat->n_workers + nat->worker + 1;
	sp_session_link(nat, rt, idx);
	SP_COUNT_ADD(nat->cnt[SP_CNT_sessions_created], 1);
	sp_session_seq_end(s);
	sp_nat_notify(nat, idx, SP_SESSION_OPENED, now);
	session_event(nat, SP_EVENT_SESSION_OPENED, s, now);
	/* learn mode: the switch learns it from its packets, no one installs
	 * it (core/learn.h) */
	if (rt->after_packets <= 1 && !rt->learn)
		sp_nat_notify(nat, idx, SP_SESSION_ANNOUNCED, now);
	*sidx = idx;
	return SP_NAT_OK;
}

void
sp_nat_tcp_changed(struct sp_nat *nat, uint32_t sidx, uint8_t before,
		   uint32_t now)
{
	const struct sp_session *s = &nat->sessions[sidx];
	struct sp_session old = { .proto = s->proto, .tcp = before };

	/* a successor times it out as what it is now */
	if (sp_session_tcp_phase(&old) != sp_session_tcp_phase(s))
		sp_nat_notify(nat, sidx, SP_SESSION_STATE, now);
}

void
sp_nat_reschedule(struct sp_nat *nat, const struct sp_runtime *rt,
		  uint32_t sidx)
{
	struct sp_session *s = &nat->sessions[sidx];

	sp_wheel_unlink(nat, sidx);
	sp_wheel_insert(nat, sidx, s->last_seen + sp_session_timeout_ms(rt, s));
}

/* Frees session sidx, off the wheel: the observer hears why first, then
 * its keys go, its host's count, and its mapping with its last session. */
static void
session_free(struct sp_nat *nat, uint32_t sidx, enum sp_session_event why,
	     uint32_t now)
{
	struct sp_session *s = &nat->sessions[sidx];

	sp_nat_notify(nat, sidx, why, now);
	session_event(nat, SP_EVENT_SESSION_CLOSED, s, now);
	sp_session_seq_begin(s);
	sp_hix_remove(&nat->flows, sidx << 1 | SP_DIR_IN2OUT,
		      sp_session_hash(nat, s, SP_DIR_IN2OUT));
	sp_hix_remove(&nat->flows, sidx << 1 | SP_DIR_OUT2IN,
		      sp_session_hash(nat, s, SP_DIR_OUT2IN));
	sp_host_remove_session(nat, be32toh(s->int_addr));
	if (s->mapping != SP_NONE) {
		struct sp_mapping *m = &nat->mappings[s->mapping];

		sp_hix_remove(&nat->remotes, sidx,
			      sp_remote_hash(nat, s->mapping,
					     be32toh(s->rem_addr)));
		if (--m->sessions == 0) {
			sp_mapping_event(nat, SP_EVENT_DELETED, m, now);
			sp_mapping_free(nat, s->mapping, now);
		}
	}
	s->proto = 0;
	s->next = nat->free_session;
	nat->free_session = sidx;
	SP_COUNT_SUB(nat->n_sessions, 1);
	sp_session_seq_end(s);
}

void
sp_nat_remove(struct sp_nat *nat, uint32_t sidx, enum sp_session_event why,
	      uint32_t now)
{
	sp_wheel_unlink(nat, sidx);
	session_free(nat, sidx, why, now);
}

/*
 * Learn mode: session s, which the switch learned under its lease, is being
 * deleted by an operator. The switch's entries are fixed leases it does not
 * give back: it may translate with s's external endpoint until s's last tag
 * + L (last_seen: a tagged packet refreshes it, and no later packet is
 * tagged without refreshing it). Handing the port to another flow before
 * then would put two flows on one external endpoint (RFC 4787 REQ-3, RFC
 * 6888 REQ-9), so its mapping keeps the latest such end and its port is
 * held until then when the mapping goes. The observer hears it too: a
 * successor process must hold the port as long (persist/session_store.h).
 */
static void
hold_for_lease(struct sp_nat *nat, const struct sp_runtime *rt,
	       const struct sp_session *s, uint32_t now)
{
	struct sp_mapping *m;
	uint32_t end;

	if (!rt->learn || s->lease == 0 || s->mapping == SP_NONE)
		return;
	m = &nat->mappings[s->mapping];
	end = s->last_seen + rt->class_ms[s->lease - 1];
	if (!m->leased || (int32_t)(end - m->lease_end) > 0)
		m->lease_end = end;
	m->leased = 1;
	if (nat->obs.held != NULL && sp_nat_listens(nat, nat->obs.held_when))
		nat->obs.held(nat->obs.ctx, s, end, now);
}

uint32_t
sp_nat_delete(struct sp_nat *nat, const struct sp_runtime *rt,
	      const struct sp_session_filter *f, uint32_t now)
{
	uint32_t deleted = 0;

	for (uint32_t i = 0; i < nat->max_sessions; i++) {
		const struct sp_session *s = &nat->sessions[i];

		if (s->proto == 0 || !sp_session_matches(s, f))
			continue;
		hold_for_lease(nat, rt, s, now);
		sp_nat_remove(nat, i, SP_SESSION_DELETED, now);
		deleted++;
	}
	SP_COUNT_ADD(nat->cnt[SP_CNT_sessions_deleted], deleted);
	return deleted;
}

unsigned
sp_nat_age(struct sp_nat *nat, const struct sp_runtime *rt, uint32_t now,
	   unsigned budget)
{
	unsigned expired = 0, steps = 0;
	uint32_t sidx;

	/* empty slots are cheap; bound them too after a long stall */
	while ((sidx = sp_wheel_pop_due(nat, rt, now, &budget, &steps)) !=
	       SP_NONE) {
		struct sp_session *s = &nat->sessions[sidx];

		if (__builtin_expect((s->flags & (SP_SESS_OFFLOADED |
						  SP_SESS_SWITCH_IDLE)) ==
				     SP_SESS_OFFLOADED, 0)) {
			/* the switch may be forwarding it: ask again later */
			sp_wheel_insert(nat, sidx,
					now + sp_session_timeout_ms(rt, s));
		} else {
			session_free(nat, sidx, SP_SESSION_EXPIRED, now);
			SP_COUNT_ADD(nat->cnt[SP_CNT_sessions_expired], 1);
			expired++;
		}
	}
	return expired;
}
