/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command language parser (swpath/src/control/cmd_parse.c, by the table
 * generated from swpath/spec/commands.toml): every verb, the error
 * messages, and the golden command files the controller writes (the .cmds
 * files in controller/tests/golden/): each line parses, and written back by
 * the table (cmd_format.c) is the very line, so every value the controller
 * writes is read as it meant it.
 */
#include <dirent.h>
#include <string.h>

#include "sp_test_util.h"

#include "control/cmd.h"
#include "control/cmd_file.h"
#include "control/cmd_table.h"
#include "control/format.h"
#include "core/session.h"

static const char *golden_dirs[] = {
	"../../controller/tests/golden/good",
	"../../controller/tests/golden/commands",
};

static struct sp_cmd
parse_ok(const char *line)
{
	struct sp_cmd cmd;
	char err[256] = "";

	if (sp_cmd_parse(line, &cmd, err, sizeof(err)) != 0)
		fail_msg("'%s': %s", line, err);
	return cmd;
}

static void
parse_err(const char *line, const char *expect)
{
	struct sp_cmd cmd;
	char err[256] = "";

	assert_int_equal(sp_cmd_parse(line, &cmd, err, sizeof(err)), -1);
	if (strstr(err, expect) == NULL)
		fail_msg("'%s': error '%s' lacks '%s'", line, err, expect);
}

static void
test_interface(void **state)
{
	struct sp_cmd c = parse_ok("interface in0 zone inside port 1 address 10.0.0.1/24 mac 02:00:00:00:00:01");

	(void)state;
	assert_int_equal(c.verb, SP_CMD_INTERFACE);
	assert_string_equal(c.u.iface.name, "in0");
	assert_int_equal(c.u.iface.zone, SP_ZONE_INSIDE);
	assert_int_equal(c.u.iface.port, 1);
	assert_true(c.u.iface.has_addr);
	assert_int_equal(c.u.iface.addr.addr, 0x0a000001);
	assert_int_equal(c.u.iface.addr.len, 24);
	assert_true(c.u.iface.has_mac);
	assert_int_equal(c.u.iface.mac[5], 1);
	c = parse_ok("interface out0 zone outside port 2");
	assert_int_equal(c.u.iface.zone, SP_ZONE_OUTSIDE);
	assert_false(c.u.iface.has_addr);
	parse_err("interface in0 zone middle port 1", "zone middle");
	parse_err("interface in0 zone inside", "missing port");
	parse_err("interface in0 zone inside port 512", "0..511");
	parse_err("interface in0 zone inside port 1 mac 03:00:00:00:00:01", "unicast");
	parse_err("interface in0 zone inside port 1 speed 10", "unknown word 'speed'");
	assert_int_equal(c.u.iface.mtu, 0); /* SP_MTU_DEFAULT when applied */
	c = parse_ok("interface out0 zone outside port 2 mtu 9000");
	assert_int_equal(c.u.iface.mtu, 9000);
	parse_err("interface out0 zone outside port 2 mtu 575", "mtu 575: must be 576..9216");
	parse_err("interface out0 zone outside port 2 mtu 9217", "576..9216");
	/* 802.1Q sub-interfaces; a slow-path link (offload mode) is one */
	assert_int_equal(c.u.iface.vlan, 0);
	assert_false(c.u.iface.slow_path);
	c = parse_ok("interface sp1 zone inside port 0 vlan 1 slow_path true");
	assert_int_equal(c.u.iface.vlan, 1);
	assert_true(c.u.iface.slow_path);
	c = parse_ok("interface t9 zone outside port 0 vlan 4094 slow_path false");
	assert_int_equal(c.u.iface.vlan, 4094);
	assert_false(c.u.iface.slow_path);
	parse_err("interface t0 zone inside port 0 vlan 0", "vlan 0: must be 1..4094");
	parse_err("interface t0 zone inside port 0 vlan 4095", "1..4094");
	parse_err("interface t0 zone inside port 0 slow_path yes", "slow_path yes: must be true or false");
	parse_err("interface t0 zone inside port 0 slow_path true", "slow_path needs a vlan");
}

/* Offload mode's word on one session: its id and inside-to-outside key. */
static void
test_session(void **state)
{
	struct sp_cmd c = parse_ok("session offload 12 tcp 10.0.0.15:40000 198.51.100.10:443");

	(void)state;
	assert_int_equal(c.verb, SP_CMD_SESSION);
	assert_int_equal(c.u.session.action, SP_SESSION_CMD_OFFLOAD);
	assert_int_equal(c.u.session.id, 12);
	assert_int_equal(c.u.session.proto, 6);
	assert_int_equal(c.u.session.int_addr, 0x0a00000f);
	assert_int_equal(c.u.session.int_port, 40000);
	assert_int_equal(c.u.session.rem_addr, 0xc633640a);
	assert_int_equal(c.u.session.rem_port, 443);
	c = parse_ok("session idle 1 icmp 10.0.0.2:7 8.8.8.8:7");
	assert_int_equal(c.u.session.action, SP_SESSION_CMD_IDLE);
	c = parse_ok("session onload 3 udp 10.0.0.2:53 8.8.8.8:53");
	assert_int_equal(c.u.session.action, SP_SESSION_CMD_ONLOAD);
	parse_err("session evict 1 udp 10.0.0.2:53 8.8.8.8:53",
		  "session: expected 'offload', 'idle', 'onload' or 'adopt'");
	parse_err("session offload 0 udp 10.0.0.2:53 8.8.8.8:53", "id 0: must be 1..");
	parse_err("session offload 1 any 10.0.0.2:53 8.8.8.8:53", "protocol any: must be tcp, udp or icmp");
	parse_err("session offload 1 udp 10.0.0.2 8.8.8.8:53", "internal 10.0.0.2: must be a.b.c.d:port");
	parse_err("session offload 1 udp 10.0.0.2:53 8.8.8.8:65536", "remote 8.8.8.8:65536");
	parse_err("session offload 1 udp 10.0.0.2:53", "session offload: missing remote");
	parse_err("session offload 1 udp 10.0.0.2:53 8.8.8.8:53 now", "unexpected 'now'");
	/* a session the switch holds, handed back (no id: the process gives one) */
	c = parse_ok("session adopt tcp 10.0.0.15:40000 203.0.113.1:40000 198.51.100.10:443 snat established");
	assert_int_equal(c.u.session.action, SP_SESSION_CMD_ADOPT);
	assert_int_equal(c.u.session.ext_addr, 0xcb007101);
	assert_int_equal(c.u.session.ext_port, 40000);
	assert_int_equal(c.u.session.rem_port, 443);
	assert_int_equal(c.u.session.origin, 0);
	assert_int_equal(c.u.session.tcp_phase, 1);
	c = parse_ok("session adopt udp 10.0.0.20:8080 203.0.113.80:80 198.51.100.10:5555 dnat");
	assert_int_equal(c.u.session.origin, 2);
	parse_err("session adopt udp 10.0.0.2:53 203.0.113.1:53 8.8.8.8:53 snat established", "a phase is for TCP only");
	parse_err("session adopt tcp 10.0.0.2:53 203.0.113.1:53 8.8.8.8:53 masquerade", "origin masquerade");
	parse_err("session adopt tcp 10.0.0.2:53 203.0.113.1 8.8.8.8:53 snat",
		  "external 203.0.113.1: must be a.b.c.d:port");
	parse_err("session adopt tcp 10.0.0.2:53 8.8.8.8:53 snat", "remote snat: must be");
	c = parse_ok("session adopt tcp 10.0.0.2:53 203.0.113.1:53 8.8.8.8:53 snat");
	assert_false(c.u.session.has_phase);
	c = parse_ok("offload after_packets 2");
	assert_int_equal(c.verb, SP_CMD_OFFLOAD);
	assert_int_equal(c.u.after_packets, 2);
	parse_err("offload after_packets 0", "after_packets 0: must be 1..255");
	parse_err("offload packets 2", "offload: unknown word 'packets' (after_packets)");
	/* learn mode (core/learn.h): its two verbs share the first word */
	c = parse_ok("offload learn on");
	assert_int_equal(c.verb, SP_CMD_OFFLOAD_LEARN);
	assert_true(c.u.learn);
	c = parse_ok("offload learn off");
	assert_false(c.u.learn);
	parse_err("offload learn", "offload learn: missing mode");
	parse_err("offload learn yes", "mode yes: must be on or off");
	c = parse_ok("offload lease tcp_established class 5 seconds 43200");
	assert_int_equal(c.verb, SP_CMD_OFFLOAD_LEASE);
	assert_int_equal(c.u.lease.kind, SP_TO_TCP_EST);
	assert_int_equal(c.u.lease.lease_class, 5);
	assert_int_equal(c.u.lease.seconds, 43200);
	c = parse_ok("offload lease icmp seconds 10 class 0");
	assert_int_equal(c.u.lease.kind, SP_TO_ICMP);
	parse_err("offload lease tcp class 1 seconds 10", "kind tcp: must be udp, tcp_established, tcp_transitory or icmp");
	parse_err("offload lease udp class 8 seconds 10", "offload lease udp: class 8: must be 0..7");
	parse_err("offload lease udp class 1 seconds 0", "seconds 0: must be 1..86400");
	parse_err("offload lease udp class 1", "offload lease udp: missing seconds");
	/* instances behind one switch (peer.h) */
	c = parse_ok("peer vid 17 ports 33280-65535 self");
	assert_int_equal(c.verb, SP_CMD_PEER);
	assert_int_equal(c.u.peer.vid, 17);
	assert_int_equal(c.u.peer.port_min, 33280);
	assert_int_equal(c.u.peer.port_max, 65535);
	assert_true(c.u.peer.self);
	assert_false(c.u.peer.is_default);
	c = parse_ok("peer ports 1024-33279 vid 16 default");
	assert_false(c.u.peer.self);
	assert_true(c.u.peer.is_default);
	parse_err("peer vid 4 ports 1024-2047", "vid 4: must be 16..4093");
	parse_err("peer vid 4094 ports 1024-2047", "vid 4094: must be 16..4093");
	parse_err("peer vid 16 ports 2047-1024", "ports 2047-1024: must be LOW-HIGH");
	parse_err("peer vid 16", "peer: missing ports");
	parse_err("peer vid 16 ports 1-2 first", "unknown word 'first'");
	parse_ok("subscribe sessions");
	parse_err("subscribe rules", "subscribe: expected 'sessions'");
}

static void
test_route_neighbor(void **state)
{
	struct sp_cmd c = parse_ok("route 0.0.0.0/0 dev out0 via 198.51.100.254");

	(void)state;
	assert_int_equal(c.verb, SP_CMD_ROUTE);
	assert_int_equal(c.u.route.prefix.len, 0);
	assert_true(c.u.route.has_via);
	assert_int_equal(c.u.route.via, 0xc63364fe);
	assert_false(c.u.route.has_source);
	c = parse_ok("route 10.0.0.0/24 dev in0  # connected");
	assert_false(c.u.route.has_via);
	c = parse_ok("route 10.0.1.0/24 dev inside via 169.254.0.2 source 10.0.1.1");
	assert_true(c.u.route.has_source);
	assert_int_equal(c.u.route.source, 0x0a000101);
	parse_err("route 10.0.1.0/24 dev inside source 10.0.1", "source 10.0.1");
	parse_err("route 10.0.0.1/24 dev in0", "host bits set");
	parse_err("route 10.0.0.0/33 dev in0", "0..32");
	parse_err("route 10.0.0.0/24", "missing dev");
	c = parse_ok("neighbor 198.51.100.254 mac 02:00:00:00:00:fe dev out0");
	assert_int_equal(c.verb, SP_CMD_NEIGHBOR);
	assert_int_equal(c.u.neigh.mac[5], 0xfe);
	parse_err("neighbor 300.1.1.1 mac 02:00:00:00:00:fe dev out0",
		  "neighbor: address 300.1.1.1: not an IPv4 address");
	parse_err("neighbor 1.1.1.1 dev out0", "neighbor 1.1.1.1: missing mac");
	parse_err("neighbor 1.1.1.1 mac 02:00:00:00:00 dev out0", "mac");
	/* before `neighbor`, whose address "del" is not */
	c = parse_ok("neighbor del 198.51.100.254 dev out0");
	assert_int_equal(c.verb, SP_CMD_NEIGHBOR_DEL);
	assert_int_equal(c.u.neigh.addr, 0xc63364fe);
	assert_string_equal(c.u.neigh.dev, "out0");
	parse_err("neighbor del 198.51.100.254", "neighbor del 198.51.100.254: missing dev");
}

static void
test_pool(void **state)
{
	struct sp_cmd c = parse_ok("pool public ports 1024-65535 addresses 203.0.113.0/29 203.0.113.9/32");

	(void)state;
	assert_int_equal(c.verb, SP_CMD_POOL);
	assert_int_equal(c.u.pool.port_min, 1024);
	assert_int_equal(c.u.pool.port_max, 65535);
	assert_int_equal(c.u.pool.n_prefixes, 2);
	assert_int_equal(c.u.pool.prefixes[1].addr, 0xcb007109);
	/* a TOML [[pool]]'s defaults: parity kept, port not */
	assert_true(c.u.pool.policy.preserve_parity);
	assert_false(c.u.pool.policy.preserve_port);
	c = parse_ok("pool p addresses 203.0.113.1 ports 5-6");
	assert_int_equal(c.u.pool.prefixes[0].len, 32);
	assert_int_equal(c.u.pool.port_min, 5);
	/* the policy words end an address list like ports does */
	c = parse_ok("pool p ports 1-65535 addresses 203.0.113.1 203.0.113.2 preserve_parity false preserve_port true");
	assert_int_equal(c.u.pool.n_prefixes, 2);
	assert_false(c.u.pool.policy.preserve_parity);
	assert_true(c.u.pool.policy.preserve_port);
	c = parse_ok("pool p preserve_port false preserve_parity true addresses 203.0.113.1");
	assert_true(c.u.pool.policy.preserve_parity);
	assert_false(c.u.pool.policy.preserve_port);
	parse_err("pool p preserve_parity yes addresses 1.2.3.4",
		  "pool p: preserve_parity yes: must be true or false");
	parse_err("pool p addresses 1.2.3.4 preserve_port", "preserve_port: missing value");
	parse_err("pool p addresses 1.2.3.4 preserve_port 1",
		  "pool p: preserve_port 1: must be true or false");
	parse_err("pool p addresses 1.2.3.4 parity true", "not an IPv4 address");
	parse_err("pool p ports 1-5 parity true addresses 1.2.3.4",
		  "unknown word 'parity' (ports, preserve_parity, preserve_port, addresses)");
	parse_err("pool p ports 10-5 addresses 1.2.3.4", "LOW-HIGH");
	parse_err("pool p ports 0-5 addresses 1.2.3.4", "LOW-HIGH");
	parse_err("pool p ports 1-5", "missing addresses");
	parse_err("pool p addresses 1.2.3.4/24", "host bits");
}

static void
test_rule(void **state)
{
	struct sp_cmd c = parse_ok("rule add id 4 type dnat prefix 203.0.113.11/32 port 443 protocol tcp to 10.0.0.5/32 to_port 8443");

	(void)state;
	assert_int_equal(c.verb, SP_CMD_RULE_ADD);
	assert_int_equal(c.u.rule.id, 4);
	assert_int_equal(c.u.rule.kind, 1);
	assert_true(c.u.rule.has_port);
	assert_int_equal(c.u.rule.port, 443);
	assert_int_equal(c.u.rule.proto, 6);
	assert_true(c.u.rule.has_to && !c.u.rule.has_pool);
	assert_int_equal(c.u.rule.to.addr, 0x0a000005);
	assert_true(c.u.rule.has_to_port);
	assert_int_equal(c.u.rule.to_port, 8443);
	c = parse_ok("rule add id 1 type snat prefix 10.0.0.0/24 protocol any pool public");
	assert_true(c.u.rule.has_pool && !c.u.rule.has_to);
	assert_string_equal(c.u.rule.pool, "public");
	assert_int_equal(c.u.rule.proto, 0);
	c = parse_ok("rule add id 2 type snat prefix 10.0.0.0/24 pool public");
	assert_int_equal(c.u.rule.proto, 0);
	c = parse_ok("rule del 7");
	assert_int_equal(c.verb, SP_CMD_RULE_DEL);
	assert_int_equal(c.u.rule_id, 7);
	parse_err("rule add id 0 type snat prefix 10.0.0.0/24 pool p", "id 0");
	parse_err("rule add id 1 type snat prefix 10.0.0.0/24", "exactly one of pool or to");
	parse_err("rule add id 1 type snat prefix 10.0.0.0/24 pool p to 1.2.3.4", "exactly one");
	parse_err("rule add id 1 type snat prefix 10.0.0.0/24 to 1.2.3.0/24", "one address");
	parse_err("rule add id 1 type snat prefix 10.0.0.0/24 port 5 protocol icmp pool p", "port needs");
	parse_err("rule add id 1 type dnat prefix 1.2.3.0/24 to 10.0.0.0/16", "as long as");
	parse_err("rule add id 1 type dnat prefix 1.2.3.4 to 10.0.0.1 to_port 5", "to_port needs port");
	parse_err("rule add id 1 type dnat prefix 1.2.3.4 pool p", "not to a pool");
	parse_err("rule add id 1 type snat prefix 10.0.0.0/24 pool p to_port 3", "only DNAT");
	parse_err("rule add id 1 type snat prefix 10.0.0.1/24 pool p", "host bits");
	parse_err("rule add id 1 type xnat prefix 10.0.0.0/24 pool p", "snat or dnat");
	parse_err("rule add id 1 type snat prefix 10.0.0.0/24 protocol gre pool p", "tcp, udp, icmp or any");
	parse_err("rule del", "rule del: missing id");
	parse_err("rule del 3 4", "rule del: unexpected '4'");
	parse_err("rule move 3", "'add' or 'del'");
}

static void
test_settings(void **state)
{
	struct sp_cmd c = parse_ok("timeouts udp 60 tcp_established 7440 tcp_transitory 240 icmp 30");

	(void)state;
	assert_int_equal(c.u.timeouts.set, 0xf);
	assert_int_equal(c.u.timeouts.seconds[SP_TO_UDP], 60);
	assert_int_equal(c.u.timeouts.seconds[SP_TO_ICMP], 30);
	c = parse_ok("timeouts icmp 5");
	assert_int_equal(c.u.timeouts.set, 1u << SP_TO_ICMP);
	parse_err("timeouts udp 0", "1..604800");
	parse_err("timeouts udp 604801", "1..604800");
	parse_err("timeouts gre 5", "unknown word 'gre'");
	c = parse_ok("filtering udp endpoint-independent tcp address-and-port-dependent icmp address-dependent");
	assert_int_equal(c.u.filtering.mode[SP_PI_UDP], SP_FILTER_EIM);
	assert_int_equal(c.u.filtering.mode[SP_PI_TCP], SP_FILTER_ADDR_PORT);
	assert_int_equal(c.u.filtering.mode[SP_PI_ICMP], SP_FILTER_ADDR);
	parse_err("filtering udp open", "must be endpoint-independent");
	c = parse_ok("limits ports_per_host 2048 sessions_per_host 10000");
	assert_int_equal(c.u.limits.ports_per_host, 2048);
	assert_int_equal(c.u.limits.sessions_per_host, 10000);
	parse_err("limits ports_per_host 16777217", "0..16777216");
	c = parse_ok("icmp unreachable_on_exhaustion off rate 20 burst 5");
	assert_int_equal(c.verb, SP_CMD_ICMP);
	assert_int_equal(c.u.icmp.set, 7);
	assert_false(c.u.icmp.unreachable_on_exhaustion);
	assert_int_equal(c.u.icmp.rate, 20);
	assert_int_equal(c.u.icmp.burst, 5);
	c = parse_ok("icmp unreachable_on_exhaustion on");
	assert_int_equal(c.u.icmp.set, 1);
	assert_true(c.u.icmp.unreachable_on_exhaustion);
	parse_err("icmp unreachable_on_exhaustion yes", "must be on or off");
	parse_err("icmp rate 0", "rate 0: must be 1..1000000");
	parse_err("icmp", "nothing to set");
	parse_err("icmp quench 1", "unknown word 'quench'");
}

static void
test_logging(void **state)
{
	struct sp_cmd c = parse_ok("logging events file file /var/log/quicknat-events.log");
	char line[400];

	(void)state;
	assert_int_equal(c.verb, SP_CMD_LOGGING);
	assert_int_equal(c.u.logging.events, SP_EVENTS_FILE);
	assert_string_equal(c.u.logging.file, "/var/log/quicknat-events.log");
	c = parse_ok("logging events syslog");
	assert_int_equal(c.u.logging.events, SP_EVENTS_SYSLOG);
	c = parse_ok("logging events none");
	assert_int_equal(c.u.logging.events, SP_EVENTS_NONE);
	c = parse_ok("logging events none syslog_server 192.0.2.1:514 ipfix_collector 192.0.2.2:4739");
	assert_string_equal(c.u.logging.syslog_server, "192.0.2.1:514");
	assert_string_equal(c.u.logging.ipfix_collector, "192.0.2.2:4739");
	/* absent: observation domain 1, natInstanceID 0, no session records */
	assert_int_equal(c.u.logging.ipfix_domain, 1);
	assert_int_equal(c.u.logging.nat_instance, 0);
	assert_false(c.u.logging.ipfix_sessions);
	/* RFC 5612's example number until the operator names its own */
	assert_int_equal(c.u.logging.syslog_enterprise, 32473);
	c = parse_ok("logging events none syslog_server 192.0.2.1:514 syslog_enterprise 54321");
	assert_int_equal(c.u.logging.syslog_enterprise, 54321);
	parse_err("logging events none syslog_enterprise 0",
		  "syslog_enterprise 0: must be 1..4294967295");
	c = parse_ok("logging events none ipfix_collector 192.0.2.2:4739 ipfix_domain 7 "
		     "nat_instance 2 ipfix_sessions true");
	assert_int_equal(c.u.logging.ipfix_domain, 7);
	assert_int_equal(c.u.logging.nat_instance, 2);
	assert_true(c.u.logging.ipfix_sessions);
	parse_err("logging events none ipfix_domain 0", "ipfix_domain 0: must be 1..4294967295");
	parse_err("logging events none ipfix_collector", "ipfix_collector: missing value");
	parse_err("logging events kafka", "logging: events kafka: must be none, syslog or file");
	parse_err("logging events file", "events file needs 'file PATH'");
	parse_err("logging file /tmp/x", "logging: missing events");
	parse_err("logging events", "logging: events: missing value");
	parse_err("logging events none level info", "unknown word 'level' (events, file, syslog_server, ipfix_collector, "
		  "syslog_enterprise, ipfix_domain, nat_instance, ipfix_sessions)");
	snprintf(line, sizeof(line), "logging events file file /%0300d", 0);
	parse_err(line, "logging: file: longer than 255 bytes");
}

static void
test_misc(void **state)
{
	struct sp_cmd c = parse_ok("   # only a comment");

	(void)state;
	assert_int_equal(c.verb, SP_CMD_NONE);
	c = parse_ok("");
	assert_int_equal(c.verb, SP_CMD_NONE);
	c = parse_ok("sessions limit 10");
	assert_int_equal(c.verb, SP_CMD_SESSIONS);
	assert_int_equal(c.u.sessions.action, SP_SESSIONS_LIST);
	assert_int_equal(c.u.sessions.limit, 10);
	c = parse_ok("sessions list proto udp src 10.0.0.2 dst 8.8.8.8 port 53");
	assert_int_equal(c.u.sessions.filter.proto, 17);
	assert_true(c.u.sessions.filter.has_src && c.u.sessions.filter.has_dst);
	assert_int_equal(c.u.sessions.filter.src, 0x0a000002);
	assert_int_equal(c.u.sessions.filter.dst, 0x08080808);
	assert_true(c.u.sessions.filter.has_port);
	assert_int_equal(c.u.sessions.filter.port, 53);
	c = parse_ok("sessions delete src 10.0.0.2");
	assert_int_equal(c.u.sessions.action, SP_SESSIONS_DELETE);
	assert_false(c.u.sessions.filter.has_dst || c.u.sessions.filter.has_port);
	c = parse_ok("sessions flush");
	assert_int_equal(c.u.sessions.action, SP_SESSIONS_FLUSH);
	parse_err("sessions delete", "needs a filter");
	parse_err("sessions delete limit 3", "limit: only with list");
	parse_err("sessions port 0", "sessions: port 0: must be 1..65535");
	parse_err("sessions src 10.0.0", "src 10.0.0: not an IPv4 address");
	parse_err("sessions proto", "proto: missing value");
	c = parse_ok("stats");
	assert_int_equal(c.verb, SP_CMD_STATS);
	c = parse_ok("rules");
	assert_int_equal(c.verb, SP_CMD_RULES);
	parse_err("sessions all", "sessions: action all: must be list, delete or flush");
	parse_err("frobnicate", "unknown command 'frobnicate'");
}

/* Each line of the golden files parses, and written back by the table is
 * the line as the controller wrote it. */
static unsigned
check_golden_file(const char *path)
{
	char line[2048];
	unsigned lineno = 0, lines = 0;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		struct sp_buf back = { 0 };
		struct sp_cmd cmd;
		char err[256];

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (sp_cmd_parse(line, &cmd, err, sizeof(err)) != 0)
			fail_msg("%s:%u: %s", path, lineno, err);
		if (cmd.verb == SP_CMD_NONE)
			continue;
		sp_cmd_format(&cmd, &back);
		sp_buf_printf(&back, "%c", '\0');
		if (strcmp(back.p, line) != 0)
			fail_msg("%s:%u: '%s' reads back as '%s'", path, lineno,
				 line, back.p);
		sp_buf_free(&back);
		lines++;
	}
	fclose(f);
	return lines;
}

static void
test_golden_files(void **state)
{
	unsigned files = 0, lines = 0;

	(void)state;
	for (unsigned g = 0; g < sizeof(golden_dirs) / sizeof(golden_dirs[0]); g++) {
		DIR *d = opendir(golden_dirs[g]);
		struct dirent *e;

		if (d == NULL)
			fail_msg("cannot open %s", golden_dirs[g]);
		while ((e = readdir(d)) != NULL) {
			char path[1024];
			size_t len = strlen(e->d_name);

			if (len < 5 || strcmp(e->d_name + len - 5, ".cmds") != 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", golden_dirs[g],
				 e->d_name);
			lines += check_golden_file(path);
			files++;
		}
		closedir(d);
	}
	assert_true(files >= 3 && lines >= 40);
}

/* The table's words are the ones the rest of swpath writes: protocols in
 * event lines (util/text.h), origins and TCP phases in the session JSON
 * (core/session.h). */
static void
test_table_words_agree(void **state)
{
	(void)state;
	for (unsigned i = 0; i < sp_cmd_n_specs; i++) {
		const struct sp_cmd_spec *s = &sp_cmd_specs[i];

		for (unsigned k = 0; k < s->n_args + s->n_fields; k++) {
			const struct sp_cmd_field *f = k < s->n_args ?
				&s->args[k] : &s->fields[k - s->n_args];

			for (unsigned w = 0; w < f->n_words; w++) {
				const char *word = f->words[w].word;
				uint64_t v = f->words[w].value;

				if (strcmp(f->name, "protocol") == 0 ||
				    strcmp(f->name, "proto") == 0)
					assert_string_equal(sp_proto_name((uint8_t)v), word);
				if (strcmp(f->name, "origin") == 0)
					assert_string_equal(sp_origin_name((unsigned)v), word);
				if (strcmp(f->name, "phase") == 0)
					assert_string_equal(sp_tcp_phase_name((unsigned)v), word);
			}
		}
	}
}

/* The command file's problems, in a buffer: -1 and every one of them. */
static long
read_file_text(const char *text, struct sp_cmd_line **cmds, struct sp_buf *errors)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	long n;

	assert_non_null(f);
	n = sp_cmd_file_read(f, "nat.cmds", cmds, errors);
	fclose(f);
	sp_buf_printf(errors, "%c", '\0');
	return n;
}

/* A file with several errors: all of them, each with its line, and no
 * command to apply (the process does not start). */
static void
test_command_file_reports_every_error(void **state)
{
	struct sp_cmd_line *cmds = (void *)1;
	struct sp_buf errors = { 0 };

	(void)state;
	assert_int_equal(read_file_text(
		"# a comment\n"
		"interface in0 zone inside port 0 address 10.0.0.1/24\n"
		"interface out0 zone outsid port 1\n"
		"pool public addresses 203.0.113.0/29\n"
		"rule add id 1 type snat prefix 10.0.0.0/33 pool public\n"
		"\n"
		"sessions flush\n"
		"frobnicate\n", &cmds, &errors), -1);
	assert_null(cmds);
	/* no "needs an outside interface": line 3 was meant to be it */
	assert_string_equal(errors.p,
		"nat.cmds:3: interface out0: zone outsid: must be inside or outside\n"
		"nat.cmds:5: rule add: prefix 10.0.0.0/33: prefix length must be 0..32\n"
		"nat.cmds:7: 'sessions' is a run-time command\n"
		"nat.cmds:8: unknown command 'frobnicate' (interface, route, "
		"neighbor, pool, rule, timeouts, filtering, limits, icmp, logging, "
		"rules, sessions, session, stats, startup, neighbors, routes, subscribe, "
		"offload, peer)\n");
	sp_buf_free(&errors);
}

static void
test_command_file_good_and_zones(void **state)
{
	struct sp_cmd_line *cmds;
	struct sp_buf errors = { 0 };

	(void)state;
	assert_int_equal(read_file_text(
		"interface in0 zone inside port 0\n"
		"\n"
		"interface out0 zone outside port 1\n", &cmds, &errors), 2);
	assert_int_equal(cmds[0].line, 1);
	assert_int_equal(cmds[1].line, 3);
	assert_int_equal(cmds[1].cmd.u.iface.zone, SP_ZONE_OUTSIDE);
	free(cmds);
	assert_string_equal(errors.p, "");
	sp_buf_free(&errors);
	errors = (struct sp_buf){ 0 };
	assert_int_equal(read_file_text("interface in0 zone inside port 0\n",
					&cmds, &errors), -1);
	assert_string_equal(errors.p,
		"nat.cmds: needs at least one inside and one outside interface\n");
	sp_buf_free(&errors);
}

/* An error that quotes user input stays one JSON string (ctl_socket.c). */
static void
test_json_string(void **state)
{
	struct sp_buf b = { 0 };

	(void)state;
	sp_buf_json_string(&b, "rules: unknown word 'a\"b\\c'\n\x01");
	sp_buf_printf(&b, "%c", '\0');
	assert_string_equal(b.p, "\"rules: unknown word 'a\\\"b\\\\c'\\u000a\\u0001\"");
	sp_buf_free(&b);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interface),
		cmocka_unit_test(test_route_neighbor),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_settings),
		cmocka_unit_test(test_logging),
		cmocka_unit_test(test_session),
		cmocka_unit_test(test_misc),
		cmocka_unit_test(test_golden_files),
		cmocka_unit_test(test_table_words_agree),
		cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_command_file_reports_every_error),
		cmocka_unit_test(test_command_file_good_and_zones),
	};

	(void)argc;
	(void)argv;
	return SP_RUN_TESTS(tests, NULL, NULL);
}
