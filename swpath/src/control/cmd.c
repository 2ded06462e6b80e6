/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parser of the swpath command language (docs/swpath-commands.md). Pure C,
 * no DPDK: it only turns a line into a struct sp_cmd, checking syntax and
 * value ranges. Keyword/value pairs may come in any order after the verb.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/p4_constants.h"
#include "control/cmd.h"
#include "util/text.h"

#define SP_MAX_WORDS 96
#define SP_TIMEOUT_MAX 604800u
#define SP_LIMIT_MAX 16777216u

struct words {
	unsigned n;
	char *w[SP_MAX_WORDS];
};

static const char *const timeout_names[SP_TO_MAX] = {
	[SP_TO_UDP] = "udp",
	[SP_TO_TCP_EST] = "tcp_established",
	[SP_TO_TCP_TRANS] = "tcp_transitory",
	[SP_TO_ICMP] = "icmp",
};

static const char *const proto_index_names[SP_PI_MAX] = {
	[SP_PI_TCP] = "tcp",
	[SP_PI_UDP] = "udp",
	[SP_PI_ICMP] = "icmp",
};

static const char *const filter_names[] = {
	[SP_FILTER_EIM] = "endpoint-independent",
	[SP_FILTER_ADDR] = "address-dependent",
	[SP_FILTER_ADDR_PORT] = "address-and-port-dependent",
};

static const char *const event_sink_names[] = {
	[SP_EVENTS_NONE] = "none",
	[SP_EVENTS_SYSLOG] = "syslog",
	[SP_EVENTS_FILE] = "file",
};

const char *
sp_event_sink_name(uint8_t sink)
{
	return sink <= SP_EVENTS_FILE ? event_sink_names[sink] : "?";
}

const char *
sp_timeout_name(unsigned index)
{
	return index < SP_TO_MAX ? timeout_names[index] : "?";
}

const char *
sp_proto_index_name(unsigned index)
{
	return index < SP_PI_MAX ? proto_index_names[index] : "?";
}

const char *
sp_filter_name(uint8_t mode)
{
	return mode <= SP_FILTER_ADDR_PORT ? filter_names[mode] : "?";
}

static const struct {
	const char *name;
	enum sp_cmd_when when;
} verb_info[] = {
	[SP_CMD_INTERFACE] = { "interface", SP_WHEN_STARTUP },
	[SP_CMD_ROUTE] = { "route", SP_WHEN_STARTUP },
	[SP_CMD_NEIGHBOR] = { "neighbor", SP_WHEN_ANY },
	[SP_CMD_POOL] = { "pool", SP_WHEN_ANY },
	[SP_CMD_RULE_ADD] = { "rule add", SP_WHEN_ANY },
	[SP_CMD_RULE_DEL] = { "rule del", SP_WHEN_RUNTIME },
	[SP_CMD_TIMEOUTS] = { "timeouts", SP_WHEN_ANY },
	[SP_CMD_FILTERING] = { "filtering", SP_WHEN_ANY },
	[SP_CMD_LIMITS] = { "limits", SP_WHEN_ANY },
	[SP_CMD_LOGGING] = { "logging", SP_WHEN_STARTUP },
	[SP_CMD_ICMP] = { "icmp", SP_WHEN_ANY },
	[SP_CMD_RULES] = { "rules", SP_WHEN_RUNTIME },
	[SP_CMD_SESSIONS] = { "sessions", SP_WHEN_RUNTIME },
	[SP_CMD_STATS] = { "stats", SP_WHEN_RUNTIME },
	[SP_CMD_SUBSCRIBE] = { "subscribe", SP_WHEN_RUNTIME },
	[SP_CMD_SESSION] = { "session", SP_WHEN_RUNTIME },
	[SP_CMD_OFFLOAD] = { "offload", SP_WHEN_ANY },
	[SP_CMD_PEER] = { "peer", SP_WHEN_STARTUP },
};

const char *
sp_cmd_verb_name(enum sp_verb verb)
{
	return verb_info[verb].name;
}

enum sp_cmd_when
sp_cmd_when(enum sp_verb verb)
{
	return verb_info[verb].when;
}

bool
sp_verb_is_json(enum sp_verb verb)
{
	return verb == SP_CMD_SESSIONS || verb == SP_CMD_STATS;
}

static int
split(char *line, struct words *words)
{
	char *save = NULL;
	char *hash = strchr(line, '#');

	if (hash != NULL)
		*hash = '\0';
	words->n = 0;
	for (char *t = strtok_r(line, " \t\r\n", &save); t != NULL;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		if (words->n == SP_MAX_WORDS)
			return -1;
		words->w[words->n++] = t;
	}
	return 0;
}

static int
parse_bool(const char *s, bool *out)
{
	if (strcmp(s, "true") == 0)
		*out = true;
	else if (strcmp(s, "false") == 0)
		*out = false;
	else
		return -1;
	return 0;
}

/* Unsigned decimal in [min, max]. */
static int
parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int
parse_ipv4(const char *s, uint32_t *out)
{
	unsigned a[4];
	char tail;

	if (sscanf(s, "%3u.%3u.%3u.%3u%c", &a[0], &a[1], &a[2], &a[3],
		   &tail) != 4)
		return -1;
	for (int i = 0; i < 4; i++)
		if (a[i] > 255)
			return -1;
	for (const char *p = s; *p; p++)
		if ((*p < '0' || *p > '9') && *p != '.')
			return -1;
	*out = a[0] << 24 | a[1] << 16 | a[2] << 8 | a[3];
	return 0;
}

/* "a.b.c.d/len" or "a.b.c.d" (a /32). host_bits: whether they may be set. */
static int
parse_prefix(const char *s, bool host_bits, struct sp_prefix *out,
	     char *err, size_t errlen)
{
	char buf[40];
	char *slash;
	uint64_t len = 32;
	uint32_t mask;

	if (strlen(s) >= sizeof(buf))
		return sp_fail(err, errlen, "%s: not an IPv4 prefix", s);
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		if (parse_uint(slash + 1, 0, 32, &len) < 0)
			return sp_fail(err, errlen,
				    "%s: prefix length must be 0..32", s);
	}
	if (parse_ipv4(buf, &out->addr) < 0)
		return sp_fail(err, errlen, "%s: not an IPv4 address", s);
	out->len = (uint8_t)len;
	mask = len == 0 ? 0 : ~0u << (32 - len);
	if (!host_bits && (out->addr & ~mask) != 0)
		return sp_fail(err, errlen, "%s: host bits set", s);
	return 0;
}

static int
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned b[6];
	char tail;

	if (strlen(s) != 17 ||
	    sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

static int
parse_name(const char *verb, const char *s, char *out, char *err,
	   size_t errlen)
{
	if (strlen(s) >= SP_NAME_MAX)
		return sp_fail(err, errlen, "%s: name %s: longer than %d bytes",
			    verb, s, SP_NAME_MAX - 1);
	strcpy(out, s);
	return 0;
}

static int
parse_protocol(const char *s, uint8_t *proto)
{
	if (strcmp(s, "tcp") == 0)
		*proto = 6;
	else if (strcmp(s, "udp") == 0)
		*proto = 17;
	else if (strcmp(s, "icmp") == 0)
		*proto = 1;
	else if (strcmp(s, "any") == 0)
		*proto = 0;
	else
		return -1;
	return 0;
}

/*
 * sessions [list|delete|flush] [limit N] [proto P] [src A] [dst A] [port N]:
 * src is the inside host, dst the remote peer, port any of the session's
 * three ports (as conntrack's filters). delete needs a filter; flush takes
 * all when it has none.
 */
static int
parse_sessions(const struct words *words, struct sp_cmd_sessions *c,
	       char *err, size_t errlen)
{
	static const char usage[] = "sessions: expected 'sessions [list|delete|flush] "
		"[limit N] [proto tcp|udp|icmp] [src A] [dst A] [port N] [rule N]'";
	struct sp_session_filter *f = &c->filter;
	unsigned i = 1;
	uint64_t n;

	if (i < words->n && strcmp(words->w[i], "list") == 0) {
		i++;
	} else if (i < words->n && strcmp(words->w[i], "delete") == 0) {
		c->action = SP_SESSIONS_DELETE;
		i++;
	} else if (i < words->n && strcmp(words->w[i], "flush") == 0) {
		c->action = SP_SESSIONS_FLUSH;
		i++;
	}
	for (; i < words->n; i++) {
		const char *k = words->w[i];
		const char *v = i + 1 < words->n ? words->w[i + 1] : NULL;

		if (strcmp(k, "limit") != 0 && strcmp(k, "proto") != 0 &&
		    strcmp(k, "src") != 0 && strcmp(k, "dst") != 0 &&
		    strcmp(k, "port") != 0 && strcmp(k, "rule") != 0)
			return sp_fail(err, errlen, "%s (at '%s')", usage, k);
		if (v == NULL)
			return sp_fail(err, errlen, "sessions: %s: missing value", k);
		i++;
		if (strcmp(k, "limit") == 0 && c->action == SP_SESSIONS_LIST &&
		    parse_uint(v, 0, UINT32_MAX, &n) == 0)
			c->limit = (uint32_t)n;
		else if (strcmp(k, "proto") == 0 && parse_protocol(v, &f->proto) == 0)
			;
		else if (strcmp(k, "src") == 0 && parse_ipv4(v, &f->src) == 0)
			f->has_src = true;
		else if (strcmp(k, "dst") == 0 && parse_ipv4(v, &f->dst) == 0)
			f->has_dst = true;
		else if (strcmp(k, "rule") == 0 &&
			 parse_uint(v, 1, UINT32_MAX, &n) == 0) {
			f->rule = (uint32_t)n;
			f->has_rule = true;
		} else if (strcmp(k, "port") == 0 &&
			 parse_uint(v, 1, 65535, &n) == 0) {
			f->port = (uint16_t)n;
			f->has_port = true;
		} else
			return sp_fail(err, errlen, "%s (at '%s %s')", usage, k, v);
	}
	if (c->action == SP_SESSIONS_DELETE && !f->proto && !f->has_src &&
	    !f->has_dst && !f->has_port && !f->has_rule)
		return sp_fail(err, errlen,
			       "sessions delete: needs a filter (proto, src, dst, port); "
			       "'sessions flush' deletes them all");
	return 0;
}

/* The value after keyword words->w[*i], or NULL with a message. */
static const char *
value_of(const struct words *words, unsigned *i, const char *verb, char *err,
	 size_t errlen)
{
	if (*i + 1 >= words->n) {
		sp_fail(err, errlen, "%s: %s: missing value", verb,
		     words->w[*i]);
		return NULL;
	}
	*i += 1;
	return words->w[*i];
}

#define VALUE() \
	do { \
		v = value_of(words, &i, verb, err, errlen); \
		if (v == NULL) \
			return -1; \
	} while (0)

static int
parse_interface(const struct words *words, struct sp_cmd_interface *c,
		char *err, size_t errlen)
{
	const char *verb = "interface";
	const char *v;
	bool have_zone = false, have_port = false;
	uint64_t n;

	if (words->n < 2)
		return sp_fail(err, errlen, "interface: missing name");
	if (parse_name(verb, words->w[1], c->name, err, errlen) < 0)
		return -1;
	for (unsigned i = 2; i < words->n; i++) {
		const char *k = words->w[i];

		if (strcmp(k, "zone") == 0) {
			VALUE();
			if (strcmp(v, "inside") == 0)
				c->zone = SP_ZONE_INSIDE;
			else if (strcmp(v, "outside") == 0)
				c->zone = SP_ZONE_OUTSIDE;
			else
				return sp_fail(err, errlen,
					    "interface %s: zone %s: must be inside or outside",
					    c->name, v);
			have_zone = true;
		} else if (strcmp(k, "port") == 0) {
			VALUE();
			if (parse_uint(v, 0, 511, &n) < 0)
				return sp_fail(err, errlen,
					    "interface %s: port %s: must be 0..511",
					    c->name, v);
			c->port = (uint16_t)n;
			have_port = true;
		} else if (strcmp(k, "address") == 0) {
			VALUE();
			if (parse_prefix(v, true, &c->addr, err, errlen) < 0)
				return sp_fail(err, errlen,
					    "interface %s: address %s: must be a.b.c.d/len",
					    c->name, v);
			c->has_addr = true;
		} else if (strcmp(k, "mac") == 0) {
			VALUE();
			if (parse_mac(v, c->mac) < 0 || (c->mac[0] & 1))
				return sp_fail(err, errlen,
					    "interface %s: mac %s: must be a unicast aa:bb:cc:dd:ee:ff",
					    c->name, v);
			c->has_mac = true;
		} else if (strcmp(k, "mtu") == 0) {
			VALUE();
			if (parse_uint(v, SP_MTU_MIN, SP_MTU_MAX, &n) < 0)
				return sp_fail(err, errlen,
					    "interface %s: mtu %s: must be %u..%u",
					    c->name, v, SP_MTU_MIN, SP_MTU_MAX);
			c->mtu = (uint16_t)n;
		} else if (strcmp(k, "vlan") == 0) {
			VALUE();
			/* 0 is priority tagging, 4095 reserved (IEEE 802.1Q) */
			if (parse_uint(v, 1, 4094, &n) < 0)
				return sp_fail(err, errlen,
					    "interface %s: vlan %s: must be 1..4094",
					    c->name, v);
			c->vlan = (uint16_t)n;
		} else if (strcmp(k, "slow_path") == 0) {
			VALUE();
			if (parse_bool(v, &c->slow_path) < 0)
				return sp_fail(err, errlen,
					    "interface %s: slow_path %s: must be true or false",
					    c->name, v);
		} else {
			return sp_fail(err, errlen,
				    "interface %s: unknown word '%s' (zone, port, address, mac, mtu, vlan, slow_path)",
				    c->name, k);
		}
	}
	if (!have_zone)
		return sp_fail(err, errlen, "interface %s: missing zone", c->name);
	if (!have_port)
		return sp_fail(err, errlen, "interface %s: missing port", c->name);
	if (c->slow_path && c->vlan == 0)
		return sp_fail(err, errlen,
			    "interface %s: slow_path needs a vlan (the switch tags what it sends with the zone)",
			    c->name);
	return 0;
}

static int
parse_route(const struct words *words, struct sp_cmd_route *c, char *err,
	    size_t errlen)
{
	const char *verb = "route";
	const char *v;
	char msg[96];

	if (words->n < 2)
		return sp_fail(err, errlen, "route: missing prefix");
	if (parse_prefix(words->w[1], false, &c->prefix, msg, sizeof(msg)) < 0)
		return sp_fail(err, errlen, "route: %s", msg);
	c->dev[0] = '\0';
	for (unsigned i = 2; i < words->n; i++) {
		const char *k = words->w[i];

		if (strcmp(k, "dev") == 0) {
			VALUE();
			if (parse_name(verb, v, c->dev, err, errlen) < 0)
				return -1;
		} else if (strcmp(k, "via") == 0) {
			VALUE();
			if (parse_ipv4(v, &c->via) < 0)
				return sp_fail(err, errlen,
					    "route %s: via %s: not an IPv4 address",
					    words->w[1], v);
			c->has_via = true;
		} else if (strcmp(k, "source") == 0) {
			VALUE();
			if (parse_ipv4(v, &c->source) < 0)
				return sp_fail(err, errlen,
					    "route %s: source %s: not an IPv4 address",
					    words->w[1], v);
			c->has_source = true;
		} else {
			return sp_fail(err, errlen,
				    "route %s: unknown word '%s' (dev, via, source)",
				    words->w[1], k);
		}
	}
	if (c->dev[0] == '\0')
		return sp_fail(err, errlen, "route %s: missing dev", words->w[1]);
	return 0;
}

static int
parse_neighbor(const struct words *words, struct sp_cmd_neighbor *c,
	       char *err, size_t errlen)
{
	const char *verb = "neighbor";
	const char *v;
	bool have_mac = false;

	if (words->n < 2 || parse_ipv4(words->w[1], &c->addr) < 0)
		return sp_fail(err, errlen,
			    "neighbor: missing or bad address (neighbor A mac MAC dev NAME)");
	c->dev[0] = '\0';
	for (unsigned i = 2; i < words->n; i++) {
		const char *k = words->w[i];

		if (strcmp(k, "mac") == 0) {
			VALUE();
			if (parse_mac(v, c->mac) < 0)
				return sp_fail(err, errlen,
					    "neighbor %s: mac %s: must be aa:bb:cc:dd:ee:ff",
					    words->w[1], v);
			have_mac = true;
		} else if (strcmp(k, "dev") == 0) {
			VALUE();
			if (parse_name(verb, v, c->dev, err, errlen) < 0)
				return -1;
		} else {
			return sp_fail(err, errlen,
				    "neighbor %s: unknown word '%s' (mac, dev)",
				    words->w[1], k);
		}
	}
	if (!have_mac || c->dev[0] == '\0')
		return sp_fail(err, errlen, "neighbor %s: needs mac and dev",
			    words->w[1]);
	return 0;
}

/* "LOW-HIGH" within 1-65535, LOW <= HIGH. */
static int
parse_port_range(const char *s, uint16_t *low, uint16_t *high)
{
	uint64_t lo, hi;
	char buf[16];
	char *dash;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	dash = strchr(buf, '-');
	if (dash == NULL)
		return -1;
	*dash = '\0';
	if (parse_uint(buf, 1, 65535, &lo) < 0 ||
	    parse_uint(dash + 1, 1, 65535, &hi) < 0 || lo > hi)
		return -1;
	*low = (uint16_t)lo;
	*high = (uint16_t)hi;
	return 0;
}

static int
parse_peer(const struct words *words, struct sp_cmd_peer *c, char *err,
	   size_t errlen)
{
	const char *verb = "peer";
	const char *v;
	bool has_vid = false, has_ports = false;

	for (unsigned i = 1; i < words->n; i++) {
		const char *k = words->w[i];
		uint64_t n;

		if (strcmp(k, "vid") == 0) {
			VALUE();
			/* below are the zones' and the peer tags'
			 * (define.p4); the instance has this and the next */
			if (parse_uint(v, P4_SLOW_PATH_VID_PEER_MIN, 4093,
				       &n) < 0)
				return sp_fail(err, errlen,
					    "peer: vid %s: must be %u..4093", v,
					    (unsigned)P4_SLOW_PATH_VID_PEER_MIN);
			c->vid = (uint16_t)n;
			has_vid = true;
		} else if (strcmp(k, "ports") == 0) {
			VALUE();
			if (parse_port_range(v, &c->port_min, &c->port_max) < 0)
				return sp_fail(err, errlen,
					    "peer: ports %s: must be LOW-HIGH within 1-65535",
					    v);
			has_ports = true;
		} else if (strcmp(k, "self") == 0) {
			c->self = true;
		} else if (strcmp(k, "default") == 0) {
			c->is_default = true;
		} else {
			return sp_fail(err, errlen,
				    "peer: unknown word '%s' (vid, ports, self, default)",
				    k);
		}
	}
	if (!has_vid || !has_ports)
		return sp_fail(err, errlen,
			    "peer: needs a vid and ports (peer vid V ports LOW-HIGH [self] [default])");
	return 0;
}

static bool
is_pool_keyword(const char *w)
{
	return strcmp(w, "ports") == 0 || strcmp(w, "addresses") == 0 ||
	       strcmp(w, "preserve_parity") == 0 ||
	       strcmp(w, "preserve_port") == 0;
}

static int
parse_pool(const struct words *words, struct sp_cmd_pool *c, char *err,
	   size_t errlen)
{
	const char *verb = "pool";
	const char *v;
	char msg[96];

	if (words->n < 2)
		return sp_fail(err, errlen, "pool: missing name");
	if (parse_name(verb, words->w[1], c->name, err, errlen) < 0)
		return -1;
	/* the defaults of a TOML [[pool]] (README.md) */
	c->port_min = 1024;
	c->port_max = 65535;
	c->policy.preserve_parity = true;
	c->policy.preserve_port = false;
	c->n_prefixes = 0;
	for (unsigned i = 2; i < words->n; i++) {
		const char *k = words->w[i];

		if (strcmp(k, "ports") == 0) {
			VALUE();
			if (parse_port_range(v, &c->port_min, &c->port_max) < 0)
				goto bad_range;
		} else if (strcmp(k, "preserve_parity") == 0 ||
			   strcmp(k, "preserve_port") == 0) {
			bool *flag = strcmp(k, "preserve_parity") == 0 ?
					     &c->policy.preserve_parity :
					     &c->policy.preserve_port;

			VALUE();
			if (parse_bool(v, flag) < 0)
				return sp_fail(err, errlen,
					    "pool %s: %s %s: must be true or false",
					    c->name, k, v);
		} else if (strcmp(k, "addresses") == 0) {
			while (i + 1 < words->n &&
			       !is_pool_keyword(words->w[i + 1])) {
				struct sp_prefix *p;

				i++;
				if (c->n_prefixes == SP_POOL_MAX_PREFIXES)
					return sp_fail(err, errlen,
						    "pool %s: more than %d prefixes",
						    c->name, SP_POOL_MAX_PREFIXES);
				p = &c->prefixes[c->n_prefixes];
				if (parse_prefix(words->w[i], false, p, msg,
						 sizeof(msg)) < 0)
					return sp_fail(err, errlen, "pool %s: %s",
						    c->name, msg);
				c->n_prefixes++;
			}
		} else {
			return sp_fail(err, errlen,
				    "pool %s: unknown word '%s' (ports, preserve_parity, preserve_port, addresses)",
				    c->name, k);
		}
	}
	if (c->n_prefixes == 0)
		return sp_fail(err, errlen, "pool %s: missing addresses", c->name);
	return 0;
bad_range:
	return sp_fail(err, errlen,
		    "pool %s: ports %s: must be LOW-HIGH within 1-65535",
		    c->name, v);
}

static int
parse_rule_add(const struct words *words, struct sp_cmd_rule *c, char *err,
	       size_t errlen)
{
	const char *verb = "rule add";
	const char *v;
	char msg[96];
	uint64_t n;
	bool have_id = false, have_type = false, have_prefix = false;
	bool have_pool = false, have_to = false;

	c->proto = 0;
	for (unsigned i = 2; i < words->n; i++) {
		const char *k = words->w[i];

		if (strcmp(k, "id") == 0) {
			VALUE();
			if (parse_uint(v, 1, UINT32_MAX, &n) < 0)
				return sp_fail(err, errlen,
					    "rule add: id %s: must be 1..4294967295", v);
			c->id = (uint32_t)n;
			have_id = true;
		} else if (strcmp(k, "type") == 0) {
			VALUE();
			if (strcmp(v, "snat") == 0)
				c->kind = 0;
			else if (strcmp(v, "dnat") == 0)
				c->kind = 1;
			else
				return sp_fail(err, errlen,
					    "rule add: type %s: must be snat or dnat", v);
			have_type = true;
		} else if (strcmp(k, "prefix") == 0) {
			VALUE();
			if (parse_prefix(v, false, &c->prefix, msg,
					 sizeof(msg)) < 0)
				return sp_fail(err, errlen, "rule add: prefix %s",
					    msg);
			have_prefix = true;
		} else if (strcmp(k, "port") == 0) {
			VALUE();
			if (parse_uint(v, 0, 65535, &n) < 0)
				return sp_fail(err, errlen,
					    "rule add: port %s: must be 0..65535", v);
			c->port = (uint16_t)n;
			c->has_port = true;
		} else if (strcmp(k, "protocol") == 0) {
			VALUE();
			if (parse_protocol(v, &c->proto) < 0)
				return sp_fail(err, errlen,
					    "rule add: protocol %s: must be tcp, udp, icmp or any", v);
		} else if (strcmp(k, "pool") == 0) {
			VALUE();
			if (parse_name(verb, v, c->pool, err, errlen) < 0)
				return -1;
			have_pool = true;
		} else if (strcmp(k, "to") == 0) {
			VALUE();
			if (parse_prefix(v, false, &c->to, msg, sizeof(msg)) < 0)
				return sp_fail(err, errlen, "rule add: to %s", msg);
			have_to = true;
		} else if (strcmp(k, "to_port") == 0) {
			VALUE();
			if (parse_uint(v, 0, 65535, &n) < 0)
				return sp_fail(err, errlen,
					    "rule add: to_port %s: must be 0..65535", v);
			c->to_port = (uint16_t)n;
			c->has_to_port = true;
		} else {
			return sp_fail(err, errlen,
				    "rule add: unknown word '%s' (id, type, prefix, port, protocol, pool, to, to_port)",
				    k);
		}
	}
	if (!have_id || !have_type || !have_prefix)
		return sp_fail(err, errlen, "rule add: needs id, type and prefix");
	if (c->has_port && c->proto == 1)
		return sp_fail(err, errlen,
			    "rule %u: a port needs protocol tcp, udp or any", c->id);
	if (have_pool == have_to)
		return sp_fail(err, errlen,
			    "rule %u: needs exactly one of pool or to", c->id);
	if (c->kind == 0) {
		if (c->has_to_port)
			return sp_fail(err, errlen,
				    "rule %u: to_port: only DNAT rules rewrite the port",
				    c->id);
		if (have_to && c->to.len != 32)
			return sp_fail(err, errlen,
				    "rule %u: an SNAT 'to' is one address (/32)", c->id);
	} else {
		if (have_pool)
			return sp_fail(err, errlen,
				    "rule %u: DNAT rules translate to 'to', not to a pool",
				    c->id);
		if (c->to.len != 32 && c->to.len != c->prefix.len)
			return sp_fail(err, errlen,
				    "rule %u: a DNAT 'to' prefix must be /32 or as long as the rule's prefix",
				    c->id);
		if (c->has_to_port && !c->has_port)
			return sp_fail(err, errlen,
				    "rule %u: to_port needs port", c->id);
	}
	c->target = have_pool ? SP_TARGET_POOL : SP_TARGET_ADDR;
	return 0;
}

static int
parse_timeouts(const struct words *words, struct sp_cmd_timeouts *c,
	       char *err, size_t errlen)
{
	const char *verb = "timeouts";
	const char *v;

	for (unsigned i = 1; i < words->n; i++) {
		const char *k = words->w[i];
		unsigned t;
		uint64_t n;

		for (t = 0; t < SP_TO_MAX; t++)
			if (strcmp(k, timeout_names[t]) == 0)
				break;
		if (t == SP_TO_MAX)
			return sp_fail(err, errlen,
				    "timeouts: unknown word '%s' (udp, tcp_established, tcp_transitory, icmp)",
				    k);
		VALUE();
		if (parse_uint(v, 1, SP_TIMEOUT_MAX, &n) < 0)
			return sp_fail(err, errlen,
				    "timeouts: %s %s: must be 1..%u seconds", k,
				    v, SP_TIMEOUT_MAX);
		c->seconds[t] = (uint32_t)n;
		c->set |= 1u << t;
	}
	if (c->set == 0)
		return sp_fail(err, errlen, "timeouts: nothing to set");
	return 0;
}

static int
parse_filtering(const struct words *words, struct sp_cmd_filtering *c,
		char *err, size_t errlen)
{
	const char *verb = "filtering";
	const char *v;

	for (unsigned i = 1; i < words->n; i++) {
		const char *k = words->w[i];
		unsigned p, m;

		for (p = 0; p < SP_PI_MAX; p++)
			if (strcmp(k, proto_index_names[p]) == 0)
				break;
		if (p == SP_PI_MAX)
			return sp_fail(err, errlen,
				    "filtering: unknown word '%s' (udp, tcp, icmp)", k);
		VALUE();
		for (m = 0; m <= SP_FILTER_ADDR_PORT; m++)
			if (strcmp(v, filter_names[m]) == 0)
				break;
		if (m > SP_FILTER_ADDR_PORT)
			return sp_fail(err, errlen,
				    "filtering: %s %s: must be endpoint-independent, address-dependent or address-and-port-dependent",
				    k, v);
		c->mode[p] = (uint8_t)m;
		c->set |= 1u << p;
	}
	if (c->set == 0)
		return sp_fail(err, errlen, "filtering: nothing to set");
	return 0;
}

static int
parse_limits(const struct words *words, struct sp_cmd_limits *c, char *err,
	     size_t errlen)
{
	const char *verb = "limits";
	const char *v;

	for (unsigned i = 1; i < words->n; i++) {
		const char *k = words->w[i];
		uint64_t n;

		if (strcmp(k, "ports_per_host") != 0 &&
		    strcmp(k, "sessions_per_host") != 0)
			return sp_fail(err, errlen,
				    "limits: unknown word '%s' (ports_per_host, sessions_per_host)",
				    k);
		VALUE();
		if (parse_uint(v, 0, SP_LIMIT_MAX, &n) < 0)
			return sp_fail(err, errlen, "limits: %s %s: must be 0..%u",
				    k, v, SP_LIMIT_MAX);
		if (k[0] == 'p') {
			c->ports_per_host = (uint32_t)n;
			c->set |= 1;
		} else {
			c->sessions_per_host = (uint32_t)n;
			c->set |= 2;
		}
	}
	if (c->set == 0)
		return sp_fail(err, errlen, "limits: nothing to set");
	return 0;
}

static int
parse_logging(const struct words *words, struct sp_cmd_logging *c, char *err,
	      size_t errlen)
{
	const char *verb = "logging";
	const char *v;
	bool have_events = false;

	for (unsigned i = 1; i < words->n; i++) {
		const char *k = words->w[i];

		if (strcmp(k, "events") == 0) {
			unsigned s;

			VALUE();
			for (s = 0; s <= SP_EVENTS_FILE; s++)
				if (strcmp(v, event_sink_names[s]) == 0)
					break;
			if (s > SP_EVENTS_FILE)
				return sp_fail(err, errlen,
					    "logging: events %s: must be none, syslog or file",
					    v);
			c->events = (uint8_t)s;
			have_events = true;
		} else if (strcmp(k, "file") == 0) {
			VALUE();
			if (strlen(v) >= SP_PATH_MAX)
				return sp_fail(err, errlen,
					    "logging: file: longer than %d bytes",
					    SP_PATH_MAX - 1);
			strcpy(c->file, v);
		} else if (strcmp(k, "syslog_server") == 0 ||
			   strcmp(k, "ipfix_collector") == 0) {
			char *out = k[0] == 's' ? c->syslog_server :
						  c->ipfix_collector;

			VALUE();
			if (strlen(v) >= sizeof(c->syslog_server))
				return sp_fail(err, errlen,
					    "logging: %s %s: must be a.b.c.d:port", k, v);
			strcpy(out, v);
		} else {
			return sp_fail(err, errlen,
				    "logging: unknown word '%s' (events, file, syslog_server, ipfix_collector)",
				    k);
		}
	}
	if (!have_events)
		return sp_fail(err, errlen,
			    "logging: missing events (none, syslog or file)");
	if (c->events == SP_EVENTS_FILE && c->file[0] == '\0')
		return sp_fail(err, errlen,
			    "logging: events file needs 'file PATH', the file to append to");
	return 0;
}

static int
parse_icmp(const struct words *words, struct sp_cmd_icmp *c, char *err,
	   size_t errlen)
{
	const char *verb = "icmp";
	const char *v;

	for (unsigned i = 1; i < words->n; i++) {
		const char *k = words->w[i];
		uint64_t n;

		if (strcmp(k, "unreachable_on_exhaustion") == 0) {
			VALUE();
			if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
				return sp_fail(err, errlen,
					    "icmp: unreachable_on_exhaustion %s: must be on or off",
					    v);
			c->unreachable_on_exhaustion = v[1] == 'n';
			c->set |= 1;
		} else if (strcmp(k, "rate") == 0 || strcmp(k, "burst") == 0) {
			VALUE();
			if (parse_uint(v, 1, 1000000, &n) < 0)
				return sp_fail(err, errlen,
					    "icmp: %s %s: must be 1..1000000", k, v);
			if (k[0] == 'r') {
				c->rate = (uint32_t)n;
				c->set |= 2;
			} else {
				c->burst = (uint32_t)n;
				c->set |= 4;
			}
		} else {
			return sp_fail(err, errlen,
				    "icmp: unknown word '%s' (unreachable_on_exhaustion, rate, burst)",
				    k);
		}
	}
	if (c->set == 0)
		return sp_fail(err, errlen, "icmp: nothing to set");
	return 0;
}

/* A.B.C.D:PORT */
static int
parse_endpoint(const char *s, uint32_t *addr, uint16_t *port)
{
	char buf[24];
	const char *colon = strrchr(s, ':');
	uint64_t n;

	if (colon == NULL || (size_t)(colon - s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, (size_t)(colon - s));
	buf[colon - s] = '\0';
	if (parse_ipv4(buf, addr) < 0 || parse_uint(colon + 1, 0, 65535, &n) < 0)
		return -1;
	*port = (uint16_t)n;
	return 0;
}

/* The index of word w in names[0..n), or n. */
static unsigned
word_index(const char *w, const char *const *names, unsigned n)
{
	unsigned i = 0;

	while (i < n && strcmp(w, names[i]) != 0)
		i++;
	return i;
}

#define N_OF(a) ((unsigned)(sizeof(a) / sizeof((a)[0])))

/* `session adopt PROTO INTERNAL EXTERNAL REMOTE ORIGIN [PHASE]`; the names
 * are format.c's sp_origin_names and phase names (this parser has no DPDK) */
static int
parse_session_adopt(const struct words *words, struct sp_session_cmd *c,
		    const char *usage, char *err, size_t errlen)
{
	static const char *const origins[] = { "snat", "inbound", "dnat" };
	static const char *const phases[] = { "opening", "established",
					      "closing", "reset" };
	unsigned i;

	if (words->n != 7 && words->n != 8)
		return sp_fail(err, errlen, "session: %s", usage);
	c->action = SP_SESSION_CMD_ADOPT;
	if (parse_protocol(words->w[2], &c->proto) < 0 || c->proto == 0)
		return sp_fail(err, errlen, "session: protocol %s: must be tcp, udp or icmp",
			    words->w[2]);
	if (parse_endpoint(words->w[3], &c->int_addr, &c->int_port) < 0 ||
	    parse_endpoint(words->w[4], &c->ext_addr, &c->ext_port) < 0 ||
	    parse_endpoint(words->w[5], &c->rem_addr, &c->rem_port) < 0)
		return sp_fail(err, errlen,
			    "session adopt: endpoints must be a.b.c.d:port");
	i = word_index(words->w[6], origins, N_OF(origins));
	if (i == N_OF(origins))
		return sp_fail(err, errlen,
			    "session adopt: origin %s: must be snat, inbound or dnat",
			    words->w[6]);
	c->origin = (uint8_t)i;
	if (words->n == 8) {
		if (c->proto != 6)
			return sp_fail(err, errlen,
				    "session adopt: a phase is for TCP only");
		i = word_index(words->w[7], phases, N_OF(phases));
		if (i == N_OF(phases))
			return sp_fail(err, errlen,
				    "session adopt: phase %s: must be opening, established, closing or reset",
				    words->w[7]);
		c->tcp_phase = (uint8_t)i;
	}
	return 0;
}

static int
parse_session(const struct words *words, struct sp_session_cmd *c, char *err,
	      size_t errlen)
{
	static const char *const usage =
		"session offload|idle|onload ID tcp|udp|icmp INTERNAL REMOTE, or "
		"session adopt tcp|udp|icmp INTERNAL EXTERNAL REMOTE snat|inbound|dnat "
		"[opening|established|closing|reset] (endpoints a.b.c.d:port)";
	uint64_t id;

	if (words->n >= 2 && strcmp(words->w[1], "adopt") == 0)
		return parse_session_adopt(words, c, usage, err, errlen);
	if (words->n != 6)
		return sp_fail(err, errlen, "session: %s", usage);
	if (strcmp(words->w[1], "offload") == 0)
		c->action = SP_SESSION_CMD_OFFLOAD;
	else if (strcmp(words->w[1], "idle") == 0)
		c->action = SP_SESSION_CMD_IDLE;
	else if (strcmp(words->w[1], "onload") == 0)
		c->action = SP_SESSION_CMD_ONLOAD;
	else
		return sp_fail(err, errlen, "session %s: %s", words->w[1], usage);
	if (parse_uint(words->w[2], 1, UINT32_MAX, &id) < 0)
		return sp_fail(err, errlen, "session: id %s: must be 1..%u",
			    words->w[2], UINT32_MAX);
	c->id = (uint32_t)id;
	if (parse_protocol(words->w[3], &c->proto) < 0 || c->proto == 0)
		return sp_fail(err, errlen, "session: protocol %s: must be tcp, udp or icmp",
			    words->w[3]);
	if (parse_endpoint(words->w[4], &c->int_addr, &c->int_port) < 0)
		return sp_fail(err, errlen, "session: internal %s: must be a.b.c.d:port",
			    words->w[4]);
	if (parse_endpoint(words->w[5], &c->rem_addr, &c->rem_port) < 0)
		return sp_fail(err, errlen, "session: remote %s: must be a.b.c.d:port",
			    words->w[5]);
	return 0;
}

int
sp_cmd_parse(const char *line, struct sp_cmd *cmd, char *err, size_t errlen)
{
	char buf[2048];
	struct words words;
	const char *verb;
	uint64_t n;

	memset(cmd, 0, sizeof(*cmd));
	if (strlen(line) >= sizeof(buf))
		return sp_fail(err, errlen, "line longer than %zu bytes",
			    sizeof(buf) - 1);
	strcpy(buf, line);
	if (split(buf, &words) < 0)
		return sp_fail(err, errlen, "more than %d words", SP_MAX_WORDS);
	if (words.n == 0) {
		cmd->verb = SP_CMD_NONE;
		return 0;
	}
	verb = words.w[0];
	if (strcmp(verb, "interface") == 0) {
		cmd->verb = SP_CMD_INTERFACE;
		return parse_interface(&words, &cmd->u.iface, err, errlen);
	}
	if (strcmp(verb, "route") == 0) {
		cmd->verb = SP_CMD_ROUTE;
		return parse_route(&words, &cmd->u.route, err, errlen);
	}
	if (strcmp(verb, "neighbor") == 0) {
		cmd->verb = SP_CMD_NEIGHBOR;
		return parse_neighbor(&words, &cmd->u.neigh, err, errlen);
	}
	if (strcmp(verb, "pool") == 0) {
		cmd->verb = SP_CMD_POOL;
		return parse_pool(&words, &cmd->u.pool, err, errlen);
	}
	if (strcmp(verb, "rule") == 0) {
		if (words.n >= 2 && strcmp(words.w[1], "add") == 0) {
			cmd->verb = SP_CMD_RULE_ADD;
			return parse_rule_add(&words, &cmd->u.rule, err,
					      errlen);
		}
		if (words.n >= 2 && strcmp(words.w[1], "del") == 0) {
			cmd->verb = SP_CMD_RULE_DEL;
			if (words.n != 3 ||
			    parse_uint(words.w[2], 1, UINT32_MAX, &n) < 0)
				return sp_fail(err, errlen,
					    "rule del: needs one rule id (1..4294967295)");
			cmd->u.rule_id = (uint32_t)n;
			return 0;
		}
		return sp_fail(err, errlen, "rule: expected 'add' or 'del'");
	}
	if (strcmp(verb, "timeouts") == 0) {
		cmd->verb = SP_CMD_TIMEOUTS;
		return parse_timeouts(&words, &cmd->u.timeouts, err, errlen);
	}
	if (strcmp(verb, "filtering") == 0) {
		cmd->verb = SP_CMD_FILTERING;
		return parse_filtering(&words, &cmd->u.filtering, err, errlen);
	}
	if (strcmp(verb, "limits") == 0) {
		cmd->verb = SP_CMD_LIMITS;
		return parse_limits(&words, &cmd->u.limits, err, errlen);
	}
	if (strcmp(verb, "logging") == 0) {
		cmd->verb = SP_CMD_LOGGING;
		return parse_logging(&words, &cmd->u.logging, err, errlen);
	}
	if (strcmp(verb, "icmp") == 0) {
		cmd->verb = SP_CMD_ICMP;
		return parse_icmp(&words, &cmd->u.icmp, err, errlen);
	}
	if (strcmp(verb, "rules") == 0 && words.n == 1) {
		cmd->verb = SP_CMD_RULES;
		return 0;
	}
	if (strcmp(verb, "stats") == 0 && words.n == 1) {
		cmd->verb = SP_CMD_STATS;
		return 0;
	}
	if (strcmp(verb, "sessions") == 0) {
		cmd->verb = SP_CMD_SESSIONS;
		return parse_sessions(&words, &cmd->u.sessions, err, errlen);
	}
	if (strcmp(verb, "offload") == 0) {
		uint64_t after;

		cmd->verb = SP_CMD_OFFLOAD;
		if (words.n != 3 || strcmp(words.w[1], "after_packets") != 0)
			return sp_fail(err, errlen, "offload: offload after_packets N");
		if (parse_uint(words.w[2], 1, 255, &after) < 0)
			return sp_fail(err, errlen,
				    "offload: after_packets %s: must be 1..255",
				    words.w[2]);
		cmd->u.after_packets = (uint8_t)after;
		return 0;
	}
	if (strcmp(verb, "peer") == 0) {
		cmd->verb = SP_CMD_PEER;
		return parse_peer(&words, &cmd->u.peer, err, errlen);
	}
	if (strcmp(verb, "session") == 0) {
		cmd->verb = SP_CMD_SESSION;
		return parse_session(&words, &cmd->u.session, err, errlen);
	}
	if (strcmp(verb, "subscribe") == 0) {
		cmd->verb = SP_CMD_SUBSCRIBE;
		if (words.n != 2 || strcmp(words.w[1], "sessions") != 0)
			return sp_fail(err, errlen,
				    "subscribe: what to? (subscribe sessions)");
		return 0;
	}
	return sp_fail(err, errlen,
		    "unknown command '%s' (interface, route, neighbor, pool, rule, timeouts, filtering, limits, icmp, logging, rules, sessions, session, stats, subscribe, offload, peer)",
		    verb);
}
