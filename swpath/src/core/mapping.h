/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A worker's endpoint-independent mappings (RFC 4787 REQ-1) and inside
 * hosts: a mapping holds the external endpoint its SNAT and inbound sessions
 * share, found by either end; a host record counts its sessions for
 * sessions_per_host (RFC 6888 REQ-4/5). The mapping and quota events of
 * RFC 6888 REQ-12 are fired here, as core.py's on_mapping.
 */
#ifndef SP_MAPPING_H
#define SP_MAPPING_H

#include <stdbool.h>
#include <stdint.h>

#include "core/table.h"

/* The mapping of an internal (side 0) or external (side 1) endpoint. */
struct sp_mapping *sp_mapping_find(const struct sp_nat *nat, uint8_t side,
				   uint8_t proto, uint32_t addr, uint16_t port,
				   uint32_t *idx);

/* Whether a mapping has a session with a remote address (RFC 4787 REQ-8). */
bool sp_mapping_has_remote(const struct sp_nat *nat, uint32_t midx,
			   uint32_t rem_addr);

/* A mapping of the internal endpoint to a (free list not empty). */
uint32_t sp_mapping_insert(struct sp_nat *nat, uint8_t proto,
			   uint32_t int_addr, uint16_t int_port,
			   const struct sp_alloc *a);

/*
 * A new mapping for key's internal endpoint (its source), by rule action
 * `action`: a port from the rule's pool. Returns SP_NAT_OK with *midx, or a
 * drop counter (quota, pool exhausted, table full).
 */
int sp_mapping_new(struct sp_nat *nat, const struct sp_runtime *rt,
		   uint64_t action, const struct sp_flow_key *key,
		   uint32_t now, uint32_t *midx);

/* Frees a mapping and its port, which starts resting; at its lease_end if
 * it is leased and that is still to come (the port is held until then). */
void sp_mapping_free(struct sp_nat *nat, uint32_t midx, uint32_t now);

/* A mapping created (its first session opened) or deleted (its last one
 * gone): an event for the observer, built only when it listens. */
static inline void
sp_mapping_event(struct sp_nat *nat, uint8_t type, const struct sp_mapping *m,
		 uint32_t now)
{
	struct sp_event ev;

	if (!sp_nat_events_heard(nat))
		return;
	ev = (struct sp_event){
		.time_ms = now, .int_addr = m->int_addr, .ext_addr = m->ext.addr,
		.int_port = m->int_port, .ext_port = m->ext.port,
		.proto = m->proto, .type = type,
	};
	nat->obs.event(nat->obs.ctx, &ev);
}

/* One session more, or one less, for an inside host. */
void sp_host_add_session(struct sp_nat *nat, uint32_t addr);
void sp_host_remove_session(struct sp_nat *nat, uint32_t addr);

/* Whether int_addr is at its session limit; the first refusal of an
 * episode is a quota event. */
bool sp_host_limit_reached(struct sp_nat *nat, const struct sp_runtime *rt,
			   uint32_t int_addr, uint32_t now);

#endif /* SP_MAPPING_H */
