/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The route table (routes.h). Control thread only.
 *
 * A change at run time never rewrites a slot a worker may be reading: the
 * new route takes a free slot and is published (rte_lpm_add replaces a
 * prefix's next hop in place; sp.default_route is one atomic store), then
 * the old slot is retired. Retiring waits for one grace period of the
 * workers' RCU, so that no worker still holds what a lookup of the old
 * table answered without having read the slot's generation too, and then
 * bumps the generation: every session that cached the slot looks its route
 * up again at its next packet (dataplane/fwd.h sp_session_route). A new
 * prefix bumps the generation of the route it narrows the same way (that
 * slot stays), so that sessions towards the prefix find it. The slot
 * is reused after a second grace period (a worker may still be sending by
 * it), oldest first. rte_lpm frees its own tbl8 groups through the same RCU
 * (rte_lpm_rcu_qsbr_add).
 */
#define ALLOW_EXPERIMENTAL_API /* rte_lpm_rcu_qsbr_add, 22.11 */

#include <stdbool.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_lpm.h>
#include <rte_rcu_qsbr.h>

#include "control/routes.h"
#include "dataplane/sp.h"
#include "util/text.h"

/* Slots retired, in order (tokens only grow), and slots free again. */
static struct {
	uint64_t token;                 /* rte_rcu_qsbr_start() at retirement */
	uint16_t slot;
} retired[SP_MAX_ROUTES];
static unsigned retired_head, n_retired;
static uint16_t free_slot[SP_MAX_ROUTES];
static unsigned free_head, n_free;

static bool
same_prefix(const struct sp_prefix *a, const struct sp_prefix *b)
{
	return a->addr == b->addr && a->len == b->len;
}

/* The live slot of prefix p, or -1. */
static int
find_route(const struct sp_prefix *p)
{
	for (unsigned r = 0; r < sp.n_routes; r++)
		if (sp.routes[r].live && same_prefix(&sp.routes[r].prefix, p))
			return (int)r;
	return -1;
}

/* Interface i's connected network, as a route. */
static struct sp_route
connected_route(unsigned i)
{
	const struct sp_iface *ifc = &sp.ifaces[i];

	return (struct sp_route){
		.prefix = { .addr = ifc->addr & sp_prefix_mask(ifc->plen),
			    .len = ifc->plen },
		.iface = (uint16_t)i,
		.connected = 1,
	};
}

/* The interface whose connected network is p, or -1. */
static int
connected_to(const struct sp_prefix *p)
{
	for (unsigned i = 0; i < sp.n_ifaces; i++) {
		struct sp_route c = connected_route(i);

		if (sp.ifaces[i].has_addr && same_prefix(&c.prefix, p))
			return (int)i;
	}
	return -1;
}

static void
reclaim(void)
{
	while (n_retired != 0 &&
	       rte_rcu_qsbr_check(sp.rcu, retired[retired_head].token,
				  false) == 1) {
		free_slot[(free_head + n_free++) % SP_MAX_ROUTES] =
			retired[retired_head].slot;
		retired_head = (retired_head + 1) % SP_MAX_ROUTES;
		n_retired--;
	}
}

/* A slot for a new route: one freed longest ago, else one never used; -1
 * when every slot is in use or waiting for the workers. */
static int
slot_take(void)
{
	uint16_t slot;

	reclaim();
	if (n_free != 0) {
		slot = free_slot[free_head];
		free_head = (free_head + 1) % SP_MAX_ROUTES;
		n_free--;
		return slot;
	}
	if (sp.n_routes < SP_MAX_ROUTES)
		return (int)sp.n_routes++;
	return -1;
}

static void
slot_give_back(uint16_t slot)
{
	free_slot[(free_head + n_free++) % SP_MAX_ROUTES] = slot;
}

/* Writes route r into slot (its generation kept) and puts it in the
 * table, over any route of its prefix. */
static int
publish(uint16_t slot, const struct sp_route *r)
{
	uint8_t gen = sp.routes[slot].gen;

	sp.routes[slot] = *r;
	sp.routes[slot].gen = gen;
	sp.routes[slot].live = 1;
	if (r->prefix.len == 0) {
		__atomic_store_n(&sp.default_route, slot, __ATOMIC_RELEASE);
		return 0;
	}
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return rte_lpm_add(sp.lpm, r->prefix.addr, r->prefix.len, slot);
}

/* Every session that cached slot looks its route up again: once no worker
 * still holds what a lookup of the table before the change answered. */
static void
bump(uint16_t slot)
{
	struct sp_route *r = &sp.routes[slot];

	rte_rcu_qsbr_synchronize(sp.rcu, RTE_QSBR_THRID_INVALID);
	__atomic_store_n(&r->gen, (uint8_t)((r->gen + 1) % SP_ROUTE_GENS),
			 __ATOMIC_RELEASE);
}

/* The live route a new prefix p narrows (the longest shorter one holding
 * it, the default route last): its sessions towards p must find p's. */
static int
covering(const struct sp_prefix *p)
{
	int best = -1;

	for (unsigned r = 0; r < sp.n_routes; r++) {
		const struct sp_route *c = &sp.routes[r];

		if (c->live && c->prefix.len < p->len &&
		    (p->addr & sp_prefix_mask(c->prefix.len)) == c->prefix.addr &&
		    (best < 0 || c->prefix.len > sp.routes[best].prefix.len))
			best = (int)r;
	}
	return best;
}

/* Slot's route is out of the table (replaced, or its prefix deleted). */
static void
retire(uint16_t slot)
{
	unsigned at;

	sp.routes[slot].live = 0;
	bump(slot);
	at = (retired_head + n_retired++) % SP_MAX_ROUTES;
	retired[at].slot = slot;
	retired[at].token = rte_rcu_qsbr_start(sp.rcu);
}

static bool
route_same(const struct sp_route *a, const struct sp_route *b)
{
	return same_prefix(&a->prefix, &b->prefix) && a->iface == b->iface &&
	       a->has_via == b->has_via && (!a->has_via || a->via == b->via) &&
	       a->source == b->source && a->connected == b->connected;
}

/* r in the table at run time, in place of its prefix's route if any. */
static int
route_set(const struct sp_route *r, char *err, size_t errlen)
{
	int old = find_route(&r->prefix);
	int slot;
	char ip[16];

	if (old >= 0 && route_same(&sp.routes[old], r))
		return 0;
	slot = slot_take();
	if (slot < 0)
		return sp_fail(err, errlen,
			       "route %s/%u: the route table is full (%d slots, %u waiting for the workers); try again",
			       sp_ip_str(r->prefix.addr, ip), r->prefix.len,
			       SP_MAX_ROUTES, n_retired);
	if (publish((uint16_t)slot, r) < 0) {
		sp.routes[slot].live = 0;
		slot_give_back((uint16_t)slot);
		return sp_fail(err, errlen, "route %s/%u: rte_lpm: %s",
			       sp_ip_str(r->prefix.addr, ip), r->prefix.len,
			       rte_strerror(rte_errno));
	}
	if (old >= 0)
		retire((uint16_t)old);
	else if ((old = covering(&r->prefix)) >= 0)
		bump((uint16_t)old);
	return 0;
}

int
sp_apply_route(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	       size_t errlen)
{
	const struct sp_cmd_route *c = &cmd->u.route;
	char ip[16];
	int iface = sp_iface_by_name(c->dev);
	struct sp_route r;

	if (iface < 0)
		return sp_fail(err, errlen, "route %s/%u: unknown interface '%s'",
			    sp_ip_str(c->prefix.addr, ip), c->prefix.len, c->dev);
	r = (struct sp_route){
		.prefix = c->prefix,
		.iface = (uint16_t)iface,
		.has_via = c->has_via,
		.via = c->via,
		.source = c->has_source ? rte_cpu_to_be_32(c->source) : 0,
	};
	if (sp.running)
		return route_set(&r, err, errlen);
	if (find_route(&c->prefix) >= 0)
		return sp_fail(err, errlen, "route %s/%u: already defined",
			    sp_ip_str(c->prefix.addr, ip), c->prefix.len);
	if (sp.n_routes >= SP_MAX_ROUTES - SP_MAX_IFACES)
		return sp_fail(err, errlen, "route: more than %d routes",
			    SP_MAX_ROUTES - SP_MAX_IFACES);
	r.live = 1;
	sp.routes[sp.n_routes++] = r;
	return 0;
}

int
sp_apply_route_del(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		   size_t errlen)
{
	const struct sp_prefix *p = &cmd->u.route.prefix;
	int old = find_route(p);
	int iface = connected_to(p);
	char ip[16];

	if (old < 0)
		return sp_fail(err, errlen, "route del %s/%u: no such route",
			       sp_ip_str(p->addr, ip), p->len);
	if (sp.routes[old].connected)
		return sp_fail(err, errlen,
			       "route del %s/%u: the connected network of %s (it goes with the interface's address)",
			       sp_ip_str(p->addr, ip), p->len,
			       sp.ifaces[sp.routes[old].iface].name);
	if (iface >= 0) {       /* the network comes back, as at start-up */
		struct sp_route c = connected_route((unsigned)iface);

		return route_set(&c, err, errlen);
	}
	if (p->len == 0)
		__atomic_store_n(&sp.default_route, SP_ROUTE_NONE,
				 __ATOMIC_RELEASE);
	else if (rte_lpm_delete(sp.lpm, p->addr, p->len) < 0)
		return sp_fail(err, errlen, "route del %s/%u: rte_lpm: %s",
			       sp_ip_str(p->addr, ip), p->len,
			       rte_strerror(rte_errno));
	retire((uint16_t)old);
	return 0;
}

int
sp_apply_routes(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		size_t errlen)
{
	unsigned rows = 0;

	sp_buf_printf(out, "[");
	for (unsigned i = 0; i < sp.n_routes; i++) {
		const struct sp_route *r = &sp.routes[i];
		char ip[16];

		if (!r->live)
			continue;
		sp_buf_printf(out, "%s\n {\"prefix\": \"%s/%u\", \"interface\": \"%s\", ",
			      rows++ ? "," : "", sp_ip_str(r->prefix.addr, ip),
			      r->prefix.len, sp.ifaces[r->iface].name);
		if (r->has_via)
			sp_buf_printf(out, "\"via\": \"%s\", ",
				      sp_ip_str(r->via, ip));
		else
			sp_buf_printf(out, "\"via\": null, ");
		if (r->source != 0)
			sp_buf_printf(out, "\"source\": \"%s\", ",
				      sp_ip_str(rte_be_to_cpu_32(r->source), ip));
		else
			sp_buf_printf(out, "\"source\": null, ");
		sp_buf_printf(out, "\"connected\": %s}",
			      r->connected ? "true" : "false");
	}
	sp_buf_printf(out, "%s]\n", rows ? "\n" : "");
	return 0;
}

int
sp_routes_build(char *err, size_t errlen)
{
	struct rte_lpm_config cfg = {
		.max_rules = SP_MAX_ROUTES,
		.number_tbl8s = 256,
	};
	struct rte_lpm_rcu_config rcu = { .v = sp.rcu };

	/* connected networks, unless a route names the same prefix */
	for (unsigned i = 0; i < sp.n_ifaces; i++) {
		struct sp_route c = connected_route(i);

		if (!sp.ifaces[i].has_addr || find_route(&c.prefix) >= 0)
			continue;
		c.live = 1;
		sp.routes[sp.n_routes++] = c;
	}
	sp.lpm = rte_lpm_create("sp_routes", SOCKET_ID_ANY, &cfg);
	if (sp.lpm == NULL)
		return sp_fail(err, errlen, "cannot create the route table: %s",
			    rte_strerror(rte_errno));
	/* tbl8 groups a run-time delete frees wait for the workers */
	if (sp.rcu != NULL && rte_lpm_rcu_qsbr_add(sp.lpm, &rcu) != 0)
		return sp_fail(err, errlen, "route table: RCU: %s",
			    rte_strerror(rte_errno));
	sp.default_route = SP_ROUTE_NONE;
	for (unsigned r = 0; r < sp.n_routes; r++) {
		const struct sp_route *rt = &sp.routes[r];

		if (rt->prefix.len == 0) {
			sp.default_route = (uint16_t)r;
			continue;
		}
		if (rte_lpm_add(sp.lpm, rt->prefix.addr, rt->prefix.len, r) < 0)
			return sp_fail(err, errlen, "cannot add route %u", r);
	}
	return 0;
}
