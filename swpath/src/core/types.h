/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The values the configuration, the NAT core and the data path share: a
 * prefix, the zones, the filtering modes (RFC 4787 sec. 5), the per-protocol
 * and per-timeout indexes, a pool's port policy. The leaf of the core (as the
 * controller's values layer: quicknat/addr.py, rules.py): plain C, no DPDK,
 * no other header of this project.
 */
#ifndef SP_TYPES_H
#define SP_TYPES_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

/* Names of interfaces and pools, their terminating NUL included. */
#define SP_NAME_MAX 32

struct sp_prefix {
	uint32_t addr; /* host byte order, host bits zero */
	uint8_t len;
};

static inline uint32_t
sp_prefix_mask(uint8_t len)
{
	return len == 0 ? 0 : ~0u << (32 - len);
}

/* Whether two prefixes share an address. */
static inline bool
sp_prefixes_overlap(const struct sp_prefix *a, const struct sp_prefix *b)
{
	uint32_t mask = sp_prefix_mask(a->len < b->len ? a->len : b->len);

	return (a->addr & mask) == (b->addr & mask);
}

enum sp_zone {
	SP_ZONE_INSIDE = 0,
	SP_ZONE_OUTSIDE = 1,
};

/* RFC 4787 sec. 5 filtering modes. */
enum sp_filter {
	SP_FILTER_EIM = 0,       /* endpoint-independent */
	SP_FILTER_ADDR = 1,      /* address-dependent */
	SP_FILTER_ADDR_PORT = 2, /* address-and-port-dependent */
};

/* Per-protocol arrays (filtering, port states) are indexed by these. */
enum sp_proto_index {
	SP_PI_TCP = 0,
	SP_PI_UDP = 1,
	SP_PI_ICMP = 2,
	SP_PI_MAX = 3,
};

static inline unsigned
sp_proto_index(uint8_t proto)
{
	return proto == IPPROTO_TCP ? SP_PI_TCP :
	       proto == IPPROTO_UDP ? SP_PI_UDP : SP_PI_ICMP;
}

/* The idle timeouts (docs/nat-behavior.md sec. 9): which one a session
 * has now is sp_session_timeout_ms's answer (core/session.h). */
enum sp_timeout {
	SP_TO_UDP = 0,
	SP_TO_TCP_EST = 1,
	SP_TO_TCP_TRANS = 2,
	SP_TO_ICMP = 3,
	SP_TO_MAX = 4,
};

/* Offload's learn mode (core/learn.h): the switch's timeout classes, as
 * p4c-dpdk's learner tables have them, and "no class". */
#define SP_LEARN_CLASSES 8
#define SP_LEARN_NONE 0xff

/* How a pool picks external ports (RFC 4787 REQ-4; TOML [[pool]] fields). */
struct sp_port_policy {
	bool preserve_parity;   /* even internal port -> even external port */
	bool preserve_port;     /* the internal port itself when it is free */
};

#endif /* SP_TYPES_H */
