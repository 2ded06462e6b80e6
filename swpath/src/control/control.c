/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs of the command language (sp_apply, shared by the --commands file
 * and the control socket), the RCU reclaim list, the run-time snapshot and
 * the neighbour table. Control thread only.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_hash.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "control/control.h"
#include "dataplane/fwd.h"
#include "dataplane/peer.h"
#include "dataplane/sp.h"
#include "persist/event_export.h"
#include "persist/events.h"
#include "persist/session_stream.h"
#include "qns.h"

/* -- RCU: retired memory waits for a grace period ----------------------- */

struct retired {
	uint64_t token;
	void *ptr;
};

static struct retired *retired;
static size_t n_retired, cap_retired;

void
sp_rcu_defer(void *ctx, void *ptr)
{
	RTE_SET_USED(ctx);
	if (!sp.running || sp.rcu == NULL) {
		free(ptr);
		return;
	}
	if (n_retired == cap_retired) {
		size_t cap = cap_retired ? 2 * cap_retired : 64;
		struct retired *r = realloc(retired, cap * sizeof(*r));

		if (r == NULL) {
			/* cannot queue it: wait out a grace period now */
			rte_rcu_qsbr_synchronize(sp.rcu, RTE_QSBR_THRID_INVALID);
			free(ptr);
			return;
		}
		retired = r;
		cap_retired = cap;
	}
	retired[n_retired].token = rte_rcu_qsbr_start(sp.rcu);
	retired[n_retired].ptr = ptr;
	n_retired++;
}

void
sp_rcu_reclaim(bool wait)
{
	size_t kept = 0;

	for (size_t i = 0; i < n_retired; i++) {
		if (!sp.running ||
		    rte_rcu_qsbr_check(sp.rcu, retired[i].token, wait) == 1)
			free(retired[i].ptr);
		else
			retired[kept++] = retired[i];
	}
	n_retired = kept;
}

int
sp_runtime_publish(void)
{
	struct sp_runtime *rt = sp_runtime_build();
	struct sp_runtime *old;

	if (rt == NULL)
		return -1;
	old = __atomic_exchange_n(&sp.rt, rt, __ATOMIC_ACQ_REL);
	if (old != NULL)
		sp_rcu_defer(NULL, old);
	return 0;
}

/* -- lookups by name -------------------------------------------------------- */

static int
iface_by_name(const char *name)
{
	for (unsigned i = 0; i < sp.n_ifaces; i++)
		if (strcmp(sp.ifaces[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int
pool_by_name(const char *name)
{
	for (unsigned i = 0; i < sp.n_pools; i++)
		if (!sp.pools[i]->internal && strcmp(sp.pools[i]->name, name) == 0)
			return (int)i;
	return -1;
}

static uint32_t
mask_of(uint8_t len)
{
	return len == 0 ? 0 : ~0u << (32 - len);
}

static int
prefixes_overlap(const struct sp_prefix *a, const struct sp_prefix *b)
{
	uint8_t len = a->len < b->len ? a->len : b->len;

	return (a->addr & mask_of(len)) == (b->addr & mask_of(len));
}

/* -- verbs ------------------------------------------------------------------ */

static int
apply_interface(const struct sp_cmd_interface *c, char *err, size_t errlen)
{
	struct sp_iface *ifc;
	bool shared = false;

	if (sp.running)
		return sp_fail(err, errlen, "interface: only at start-up");
	if (sp.n_ifaces == SP_MAX_IFACES)
		return sp_fail(err, errlen, "interface %s: more than %d interfaces",
			    c->name, SP_MAX_IFACES);
	if (iface_by_name(c->name) >= 0)
		return sp_fail(err, errlen, "interface %s: name already used",
			    c->name);
	if (c->port >= RTE_MAX_ETHPORTS || !rte_eth_dev_is_valid_port(c->port))
		return sp_fail(err, errlen,
			    "interface %s: DPDK port %u does not exist (%u ports; add one with --vdev or -a before --)",
			    c->name, c->port, rte_eth_dev_count_avail());
	/* A port carries one untagged interface and any number of 802.1Q
	 * sub-interfaces, each with its own VID. */
	for (unsigned i = 0; i < sp.n_ifaces; i++) {
		const struct sp_iface *o = &sp.ifaces[i];

		if (o->port != c->port)
			continue;
		if (o->vlan == c->vlan && c->vlan == 0)
			return sp_fail(err, errlen,
				    "interface %s: port %u already used by interface %s (give one of them a vlan)",
				    c->name, c->port, o->name);
		if (o->vlan == c->vlan)
			return sp_fail(err, errlen,
				    "interface %s: vlan %u of port %u already used by interface %s",
				    c->name, c->vlan, c->port, o->name);
		shared = true;
	}
	ifc = &sp.ifaces[sp.n_ifaces];
	memset(ifc, 0, sizeof(*ifc));
	snprintf(ifc->name, sizeof(ifc->name), "%s", c->name);
	ifc->port = c->port;
	ifc->zone = c->zone;
	ifc->vlan = c->vlan;
	ifc->slow_path = c->slow_path;
	ifc->mtu = c->mtu != 0 ? c->mtu : SP_MTU_DEFAULT;
	if (c->has_addr) {
		ifc->has_addr = 1;
		ifc->addr = c->addr.addr;
		ifc->addr_be = rte_cpu_to_be_32(c->addr.addr);
		ifc->plen = c->addr.len;
	}
	if (c->has_mac) {
		memcpy(ifc->mac.addr_bytes, c->mac, RTE_ETHER_ADDR_LEN);
		/* best effort: devices that cannot change it still receive
		 * the frames in promiscuous mode (a sub-interface's MAC is
		 * its own: the port keeps the first one's) */
		if (!shared)
			rte_eth_dev_default_mac_addr_set(c->port, &ifc->mac);
	} else if (rte_eth_macaddr_get(c->port, &ifc->mac) != 0) {
		return sp_fail(err, errlen, "interface %s: cannot read the MAC of port %u",
			    c->name, c->port);
	}
	sp.port_iface[c->port] = shared || c->vlan != 0 ?
		SP_IFACE_TRUNK : (int16_t)sp.n_ifaces;
	sp.n_ifaces++;
	return 0;
}

static int
apply_route(const struct sp_cmd_route *c, char *err, size_t errlen)
{
	char ip[16];
	int iface;

	if (sp.running)
		return sp_fail(err, errlen, "route: only at start-up");
	iface = iface_by_name(c->dev);
	if (iface < 0)
		return sp_fail(err, errlen, "route %s/%u: unknown interface '%s'",
			    sp_ip_str(c->prefix.addr, ip), c->prefix.len, c->dev);
	for (unsigned i = 0; i < sp.n_routes; i++)
		if (sp.routes[i].prefix.addr == c->prefix.addr &&
		    sp.routes[i].prefix.len == c->prefix.len)
			return sp_fail(err, errlen, "route %s/%u: already defined",
				    sp_ip_str(c->prefix.addr, ip), c->prefix.len);
	if (sp.n_routes >= SP_MAX_ROUTES - SP_MAX_IFACES)
		return sp_fail(err, errlen, "route: more than %d routes",
			    SP_MAX_ROUTES - SP_MAX_IFACES);
	sp.routes[sp.n_routes] = (struct sp_route){
		.prefix = c->prefix,
		.iface = (uint16_t)iface,
		.has_via = c->has_via,
		.via = c->via,
		.source = c->has_source ? rte_cpu_to_be_32(c->source) : 0,
	};
	sp.n_routes++;
	return 0;
}

int
sp_neigh_set(uint32_t addr, uint16_t iface, const uint8_t mac[6],
	     bool is_static)
{
	struct sp_neigh_key key = { .addr = addr, .iface = iface };
	uint64_t v = 0;
	void *data;
	uint32_t i;

	if (mac != NULL) {
		memcpy(&v, mac, RTE_ETHER_ADDR_LEN);
		v |= SP_NEIGH_VALID | (is_static ? SP_NEIGH_STATIC : 0);
	}
	if (rte_hash_lookup_data(sp.neigh_hash, &key, &data) >= 0) {
		struct sp_neigh *n = &sp.neigh[(uintptr_t)data];

		/* learning never overrides a configured neighbour */
		if (mac != NULL && (is_static || !(n->mac & SP_NEIGH_STATIC)))
			__atomic_store_n(&n->mac, v, __ATOMIC_RELAXED);
		return (int)(uintptr_t)data;
	}
	if (sp.n_neigh == SP_MAX_NEIGH)
		return -ENOSPC;
	i = sp.n_neigh;
	sp.neigh[i].addr = addr;
	sp.neigh[i].iface = iface;
	sp.neigh[i].last_request = 0;
	__atomic_store_n(&sp.neigh[i].mac, v, __ATOMIC_RELAXED);
	/* the lock-free hash publishes the entry with release semantics */
	if (rte_hash_add_key_data(sp.neigh_hash, &key, (void *)(uintptr_t)i) < 0)
		return -ENOSPC;
	sp.n_neigh++;
	return (int)i;
}

static int
apply_neighbor(const struct sp_cmd_neighbor *c, char *err, size_t errlen)
{
	char ip[16];
	int iface = iface_by_name(c->dev);

	if (iface < 0)
		return sp_fail(err, errlen, "neighbor %s: unknown interface '%s'",
			    sp_ip_str(c->addr, ip), c->dev);
	if (sp_neigh_set(c->addr, (uint16_t)iface, c->mac, true) < 0)
		return sp_fail(err, errlen, "neighbor %s: table full (%d)",
			    sp_ip_str(c->addr, ip), SP_MAX_NEIGH);
	return 0;
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
				if (prefixes_overlap(&pfx[j], &p->prefixes[k]))
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

static int
apply_pool(const struct sp_cmd_pool *c, char *err, size_t errlen)
{
	struct sp_pool *pool;

	if (pool_by_name(c->name) >= 0)
		return sp_fail(err, errlen, "pool %s: name already used", c->name);
	if (sp.n_pools == SP_MAX_POOLS)
		return sp_fail(err, errlen, "pool %s: more than %d pools", c->name,
			    SP_MAX_POOLS);
	for (unsigned i = 0; i < c->n_prefixes; i++)
		for (unsigned j = 0; j < i; j++)
			if (prefixes_overlap(&c->prefixes[i], &c->prefixes[j]))
				return sp_fail(err, errlen,
					    "pool %s: its prefixes overlap", c->name);
	if (pool_overlap_check(c->name, c->prefixes, c->n_prefixes,
			       c->port_min, c->port_max, err, errlen) < 0)
		return -1;
	pool = sp_pool_create(c->name, c->prefixes, c->n_prefixes, c->port_min,
			      c->port_max, &sp.rss, sp.n_workers, err, errlen);
	if (pool == NULL)
		return -1;
	pool->policy = c->policy;
	pool_add(pool);
	return sp.running ? sp_runtime_publish() : 0;
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
	pool = sp_pool_create(name, &p, 1, 1024, 65535, &sp.rss, sp.n_workers,
			      err, errlen);
	if (pool == NULL)
		return -1;
	pool->internal = 1;
	return pool_add(pool);
}

static int
apply_rule_add(const struct sp_cmd_rule *c, char *err, size_t errlen)
{
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

		if (c->target == SP_TARGET_POOL) {
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
	return sp.running ? sp_runtime_publish() : 0;
}

static int
apply_rule_del(uint32_t id, char *err, size_t errlen)
{
	if (qns_del(sp.qns, id) < 0)
		return sp_fail(err, errlen, "rule %u: no such rule", id);
	return sp.running ? sp_runtime_publish() : 0;
}

bool
sp_verb_is_json(enum sp_verb verb)
{
	return verb == SP_CMD_SESSIONS || verb == SP_CMD_STATS;
}

/* How long `sessions delete|flush` waits for every worker's answer. */
#define SP_DELETE_WAIT_MS 2000

/*
 * Each worker owns its sessions and deletes them itself, in its loop: the
 * request goes through its del_* fields (sp.h) and the answer is awaited.
 */
static int
delete_sessions(const struct sp_session_filter *f, struct sp_buf *out,
		char *err, size_t errlen)
{
	uint32_t req[RTE_MAX_LCORE], deleted = 0;

	for (unsigned w = 0; w < sp.n_workers; w++) {
		struct sp_worker *wk = sp.workers[w];

		wk->del_filter = *f;
		req[w] = wk->del_done + 1;
		__atomic_store_n(&wk->del_req, req[w], __ATOMIC_RELEASE);
	}
	for (unsigned w = 0; w < sp.n_workers; w++) {
		struct sp_worker *wk = sp.workers[w];
		unsigned waited = 0;

		while (__atomic_load_n(&wk->del_done, __ATOMIC_ACQUIRE) != req[w]) {
			if (waited++ == SP_DELETE_WAIT_MS)
				return sp_fail(err, errlen,
					       "sessions: worker %u did not answer in %u ms",
					       w, SP_DELETE_WAIT_MS);
			rte_delay_us_sleep(1000);
		}
		deleted += wk->del_count;
	}
	sp_buf_printf(out, "{\"deleted\": %u}\n", deleted);
	return 0;
}

int
sp_apply(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	 size_t errlen)
{
	switch (cmd->verb) {
	case SP_CMD_NONE:
		return 0;
	case SP_CMD_INTERFACE:
		return apply_interface(&cmd->u.iface, err, errlen);
	case SP_CMD_ROUTE:
		return apply_route(&cmd->u.route, err, errlen);
	case SP_CMD_NEIGHBOR:
		return apply_neighbor(&cmd->u.neigh, err, errlen);
	case SP_CMD_POOL:
		return apply_pool(&cmd->u.pool, err, errlen);
	case SP_CMD_RULE_ADD:
		return apply_rule_add(&cmd->u.rule, err, errlen);
	case SP_CMD_RULE_DEL:
		return apply_rule_del(cmd->u.rule_id, err, errlen);
	case SP_CMD_TIMEOUTS:
		for (unsigned t = 0; t < SP_TO_MAX; t++)
			if (cmd->u.timeouts.set & (1u << t))
				sp.timeout_s[t] = cmd->u.timeouts.seconds[t];
		return sp.running ? sp_runtime_publish() : 0;
	case SP_CMD_FILTERING:
		for (unsigned p = 0; p < SP_PI_MAX; p++)
			if (cmd->u.filtering.set & (1u << p))
				sp.filtering[p] = cmd->u.filtering.mode[p];
		return sp.running ? sp_runtime_publish() : 0;
	case SP_CMD_LIMITS:
		if (cmd->u.limits.set & 1)
			sp.ports_per_host = cmd->u.limits.ports_per_host;
		if (cmd->u.limits.set & 2)
			sp.sessions_per_host = cmd->u.limits.sessions_per_host;
		return sp.running ? sp_runtime_publish() : 0;
	case SP_CMD_LOGGING:
		/* the workers' event rings are made with them */
		if (sp.running)
			return sp_fail(err, errlen, "logging: only at start-up");
		if (sp_export_configure(cmd->u.logging.syslog_server,
					cmd->u.logging.ipfix_collector, err,
					errlen) < 0)
			return -1;
		return sp_events_configure(cmd->u.logging.events,
					   cmd->u.logging.file, err, errlen);
	case SP_CMD_ICMP:
		if (cmd->u.icmp.set & 1)
			sp.icmp_on_exhaustion =
				cmd->u.icmp.unreachable_on_exhaustion;
		if (cmd->u.icmp.set & 2)
			sp.icmp_rate = cmd->u.icmp.rate;
		if (cmd->u.icmp.set & 4)
			sp.icmp_burst = cmd->u.icmp.burst;
		return sp.running ? sp_runtime_publish() : 0;
	case SP_CMD_RULES:
		sp_format_rules(out);
		return 0;
	case SP_CMD_SESSIONS:
		if (!sp.running)
			return sp_fail(err, errlen, "sessions: only at run time");
		if (cmd->u.sessions.action == SP_SESSIONS_LIST) {
			sp_format_sessions_json(out, &cmd->u.sessions.filter,
						cmd->u.sessions.limit);
			return 0;
		}
		return delete_sessions(&cmd->u.sessions.filter, out, err,
				       errlen);
		return 0;
	case SP_CMD_STATS:
		if (!sp.running)
			return sp_fail(err, errlen, "stats: only at run time");
		sp_format_stats_json(out);
		return 0;
	case SP_CMD_SESSION: {
		/* to the worker that owns it, its inside host's (rss.h); not by
		 * its id, which a session adopted from a predecessor with
		 * another worker count keeps (session_store.h) */
		struct sp_cmd_session c = cmd->u.session;
		struct sp_worker *w;

		if (!sp.running)
			return sp_fail(err, errlen, "session: only at run time");
		w = sp.workers[sp.n_workers > 1 ?
				       sp_owner_inside(&sp.rss, c.int_addr) : 0];
		if (rte_ring_sp_enqueue_elem(w->cmd_ring, &c, sizeof(c)) != 0)
			return sp_fail(err, errlen,
				    "session: worker %u is busy; try again",
				    w->index);
		return 0;
	}
	case SP_CMD_OFFLOAD:
		/* read per packet by the workers; a byte, so no tearing */
		__atomic_store_n(&sp_stream_after_packets, cmd->u.after_packets,
				 __ATOMIC_RELAXED);
		return 0;
	case SP_CMD_PEER:
		return sp_peer_add(&cmd->u.peer, err, errlen);
	case SP_CMD_SUBSCRIBE:
		/* the connection becomes the stream (ctl_socket.c) */
		return sp_fail(err, errlen,
			    "subscribe: only on the control socket, at run time");
	}
	return sp_fail(err, errlen, "unknown command");
}

int
sp_routes_build(char *err, size_t errlen)
{
	struct rte_lpm_config cfg = {
		.max_rules = SP_MAX_ROUTES,
		.number_tbl8s = 256,
	};

	/* connected networks, unless a route names the same prefix */
	for (unsigned i = 0; i < sp.n_ifaces; i++) {
		const struct sp_iface *ifc = &sp.ifaces[i];
		struct sp_prefix p;
		bool known = false;

		if (!ifc->has_addr)
			continue;
		p.len = ifc->plen;
		p.addr = ifc->addr & mask_of(ifc->plen);
		for (unsigned r = 0; r < sp.n_routes; r++)
			if (sp.routes[r].prefix.addr == p.addr &&
			    sp.routes[r].prefix.len == p.len)
				known = true;
		if (known)
			continue;
		sp.routes[sp.n_routes++] = (struct sp_route){
			.prefix = p, .iface = (uint16_t)i, .connected = 1,
		};
	}
	sp.lpm = rte_lpm_create("sp_routes", SOCKET_ID_ANY, &cfg);
	if (sp.lpm == NULL)
		return sp_fail(err, errlen, "cannot create the route table: %s",
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

/* -- worker messages: the neighbour table --------------------------------- */

static void
neigh_resolve(uint32_t addr, uint16_t iface)
{
	int i = sp_neigh_set(addr, iface, NULL, false);
	uint32_t now = sp_now_ms();
	struct sp_neigh *n;
	struct rte_mbuf *m;

	if (i < 0)
		return;
	n = &sp.neigh[i];
	if ((n->mac & SP_NEIGH_VALID) ||
	    (n->last_request != 0 && now - n->last_request < 1000))
		return;
	n->last_request = now ? now : 1;
	m = sp_arp_request(iface, addr);
	if (m != NULL && rte_ring_mp_enqueue(sp.workers[0]->ctl_ring, m) != 0)
		rte_pktmbuf_free(m);
}

void
sp_neigh_messages(void)
{
	struct sp_msg msgs[64];
	unsigned n;

	do {
		n = rte_ring_sc_dequeue_burst_elem(sp.msg_ring, msgs,
						   sizeof(msgs[0]), 64, NULL);
		for (unsigned i = 0; i < n; i++) {
			if (msgs[i].type == SP_MSG_LEARN)
				sp_neigh_set(msgs[i].addr, msgs[i].iface,
					     msgs[i].mac, false);
			else if (msgs[i].type == SP_MSG_RESOLVE)
				neigh_resolve(msgs[i].addr, msgs[i].iface);
		}
	} while (n == 64);
}
