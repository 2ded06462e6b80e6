/* SPDX-License-Identifier: Apache-2.0 */
/* Pools and rules (rules.h). Control thread only. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "control/rules.h"
#include "control/publish.h"
#include "core/rule.h"
#include "dataplane/sp.h"
#include "qns.h"

static int
pool_by_name(const char *name)
{
	for (unsigned i = 0; i < sp.n_pools; i++)
		if (!sp.pools[i]->internal && strcmp(sp.pools[i]->name, name) == 0)
			return (int)i;
	return -1;
}

static int
pool_add(struct sp_pool *pool)
{
	pool->index = (uint16_t)sp.n_pools;
	__atomic_store_n(&sp.pools[sp.n_pools], pool, __ATOMIC_RELEASE);
	sp.n_pools++;
	return pool->index;
}

static int
pool_overlap_check(const char *name, const struct sp_prefix *pfx,
		   unsigned n, uint16_t lo, uint16_t hi, char *err,
		   size_t errlen)
{
	char a[16], b[16];

	for (unsigned i = 0; i < sp.n_pools; i++) {
		const struct sp_pool *p = sp.pools[i];

		if (hi < p->port_min || p->port_max < lo)
			continue;
		for (unsigned j = 0; j < n; j++)
			for (unsigned k = 0; k < p->n_prefixes; k++)
				if (sp_prefixes_overlap(&pfx[j], &p->prefixes[k]))
					return sp_fail(err, errlen,
						    "pool %s: %s/%u overlaps pool '%s' (%s/%u) on ports %u-%u",
						    name, sp_ip_str(pfx[j].addr, a),
						    pfx[j].len, p->name,
						    sp_ip_str(p->prefixes[k].addr, b),
						    p->prefixes[k].len,
						    lo > p->port_min ? lo : p->port_min,
						    hi < p->port_max ? hi : p->port_max);
	}
	return 0;
}

int
sp_apply_pool(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	      size_t errlen)
{
	const struct sp_cmd_pool *c = &cmd->u.pool;
	struct sp_pool *pool;

	if (pool_by_name(c->name) >= 0)
		return sp_fail(err, errlen, "pool %s: name already used", c->name);
	if (sp.n_pools == SP_MAX_POOLS)
		return sp_fail(err, errlen, "pool %s: more than %d pools", c->name,
			    SP_MAX_POOLS);
	for (unsigned i = 0; i < c->n_prefixes; i++)
		for (unsigned j = 0; j < i; j++)
			if (sp_prefixes_overlap(&c->prefixes[i], &c->prefixes[j]))
				return sp_fail(err, errlen,
					    "pool %s: its prefixes overlap", c->name);
	if (pool_overlap_check(c->name, c->prefixes, c->n_prefixes,
			       c->port_min, c->port_max, err, errlen) < 0)
		return -1;
	pool = sp_pool_create(&(struct sp_pool_params){
				      .name = c->name, .prefixes = c->prefixes,
				      .n_prefixes = c->n_prefixes,
				      .port_min = c->port_min,
				      .port_max = c->port_max,
				      .policy = c->policy, .rss = &sp.rss,
				      .n_workers = sp.n_workers,
				      .env = &sp_dpdk_env,
			      }, err, errlen);
	if (pool == NULL)
		return -1;
	pool_add(pool);
	return sp_runtime_changed();
}

static const char *
name_of_address(uint32_t addr, char *name)
{
	char ip[16];

	snprintf(name, SP_NAME_MAX, "to-%s", sp_ip_str(addr, ip));
	return name;
}

/* The pool behind SNAT 'to A': one per address, shared by its rules. */
static int
pool_for_address(uint32_t addr, char *err, size_t errlen)
{
	struct sp_prefix p = { .addr = addr, .len = 32 };
	struct sp_pool *pool;
	char name[SP_NAME_MAX];

	for (unsigned i = 0; i < sp.n_pools; i++)
		if (sp.pools[i]->internal && sp.pools[i]->addrs[0] == addr)
			return (int)i;
	/* its ports 1024-65535 must not be another pool's (RFC 4787 REQ-3) */
	if (pool_overlap_check(name_of_address(addr, name), &p, 1, 1024, 65535,
			       err, errlen) < 0)
		return -1;
	if (sp.n_pools == SP_MAX_POOLS)
		return sp_fail(err, errlen, "more than %d pools", SP_MAX_POOLS);
	/* the default [[pool]] policy (README.md): parity kept, port not */
	pool = sp_pool_create(&(struct sp_pool_params){
				      .name = name, .prefixes = &p,
				      .n_prefixes = 1, .port_min = 1024,
				      .port_max = 65535,
				      .policy = { .preserve_parity = true },
				      .internal = 1, .rss = &sp.rss,
				      .n_workers = sp.n_workers,
				      .env = &sp_dpdk_env,
			      }, err, errlen);
	if (pool == NULL)
		return -1;
	return pool_add(pool);
}

int
sp_apply_rule_add(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		  size_t errlen)
{
	const struct sp_cmd_rule *c = &cmd->u.rule;
	struct qns_rule r = {
		.id = c->id,
		.prefix = c->prefix.addr,
		.port = c->port,
		.plen = c->prefix.len,
		.proto = c->proto,
		.kind = c->kind,
		.has_port = c->has_port,
	};
	int rc;

	if (qns_get(sp.qns, c->id) != NULL)
		return sp_fail(err, errlen, "rule %u: id already used", c->id);
	if (c->kind == QNS_SNAT) {
		int pool;

		if (c->has_pool) {
			pool = pool_by_name(c->pool);
			if (pool < 0)
				return sp_fail(err, errlen, "rule %u: unknown pool '%s'",
					    c->id, c->pool);
		} else {
			char why[384], ip[16];

			pool = pool_for_address(c->to.addr, why, sizeof(why));
			if (pool < 0)
				return sp_fail(err, errlen, "rule %u: to %s: %s", c->id,
					    sp_ip_str(c->to.addr, ip), why);
		}
		r.user = sp_act_snat((uint16_t)pool);
	} else {
		r.user = sp_act_dnat(c->to.addr, c->to.len, c->has_to_port,
				     c->to_port);
	}
	rc = qns_add(sp.qns, &r);
	if (rc == -EEXIST)
		return sp_fail(err, errlen,
			    "rule %u: another rule has the same type, prefix, port and protocol",
			    c->id);
	if (rc == -ENOMEM)
		return sp_fail(err, errlen, "rule %u: out of memory", c->id);
	if (rc < 0)
		return sp_fail(err, errlen, "rule %u: refused (%s)", c->id,
			    strerror(-rc));
	return sp_runtime_changed();
}

int
sp_apply_rule_del(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		  size_t errlen)
{
	if (qns_del(sp.qns, cmd->u.rule_id) < 0)
		return sp_fail(err, errlen, "rule %u: no such rule",
			       cmd->u.rule_id);
	return sp_runtime_changed();
}

