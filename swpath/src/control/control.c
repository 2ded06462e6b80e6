/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs of the command language (sp_apply, shared by the --commands file
 * and the control socket, as VPP's CLI and API call the same verb
 * functions): one function per verb, found in a table by the verb; the
 * interfaces, the run-time settings, logging, and what an operator or the
 * offload manager asks of the sessions here, pools and rules in rules.c,
 * routes and neighbours in routing.c, peers in peers.c. Control thread only.
 */
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "control/cmd_file.h"
#include "control/control.h"
#include "control/format.h"
#include "control/learn_quiet.h"
#include "control/peers.h"
#include "control/routes.h"
#include "control/routing.h"
#include "control/rules.h"
#include "control/publish.h"
#include "dataplane/sp.h"
#include "persist/event_export.h"
#include "persist/events.h"

/*
 * A port carries one untagged interface and any number of 802.1Q
 * sub-interfaces, each with its own VID: whether c's port has interfaces
 * already (*shared), or -1 when c cannot be one more of them.
 */
static int
port_shared(const struct sp_cmd_interface *c, bool *shared, char *err,
	    size_t errlen)
{
	*shared = false;
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
		*shared = true;
	}
	return 0;
}

static int
apply_interface(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		size_t errlen)
{
	const struct sp_cmd_interface *c = &cmd->u.iface;
	struct sp_iface *ifc;
	bool shared;

	if (sp.n_ifaces == SP_MAX_IFACES)
		return sp_fail(err, errlen, "interface %s: more than %d interfaces",
			    c->name, SP_MAX_IFACES);
	if (sp_iface_by_name(c->name) >= 0)
		return sp_fail(err, errlen, "interface %s: name already used",
			    c->name);
	if (c->port >= RTE_MAX_ETHPORTS || !rte_eth_dev_is_valid_port(c->port))
		return sp_fail(err, errlen,
			    "interface %s: DPDK port %u does not exist (%u ports; add one with --vdev or -a before --)",
			    c->name, c->port, rte_eth_dev_count_avail());
	if (port_shared(c, &shared, err, errlen) < 0)
		return -1;
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
apply_timeouts(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	       size_t errlen)
{
	for (unsigned t = 0; t < SP_TO_MAX; t++)
		if (cmd->u.timeouts.set & (1u << t))
			sp.timeout_s[t] = cmd->u.timeouts.seconds[t];
	return sp_runtime_changed();
}

static int
apply_filtering(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		size_t errlen)
{
	for (unsigned p = 0; p < SP_PI_MAX; p++)
		if (cmd->u.filtering.set & (1u << p))
			sp.filtering[p] = cmd->u.filtering.mode[p];
	return sp_runtime_changed();
}

static int
apply_limits(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	     size_t errlen)
{
	const struct sp_cmd_limits *c = &cmd->u.limits;

	if (c->set & (1u << SP_LIMIT_PORTS))
		sp.ports_per_host = c->ports_per_host;
	if (c->set & (1u << SP_LIMIT_SESSIONS))
		sp.sessions_per_host = c->sessions_per_host;
	return sp_runtime_changed();
}

static int
apply_icmp(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	   size_t errlen)
{
	const struct sp_cmd_icmp *c = &cmd->u.icmp;

	if (c->set & (1u << SP_ICMP_SET_UNREACHABLE))
		sp.icmp_on_exhaustion = c->unreachable_on_exhaustion;
	if (c->set & (1u << SP_ICMP_SET_RATE))
		sp.icmp_rate = c->rate;
	if (c->set & (1u << SP_ICMP_SET_BURST))
		sp.icmp_burst = c->burst;
	return sp_runtime_changed();
}

/* `offload after_packets N`: a run-time setting like the others (the
 * workers read it from the snapshot, core/runtime.h). */
static int
apply_offload(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	      size_t errlen)
{
	sp.after_packets = cmd->u.after_packets;
	return sp_runtime_changed();
}

/* `offload learn on|off` (start-up only): whether translated packets to the
 * switch carry the learn tag (core/learn.h). */
static int
apply_offload_learn(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		    size_t errlen)
{
	sp.learn = cmd->u.learn;
	return sp_runtime_changed();
}

/* `offload fresh` (run-time): the switch's learner tables are new (the
 * controller pushed it a program), so none of this instance's ports is
 * under a lease there: the quiet period of a start without state ends. */
static int
apply_offload_fresh(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		    size_t errlen)
{
	if (!sp_learn_quiet_end())
		return 0;
	return sp_runtime_changed();
}

/* `offload lease KIND class N seconds S` (start-up only). The switch has one
 * timeout per class, so two kinds may share a class only with its seconds. */
static int
apply_offload_lease(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		    size_t errlen)
{
	const struct sp_cmd_lease *c = &cmd->u.lease;

	for (unsigned k = 0; k < SP_TO_MAX; k++)
		if (k != c->kind && sp.lease_class[k] == c->lease_class &&
		    sp.class_s[c->lease_class] != c->seconds)
			return sp_fail(err, errlen,
				       "offload lease: class %u is %u seconds already, not %u",
				       c->lease_class, sp.class_s[c->lease_class],
				       c->seconds);
	sp.lease_class[c->kind] = c->lease_class;
	sp.class_s[c->lease_class] = c->seconds;
	return sp_runtime_changed();
}

/* The workers' event rings are made with them: start-up only. */
static int
apply_logging(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	      size_t errlen)
{
	const struct sp_cmd_logging *c = &cmd->u.logging;
	const struct sp_export_config export = {
		.syslog_server = c->syslog_server,
		.ipfix_collector = c->ipfix_collector,
		.syslog_enterprise = c->syslog_enterprise,
		.ipfix_domain = c->ipfix_domain,
		.nat_instance = c->nat_instance,
		.ipfix_sessions = c->ipfix_sessions,
	};

	if (sp_export_configure(&export, err, errlen) < 0)
		return -1;
	return sp_events_configure(c->events, c->file, err, errlen);
}

static int
apply_rules(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	    size_t errlen)
{
	sp_format_rules(out);
	return 0;
}

static struct sp_buf startup_lines;

void
sp_startup_keep(const struct sp_cmd_line *cmds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		sp_cmd_format(&cmds[i].cmd, &startup_lines);
		sp_buf_printf(&startup_lines, "\n");
	}
}

void
sp_startup_free(void)
{
	sp_buf_free(&startup_lines);
}

static int
apply_startup(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	      size_t errlen)
{
	if (startup_lines.len != 0)
		sp_buf_printf(out, "%.*s", (int)startup_lines.len,
			      startup_lines.p);
	return 0;
}

static int
apply_stats(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	    size_t errlen)
{
	sp_format_stats_json(out);
	return 0;
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

static int
apply_sessions(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	       size_t errlen)
{
	const struct sp_cmd_sessions *c = &cmd->u.sessions;

	if (c->action == SP_SESSIONS_LIST) {
		sp_format_sessions_json(out, &c->filter, c->limit);
		return 0;
	}
	return delete_sessions(&c->filter, out, err, errlen);
}

/*
 * The offload manager's word on a session goes to the worker that owns it,
 * its inside host's (rss.h); not by its id, which a session adopted from a
 * predecessor with another worker count keeps (session_store.h).
 */
static int
apply_session(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	      size_t errlen)
{
	struct sp_session_cmd c = cmd->u.session;
	struct sp_worker *w = sp.workers[sp.n_workers > 1 ?
		sp_owner_inside(&sp.rss, c.int_addr) : 0];

	/* In learn mode the switch learns sessions from their packets and
	 * forgets them by its leases: none is installed, idle or handed back
	 * by a writer, and swpath's own timer (with the lease) ends each. */
	if (sp.learn)
		return sp_fail(err, errlen,
			       "session: offload learn is on: the switch learns sessions itself");
	if (rte_ring_sp_enqueue_elem(w->cmd_ring, &c, sizeof(c)) != 0)
		return sp_fail(err, errlen, "session: worker %u is busy; try again",
			       w->index);
	return 0;
}

/* The connection becomes the stream (ctl_socket.c): never applied. */
static int
apply_subscribe(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		size_t errlen)
{
	return sp_fail(err, errlen,
		       "subscribe: only on the control socket, at run time");
}

typedef int (*verb_fn)(const struct sp_cmd *cmd, struct sp_buf *out,
		       char *err, size_t errlen);

static const verb_fn verbs[] = {
	[SP_CMD_INTERFACE] = apply_interface,
	[SP_CMD_ROUTE] = sp_apply_route,
	[SP_CMD_NEIGHBOR] = sp_apply_neighbor,
	[SP_CMD_POOL] = sp_apply_pool,
	[SP_CMD_RULE_ADD] = sp_apply_rule_add,
	[SP_CMD_RULE_DEL] = sp_apply_rule_del,
	[SP_CMD_TIMEOUTS] = apply_timeouts,
	[SP_CMD_FILTERING] = apply_filtering,
	[SP_CMD_LIMITS] = apply_limits,
	[SP_CMD_LOGGING] = apply_logging,
	[SP_CMD_ICMP] = apply_icmp,
	[SP_CMD_RULES] = apply_rules,
	[SP_CMD_SESSIONS] = apply_sessions,
	[SP_CMD_STATS] = apply_stats,
	[SP_CMD_SUBSCRIBE] = apply_subscribe,
	[SP_CMD_SESSION] = apply_session,
	[SP_CMD_OFFLOAD] = apply_offload,
	[SP_CMD_PEER] = sp_apply_peer,
	[SP_CMD_OFFLOAD_LEARN] = apply_offload_learn,
	[SP_CMD_OFFLOAD_LEASE] = apply_offload_lease,
	[SP_CMD_OFFLOAD_FRESH] = apply_offload_fresh,
	[SP_CMD_NEIGHBORS] = sp_apply_neighbors,
	[SP_CMD_NEIGHBOR_DEL] = sp_apply_neighbor_del,
	[SP_CMD_ROUTE_DEL] = sp_apply_route_del,
	[SP_CMD_ROUTES] = sp_apply_routes,
	[SP_CMD_STARTUP] = apply_startup,
};

int
sp_apply(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	 size_t errlen)
{
	enum sp_cmd_when when;

	if (cmd->verb == SP_CMD_NONE)
		return 0;
	if ((size_t)cmd->verb >= sizeof(verbs) / sizeof(verbs[0]) ||
	    verbs[cmd->verb] == NULL)
		return sp_fail(err, errlen, "unknown command");
	when = sp_cmd_when(cmd->verb);
	if (when == SP_WHEN_STARTUP && sp.running)
		return sp_fail(err, errlen, "%s: only at start-up",
			       sp_cmd_verb_name(cmd->verb));
	if (when == SP_WHEN_RUNTIME && !sp.running &&
	    cmd->verb != SP_CMD_SUBSCRIBE)
		return sp_fail(err, errlen, "%s: only at run time",
			       sp_cmd_verb_name(cmd->verb));
	return verbs[cmd->verb](cmd, out, err, errlen);
}
