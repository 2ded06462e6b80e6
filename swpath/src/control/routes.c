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
 * changes the generation: every session that cached the slot looks its
 * route up again at its next packet (dataplane/fwd.h sp_session_route). A
 * new prefix moves the route it narrows to a new slot the same way, so
 * that sessions towards the prefix find it. The slot is reused after a
 * second grace period (a worker may still be sending by it), oldest first.
 * rte_lpm frees its own tbl8 groups through the same RCU
 * (rte_lpm_rcu_qsbr_add).
 *
 * Generations come round (eight, in three bits of the session:
 * core/session.h), so a slot is given a generation again only once no
 * session can still hold it: a stale one is forgotten at the timer wheel's
 * next look at its session (core/table.h sp_session_route_recheck), and
 * every session has been looked at once each worker's wheel_time is
 * SP_WHEEL_RECHECK_MS (and a wheel slot) past the moment the slot left it.
 * Without that, eight prefixes added under the default route would bring
 * its slot back to the generation idle sessions cached, and they would go
 * on leaving by the default route.
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
	uint8_t gen;                    /* the generation it left */
} retired[SP_MAX_ROUTES];
static unsigned retired_head, n_retired;
static uint16_t free_slot[SP_MAX_ROUTES];
static unsigned free_head, n_free;
/* When each slot left each generation (sp_now_ms, once no worker could
 * still cache it), for the generations in left_mask. */
static uint32_t left_ms[SP_MAX_ROUTES][SP_ROUTE_GENS];
static uint8_t left_mask[SP_MAX_ROUTES];

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

/* Whether every worker's timer wheel has looked at each of its sessions
 * since t (sp_now_ms): a session looked at before t waits in a wheel slot
 * at most SP_WHEEL_RECHECK_MS on, and wheel_time has passed every slot the
 * wheel emptied (core/table.h). A wheel not given the generations forgets
 * nothing, so it is never past. */
static bool
wheels_past(uint32_t t)
{
	const int32_t after = (int32_t)(SP_WHEEL_RECHECK_MS +
					(1u << SP_WHEEL_SLOT_SHIFT));

	for (unsigned i = 0; i < sp.n_workers; i++) {
		const struct sp_nat *nat = &sp.workers[i]->nat;
		/* the worker's own field, read as the counters are */
		uint32_t w = __atomic_load_n(&nat->wheel_time, __ATOMIC_RELAXED);

		if (nat->route_gen != sp.route_gen || (int32_t)(w - t) <= after)
			return false;
	}
	return true;
}

/* The generation slot takes when its route next leaves: one it never had,
 * else the one it left longest ago if no session can still hold that; -1
 * when none can be given yet. */
static int
next_gen(uint16_t slot)
{
	uint8_t cur = sp.route_gen[slot];
	int oldest = -1;

	for (unsigned g = 0; g < SP_ROUTE_GENS; g++) {
		if (g == cur)
			continue;
		if (!(left_mask[slot] & 1u << g))
			return (int)g;
		if (oldest < 0 ||
		    (int32_t)(left_ms[slot][g] - left_ms[slot][oldest]) < 0)
			oldest = (int)g;
	}
	return oldest >= 0 && wheels_past(left_ms[slot][oldest]) ? oldest : -1;
}

/* Slot has left gen, and no worker caches (slot, gen) from here on: the
 * grace period after the change has passed. */
static void
left(uint16_t slot, uint8_t gen)
{
	left_ms[slot][gen] = sp_now_ms();
	left_mask[slot] |= (uint8_t)(1u << gen);
}

static void
reclaim(void)
{
	while (n_retired != 0 &&
	       rte_rcu_qsbr_check(sp.rcu, retired[retired_head].token,
				  false) == 1) {
		uint16_t slot = retired[retired_head].slot;

		left(slot, retired[retired_head].gen);
		free_slot[(free_head + n_free++) % SP_MAX_ROUTES] = slot;
		retired_head = (retired_head + 1) % SP_MAX_ROUTES;
		n_retired--;
	}
}

/* A slot for a new route: the one freed longest ago that has a generation
 * to take when it leaves again (the others rest at the back), else one
 * never used; -1 when every slot is in use or waiting for the workers. */
static int
slot_take(void)
{
	reclaim();
	for (unsigned k = n_free; k > 0; k--) {
		uint16_t slot = free_slot[free_head];

		free_head = (free_head + 1) % SP_MAX_ROUTES;
		n_free--;
		if (next_gen(slot) >= 0)
			return slot;
		free_slot[(free_head + n_free++) % SP_MAX_ROUTES] = slot;
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

/* Writes route r into slot and puts it in the table, over any route of
 * its prefix. */
static int
publish(uint16_t slot, const struct sp_route *r)
{
	sp.routes[slot] = *r;
	sp.routes[slot].live = 1;
	if (r->prefix.len == 0) {
		__atomic_store_n(&sp.default_route, slot, __ATOMIC_RELEASE);
		return 0;
	}
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return rte_lpm_add(sp.lpm, r->prefix.addr, r->prefix.len, slot);
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

/* Every session that cached slot looks its route up again, once no worker
 * still holds what a lookup of the table before the change answered. */
static void
step(int slot)
{
	int next = next_gen((uint16_t)slot);

	/* slot_take saw one when it gave the slot, and more only come with
	 * time; a slot from start-up has left none */
	if (next < 0)
		next = (sp.route_gen[slot] + 1) % SP_ROUTE_GENS;
	rte_rcu_qsbr_synchronize(sp.rcu, RTE_QSBR_THRID_INVALID);
	__atomic_store_n(&sp.route_gen[slot], (uint8_t)next, __ATOMIC_RELEASE);
}

/* Slot's route is out of the table (replaced, moved, or its prefix
 * deleted): its sessions look again, and it is reused later. */
static void
retire(uint16_t slot)
{
	uint8_t gen = sp.route_gen[slot];
	unsigned at;

	sp.routes[slot].live = 0;
	step(slot);
	at = (retired_head + n_retired++) % SP_MAX_ROUTES;
	retired[at].slot = slot;
	retired[at].gen = gen;
	retired[at].token = rte_rcu_qsbr_start(sp.rcu);
}

static bool
route_same(const struct sp_route *a, const struct sp_route *b)
{
	return same_prefix(&a->prefix, &b->prefix) && a->iface == b->iface &&
	       a->has_via == b->has_via && (!a->has_via || a->via == b->via) &&
	       a->source == b->source && a->connected == b->connected;
}

static int
table_full(const struct sp_route *r, char *err, size_t errlen)
{
	char ip[16];

	return sp_fail(err, errlen,
		       "route %s/%u: the route table is full (%d slots, %u waiting for the workers' grace period, %u for their timer wheels, up to %u s); try again",
		       sp_ip_str(r->prefix.addr, ip), r->prefix.len,
		       SP_MAX_ROUTES, n_retired, n_free,
		       SP_WHEEL_RECHECK_MS / 1000 + 1);
}

/* r in the table at run time, in place of its prefix's route if any; a
 * new prefix moves the route it narrows to a slot of its own too. */
static int
route_set(const struct sp_route *r, char *err, size_t errlen)
{
	int old = find_route(&r->prefix);
	int cover = old < 0 ? covering(&r->prefix) : -1;
	int slot, moved = -1;
	char ip[16];

	if (old >= 0 && route_same(&sp.routes[old], r))
		return 0;
	slot = slot_take();
	if (slot < 0)
		return table_full(r, err, errlen);
	if (cover >= 0 && (moved = slot_take()) < 0) {
		int rc = table_full(r, err, errlen);

		slot_give_back((uint16_t)slot);
		return rc;
	}
	if (publish((uint16_t)slot, r) < 0) {
		sp.routes[slot].live = 0;
		slot_give_back((uint16_t)slot);
		if (moved >= 0)
			slot_give_back((uint16_t)moved);
		return sp_fail(err, errlen, "route %s/%u: rte_lpm: %s",
			       sp_ip_str(r->prefix.addr, ip), r->prefix.len,
			       rte_strerror(rte_errno));
	}
	if (old >= 0) {
		retire((uint16_t)old);
	} else if (moved >= 0) {
		/* the same route, a new slot (after r is in the table, so that
		 * a lookup between the two finds r or the old slot) */
		struct sp_route c = sp.routes[cover];

		if (publish((uint16_t)moved, &c) == 0) {
			retire((uint16_t)cover);
		} else {
			/* rte_lpm_add over a prefix it holds reuses its tbl8
			 * groups, so this is not seen; were it, the route
			 * stays in its slot and its sessions look again */
			uint8_t gen = sp.route_gen[cover];

			sp.routes[moved].live = 0;
			slot_give_back((uint16_t)moved);
			step(cover);
			rte_rcu_qsbr_synchronize(sp.rcu, RTE_QSBR_THRID_INVALID);
			left((uint16_t)cover, gen);
		}
	}
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
