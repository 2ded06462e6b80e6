/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the command table cannot say (cmd_table.h): one value of a command
 * against another. The controller's configuration parser makes the same
 * checks on the TOML (quicknat/config/parse.py), so a configuration it
 * accepts never fails here; these guard what an operator types on the
 * control socket.
 */
#include <netinet/in.h>

#include "control/cmd_table.h"
#include "qns.h"

/* A slow-path link is an 802.1Q sub-interface: the switch tags what it
 * sends with the zone (p4src/README.md, "The slow-path tag"). */
static int
check_interface(const struct sp_cmd_interface *c, char *err, size_t errlen)
{
	if (c->slow_path && c->vlan == 0)
		return sp_fail(err, errlen,
			       "interface %s: slow_path needs a vlan (the switch tags what it sends with the zone)",
			       c->name);
	return 0;
}

static int
check_snat(const struct sp_cmd_rule *c, char *err, size_t errlen)
{
	if (c->has_to_port)
		return sp_fail(err, errlen,
			       "rule %u: to_port: only DNAT rules rewrite the port",
			       c->id);
	if (c->has_to && c->to.len != 32)
		return sp_fail(err, errlen,
			       "rule %u: an SNAT 'to' is one address (/32)", c->id);
	return 0;
}

/* A DNAT rule sends its prefix to one address, or 1:1 to a prefix as long
 * as its own; a new port only for a rule of one port. */
static int
check_dnat(const struct sp_cmd_rule *c, char *err, size_t errlen)
{
	if (c->has_pool)
		return sp_fail(err, errlen,
			       "rule %u: DNAT rules translate to 'to', not to a pool",
			       c->id);
	if (c->to.len != 32 && c->to.len != c->prefix.len)
		return sp_fail(err, errlen,
			       "rule %u: a DNAT 'to' prefix must be /32 or as long as the rule's prefix",
			       c->id);
	if (c->has_to_port && !c->has_port)
		return sp_fail(err, errlen, "rule %u: to_port needs port", c->id);
	return 0;
}

static int
check_rule(const struct sp_cmd_rule *c, char *err, size_t errlen)
{
	if (c->has_port && c->proto == IPPROTO_ICMP)
		return sp_fail(err, errlen,
			       "rule %u: a port needs protocol tcp, udp or any", c->id);
	return c->kind == QNS_SNAT ? check_snat(c, err, errlen) :
				     check_dnat(c, err, errlen);
}

static int
check_logging(const struct sp_cmd_logging *c, char *err, size_t errlen)
{
	if (c->events == SP_EVENTS_FILE && c->file[0] == '\0')
		return sp_fail(err, errlen,
			       "logging: events file needs 'file PATH', the file to append to");
	return 0;
}

/* As conntrack -D: a delete names what it deletes; flush takes all. */
static int
check_sessions(const struct sp_cmd_sessions *c, char *err, size_t errlen)
{
	const struct sp_session_filter *f = &c->filter;

	if (c->limit != 0 && c->action != SP_SESSIONS_LIST)
		return sp_fail(err, errlen, "sessions: limit: only with list");
	if (c->action == SP_SESSIONS_DELETE && !f->proto && !f->has_src &&
	    !f->has_dst && !f->has_port && !f->has_rule)
		return sp_fail(err, errlen,
			       "sessions delete: needs a filter (proto, src, dst, port, rule); "
			       "'sessions flush' deletes them all");
	return 0;
}

static int
check_session(const struct sp_session_cmd *c, char *err, size_t errlen)
{
	if (c->has_phase && c->proto != IPPROTO_TCP)
		return sp_fail(err, errlen,
			       "session adopt: a phase is for TCP only");
	return 0;
}

int
sp_cmd_check(const struct sp_cmd *cmd, char *err, size_t errlen)
{
	switch (cmd->verb) {
	case SP_CMD_INTERFACE:
		return check_interface(&cmd->u.iface, err, errlen);
	case SP_CMD_RULE_ADD:
		return check_rule(&cmd->u.rule, err, errlen);
	case SP_CMD_LOGGING:
		return check_logging(&cmd->u.logging, err, errlen);
	case SP_CMD_SESSIONS:
		return check_sessions(&cmd->u.sessions, err, errlen);
	case SP_CMD_SESSION:
		return check_session(&cmd->u.session, err, errlen);
	default:
		return 0;
	}
}
