/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Mappings and hosts (mapping.h), with the allocator behind them and the
 * events RFC 6888 REQ-12 asks for.
 */
#include <errno.h>

#include "core/mapping.h"
#include "core/rule.h"

/* -- hosts ------------------------------------------------------------------ */

static inline uint32_t
host_hash(const struct sp_nat *nat, uint32_t addr)
{
	return sp_hix_hash(&nat->host_ix, addr, 0);
}

static struct sp_host *
host_find(const struct sp_nat *nat, uint32_t addr, uint32_t hash)
{
	for (uint32_t h = sp_hix_first(&nat->host_ix, hash); h != SP_NONE;
	     h = sp_hix_next(&nat->host_ix, h))
		if (nat->hosts[h].addr == addr)
			return &nat->hosts[h];
	return NULL;
}

/* One session more for addr: a host per session at most, so never full. */
void
sp_host_add_session(struct sp_nat *nat, uint32_t addr)
{
	uint32_t hash = host_hash(nat, addr);
	struct sp_host *h = host_find(nat, addr, hash);

	if (h == NULL) {
		uint32_t i = nat->free_host;

		h = &nat->hosts[i];
		nat->free_host = h->next_free;
		h->addr = addr;
		h->sessions = 0;
		h->limits_logged = 0;
		sp_hix_insert(&nat->host_ix, i, hash);
	}
	h->sessions++;
}

void
sp_host_remove_session(struct sp_nat *nat, uint32_t addr)
{
	uint32_t hash = host_hash(nat, addr);
	struct sp_host *h = host_find(nat, addr, hash);
	uint32_t i;

	if (h == NULL)
		return;
	h->limits_logged = 0;   /* below its limits again: log the next episode */
	if (--h->sessions != 0)
		return;
	i = (uint32_t)(h - nat->hosts);
	sp_hix_remove(&nat->host_ix, i, hash);
	h->next_free = nat->free_host;
	nat->free_host = i;
}

/*
 * A new flow of int_addr refused at a per-host limit (RFC 6888 REQ-4/5): one
 * quota event per episode, whatever the refused packets' rate.
 */
static void
limit_event(struct sp_nat *nat, uint8_t type, uint32_t int_addr,
	    uint32_t limit, uint32_t now)
{
	struct sp_host *h = host_find(nat, int_addr, host_hash(nat, int_addr));
	struct sp_event ev = {
		.time_ms = now, .int_addr = int_addr, .ext_addr = limit,
		.type = type,
	};

	if (h != NULL) {
		if (h->limits_logged & (1u << type))
			return;
		h->limits_logged |= 1u << type;
	}
	sp_nat_event(nat, &ev);
}

bool
sp_host_limit_reached(struct sp_nat *nat, const struct sp_runtime *rt,
		      uint32_t int_addr, uint32_t now)
{
	const struct sp_host *h;

	if (rt->sessions_per_host == 0)
		return false;
	h = host_find(nat, int_addr, host_hash(nat, int_addr));
	if (h == NULL || h->sessions < rt->sessions_per_host)
		return false;
	limit_event(nat, SP_EVENT_QUOTA_SESSIONS, int_addr,
		    rt->sessions_per_host, now);
	return true;
}

/* -- mappings --------------------------------------------------------------- */

struct sp_mapping *
sp_mapping_find(const struct sp_nat *nat, uint8_t side, uint8_t proto,
		uint32_t addr, uint16_t port, uint32_t *idx)
{
	const struct sp_hix *ix = side == 0 ? &nat->map_int : &nat->map_ext;

	for (uint32_t i = sp_hix_first(ix, sp_endpoint_hash(ix, proto, addr,
							     port));
	     i != SP_NONE; i = sp_hix_next(ix, i)) {
		const struct sp_mapping *m = &nat->mappings[i];

		if (m->proto == proto &&
		    (side == 0 ? m->int_addr == addr && m->int_port == port :
				 m->ext.addr == addr && m->ext.port == port)) {
			*idx = i;
			return &nat->mappings[i];
		}
	}
	return NULL;
}

bool
sp_mapping_has_remote(const struct sp_nat *nat, uint32_t midx,
		      uint32_t rem_addr)
{
	sp_be32_t rem = htobe32(rem_addr);

	for (uint32_t i = sp_hix_first(&nat->remotes,
				       sp_remote_hash(nat, midx, rem_addr));
	     i != SP_NONE; i = sp_hix_next(&nat->remotes, i))
		if (nat->sessions[i].mapping == midx &&
		    nat->sessions[i].rem_addr == rem)
			return true;
	return false;
}

uint32_t
sp_mapping_insert(struct sp_nat *nat, uint8_t proto, uint32_t int_addr,
		  uint16_t int_port, const struct sp_alloc *a)
{
	uint32_t idx = nat->free_mapping;
	struct sp_mapping *m = &nat->mappings[idx];

	nat->free_mapping = m->next_free;
	m->int_addr = int_addr;
	m->int_port = int_port;
	m->proto = proto;
	m->pi = (uint8_t)sp_proto_index(proto);
	m->sessions = 0;
	m->leased = 0;
	m->ext = *a;
	sp_hix_insert(&nat->map_int, idx,
		      sp_endpoint_hash(&nat->map_int, proto, int_addr, int_port));
	sp_hix_insert(&nat->map_ext, idx,
		      sp_endpoint_hash(&nat->map_ext, proto, a->addr, a->port));
	SP_COUNT_ADD(nat->n_mappings, 1);
	return idx;
}

/*
 * A new flow found no port on a (its paired) pool address: RFC 8158's "NAT
 * ports exhausted", and "NAT addresses exhausted" when every address of a
 * configured pool is out, each once per episode (controller:
 * Nat._exhaustion_event).
 */
static void
exhaustion_event(struct sp_nat *nat, struct sp_pool *pool,
		 const struct sp_alloc *a, unsigned pi, uint8_t proto,
		 uint32_t now)
{
	struct sp_event ev = {
		.time_ms = now, .proto = proto, .ext_addr = a->addr,
		.int_addr = pool->internal ? 0 : (uint32_t)pool->index + 1,
		.type = SP_EVENT_PORTS_EXHAUSTED,
	};
	bool all;

	if (!sp_pool_mark_exhausted(pool, &nat->alloc, pi, a->addr_idx, &all))
		return;
	sp_nat_event(nat, &ev);
	if (all && !pool->internal) {
		ev.type = SP_EVENT_ADDRESSES_EXHAUSTED;
		ev.ext_addr = 0;
		sp_nat_event(nat, &ev);
	}
}

int
sp_mapping_new(struct sp_nat *nat, const struct sp_runtime *rt,
	       uint64_t action, const struct sp_flow_key *key, uint32_t now,
	       uint32_t *midx)
{
	uint32_t int_addr = be32toh(key->src);
	uint16_t int_port = be16toh(key->sport);
	struct sp_alloc_req req = {
		.int_addr = int_addr, .int_port = int_port,
		.pi = (uint8_t)sp_proto_index(key->proto),
		.quota = rt->ports_per_host, .now_ms = now,
		.reuse_ms = rt->reuse_ms,
	};
	struct sp_pool *pool;
	struct sp_alloc a;
	int rc;

	if (nat->free_mapping == SP_NONE)
		return SP_CNT_drop_table_full;
	/* learn mode, just started without the predecessor's sessions: the
	 * switch may still translate with any port under a lease of the
	 * previous run (control/learn_quiet.h), so none is handed out */
	if (__builtin_expect(rt->learn_quiet, 0))
		return SP_CNT_learn_quiet_refused;
	pool = sp_nat_pool(nat, SP_ACT_POOL(action));
	if (pool == NULL)
		return SP_CNT_drop_no_rule;
	rc = sp_pool_allocate(pool, &nat->alloc, &req, &a);
	if (rc == -EDQUOT) {
		limit_event(nat, SP_EVENT_QUOTA_PORTS, int_addr,
			    rt->ports_per_host, now);
		return SP_CNT_drop_quota_exceeded;
	}
	if (rc == -ENOSPC) {
		exhaustion_event(nat, pool, &a, req.pi, key->proto, now);
		return SP_CNT_drop_pool_exhausted;
	}
	if (rc < 0)
		return SP_CNT_drop_table_full;
	*midx = sp_mapping_insert(nat, key->proto, int_addr, int_port, &a);
	SP_COUNT_ADD(nat->cnt[SP_CNT_mappings_created], 1);
	return SP_NAT_OK;
}

void
sp_mapping_free(struct sp_nat *nat, uint32_t midx, uint32_t now)
{
	struct sp_mapping *m = &nat->mappings[midx];
	uint32_t hold = 0;

	if (m->leased && (int32_t)(m->lease_end - now) > 0)
		hold = m->lease_end - now;
	sp_hix_remove(&nat->map_int, midx,
		      sp_endpoint_hash(&nat->map_int, m->proto, m->int_addr,
				       m->int_port));
	sp_hix_remove(&nat->map_ext, midx,
		      sp_endpoint_hash(&nat->map_ext, m->proto, m->ext.addr,
				       m->ext.port));
	sp_pool_release(sp_nat_pool(nat, m->ext.pool), &nat->alloc, m->pi,
			m->int_addr, &m->ext, now, hold);
	m->proto = 0;
	m->next_free = nat->free_mapping;
	nat->free_mapping = midx;
	SP_COUNT_SUB(nat->n_mappings, 1);
	SP_COUNT_ADD(nat->cnt[SP_CNT_mappings_freed], 1);
}
