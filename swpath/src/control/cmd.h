/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The swpath command language (docs/swpath-commands.md): one line, one
 * command, parsed into a struct sp_cmd. Parsing only checks syntax, ranges
 * and one value against another; whether names exist and ports are present
 * is checked when the command is applied (control.c), so the same parser
 * serves the --commands file and the control socket. The language is
 * described once, in swpath/spec/commands.toml: the parser works by the
 * table generated from it (cmd_table.h), as the controller's writer works
 * by the vocabulary generated from it. Plain C, no DPDK.
 */
#ifndef SP_CMD_H
#define SP_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/adopt.h"           /* struct sp_session_cmd */
#include "core/allocator.h"       /* SP_POOL_MAX_PREFIXES */
#include "core/session.h"         /* struct sp_session_filter */
#include "core/types.h"
#include "persist/events.h"       /* enum sp_event_sink, SP_PATH_MAX */
#include "util/buf.h"
#include "util/text.h"

/* An interface's MTU when it names none (an IPv4 packet, header included;
 * the range is the language's, commands.toml). */
#define SP_MTU_DEFAULT 1500

enum sp_verb {
	SP_CMD_NONE = 0, /* blank or comment line */
	SP_CMD_INTERFACE,
	SP_CMD_ROUTE,
	SP_CMD_NEIGHBOR,
	SP_CMD_POOL,
	SP_CMD_RULE_ADD,
	SP_CMD_RULE_DEL,
	SP_CMD_TIMEOUTS,
	SP_CMD_FILTERING,
	SP_CMD_LIMITS,
	SP_CMD_LOGGING,
	SP_CMD_ICMP,
	SP_CMD_RULES,
	SP_CMD_SESSIONS,
	SP_CMD_STATS,
	SP_CMD_SUBSCRIBE,       /* subscribe sessions: the event stream */
	SP_CMD_SESSION,         /* session offload|idle: offload mode */
	SP_CMD_OFFLOAD,         /* offload after_packets N */
	SP_CMD_PEER,            /* peer vid V ports LOW-HIGH [self] [default] */
	SP_CMD_OFFLOAD_LEARN,   /* offload learn on|off */
	SP_CMD_OFFLOAD_LEASE,   /* offload lease KIND class N seconds S */
	SP_CMD_OFFLOAD_FRESH,   /* offload fresh */
	SP_CMD_NEIGHBORS,       /* the neighbour table (JSON) */
	SP_CMD_NEIGHBOR_DEL,    /* neighbor del A dev NAME: a configured one */
	SP_CMD_STARTUP,         /* the command file, written back */
	SP_CMD_ROUTE_DEL,       /* route del PREFIX: at run time */
	SP_CMD_ROUTES,          /* the route table (JSON) */
};

/* When a verb may be applied: the command file, the control socket at run
 * time, or both. */
enum sp_cmd_when {
	SP_WHEN_ANY = 0,
	SP_WHEN_STARTUP = 1,
	SP_WHEN_RUNTIME = 2,
};


struct sp_cmd_interface {
	char name[SP_NAME_MAX];
	uint8_t zone;
	bool has_addr;
	bool has_mac;
	uint16_t port;
	uint16_t mtu;          /* 0: SP_MTU_DEFAULT */
	uint16_t vlan;         /* 802.1Q VID of a sub-interface, 0: untagged */
	bool slow_path;        /* the link to a switch in offload mode */
	struct sp_prefix addr; /* the router's address (addr) and link length */
	uint8_t mac[6];
};

struct sp_cmd_route {
	struct sp_prefix prefix;
	char dev[SP_NAME_MAX];
	bool has_via;
	uint32_t via;
	bool has_source;
	uint32_t source;
};

struct sp_cmd_neighbor {
	uint32_t addr;
	uint8_t mac[6];
	char dev[SP_NAME_MAX];
};

struct sp_cmd_pool {
	char name[SP_NAME_MAX];
	uint16_t port_min, port_max;
	struct sp_port_policy policy;
	uint32_t n_prefixes;
	struct sp_prefix prefixes[SP_POOL_MAX_PREFIXES];
};

struct sp_cmd_rule {
	uint32_t id;
	uint8_t kind;   /* enum qns_kind */
	uint8_t proto;  /* 6, 17, 1 or 0 (any) */
	bool has_port;
	uint16_t port;
	struct sp_prefix prefix;
	bool has_pool;  /* SNAT to a pool, */
	bool has_to;    /* or to one address; DNAT to an address or prefix */
	char pool[SP_NAME_MAX];
	struct sp_prefix to;
	bool has_to_port;
	uint16_t to_port;
};

struct sp_cmd_timeouts {
	uint8_t set;                  /* bit i: seconds[i] given */
	uint32_t seconds[SP_TO_MAX];
};

struct sp_cmd_filtering {
	uint8_t set;                  /* bit i: mode[i] given */
	uint8_t mode[SP_PI_MAX];
};

/* The bits of sp_cmd_limits.set and sp_cmd_icmp.set. */
enum sp_limit_bit {
	SP_LIMIT_PORTS = 0,
	SP_LIMIT_SESSIONS = 1,
};

enum sp_icmp_bit {
	SP_ICMP_SET_UNREACHABLE = 0,
	SP_ICMP_SET_RATE = 1,
	SP_ICMP_SET_BURST = 2,
};

struct sp_cmd_limits {
	uint8_t set;                  /* 1 << SP_LIMIT_*: given */
	uint32_t ports_per_host;
	uint32_t sessions_per_host;
};

struct sp_cmd_logging {
	uint8_t events;               /* enum sp_event_sink */
	char file[SP_PATH_MAX];       /* with SP_EVENTS_FILE */
	char syslog_server[32];       /* "a.b.c.d:port" (RFC 5424 over UDP) or "" */
	char ipfix_collector[32];     /* "a.b.c.d:port" (IPFIX over UDP) or "" */
	uint32_t syslog_enterprise;   /* SD-ID nat@N (RFC 5424 sec. 7.2.2) */
	uint32_t ipfix_domain;        /* observation domain (RFC 7011 sec. 3.1) */
	uint32_t nat_instance;        /* natInstanceID (RFC 8158 sec. 4.1.1) */
	bool ipfix_sessions;          /* NAT44 session records (natEvent 4, 5) */
};

/* The ICMP errors the NAT originates (icmp_gen.h). */
struct sp_cmd_icmp {
	uint8_t set;    /* 1 << SP_ICMP_SET_*: given */
	bool unreachable_on_exhaustion;
	uint32_t rate;  /* errors per second, all workers together */
	uint32_t burst;
};

enum sp_sessions_action {
	SP_SESSIONS_LIST = 0,
	SP_SESSIONS_DELETE = 1,  /* the matching ones (at least one filter) */
	SP_SESSIONS_FLUSH = 2,   /* all, or the matching ones */
};

struct sp_cmd_sessions {
	uint8_t action;         /* enum sp_sessions_action */
	uint32_t limit;         /* list: most rows; 0 = all */
	struct sp_session_filter filter;
};

/* `peer vid V ports LOW-HIGH [self] [default]`: one slow-path instance
 * behind the switch, whether it is this one, and whether it takes what no
 * block names (peer.h; none marked: the first). */
struct sp_cmd_peer {
	uint16_t vid;           /* its peer VID (slow_path_peer) */
	uint16_t port_min, port_max;    /* its port block of the pools */
	bool self;
	bool is_default;
};

/* `offload lease KIND class N seconds S`: sessions of timeout kind KIND are
 * tagged for the switch to learn under its timeout class N, whose entries
 * live S seconds (core/learn.h). */
struct sp_cmd_lease {
	uint8_t kind;           /* enum sp_timeout */
	uint8_t lease_class;    /* 0..SP_LEARN_CLASSES - 1 */
	uint32_t seconds;
};

struct sp_cmd {
	enum sp_verb verb;
	union {
		struct sp_cmd_interface iface;
		struct sp_cmd_route route;
		struct sp_cmd_neighbor neigh;
		struct sp_cmd_pool pool;
		struct sp_cmd_rule rule;
		uint32_t rule_id;
		struct sp_cmd_timeouts timeouts;
		struct sp_cmd_filtering filtering;
		struct sp_cmd_limits limits;
		struct sp_cmd_logging logging;
		struct sp_cmd_icmp icmp;
		struct sp_cmd_sessions sessions;
		struct sp_session_cmd session;
		struct sp_cmd_peer peer;
		uint8_t after_packets;
		bool learn;
		struct sp_cmd_lease lease;
	} u;
};

/*
 * Parses one line (no trailing newline needed). Returns 0 and fills *cmd
 * (verb SP_CMD_NONE for a blank or comment line), or -1 with a message in
 * err ("rule add: port 70000: must be 0..65535").
 */
int sp_cmd_parse(const char *line, struct sp_cmd *cmd, char *err, size_t errlen);

/*
 * The line of a parsed command, as the controller writes it (newline not
 * included): its words, then every argument and keyword given, in the
 * table's order. sp_cmd_parse of it gives cmd back.
 */
void sp_cmd_format(const struct sp_cmd *cmd, struct sp_buf *b);

/* A verb's word(s) ("rule add"), when it may be applied, whether it
 * answers in JSON (the status-socket form: sessions, stats), and whether
 * applying it at run time is logged (an operator's change: commands.toml's
 * audit). */
const char *sp_cmd_verb_name(enum sp_verb verb);
enum sp_cmd_when sp_cmd_when(enum sp_verb verb);
bool sp_verb_is_json(enum sp_verb verb);
bool sp_verb_is_audited(enum sp_verb verb);

#endif /* SP_CMD_H */
