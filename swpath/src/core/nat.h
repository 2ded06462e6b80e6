/* SPDX-License-Identifier: Apache-2.0 */
/*
 * New-flow decisions of one worker: core.py's new_flow / _outbound /
 * _inbound / _dnat, with the same refusals (each one a counter), and the
 * worker that owns a flow before it has a session. A miss of the fast path
 * comes here; a hit never does.
 */
#ifndef SP_NAT_H
#define SP_NAT_H

#include <stdint.h>

#include "core/table.h"

/*
 * A new flow seen on an inside port (key as in the packet, tcp_flags its TCP
 * flags or 0). If check_owner and the flow belongs to another worker,
 * returns SP_NAT_HANDOFF with that worker in *owner. On SP_NAT_OK, *sidx is
 * the session. A TCP RST finds its session but never opens one
 * (SP_CNT_drop_rst_no_session).
 */
int sp_nat_outbound(struct sp_nat *nat, const struct sp_runtime *rt,
		    const struct sp_flow_key *key, uint8_t tcp_flags,
		    uint32_t now, int check_owner, uint32_t *sidx,
		    unsigned *owner);

/* The same for a packet seen on an outside port (DNAT, mapping + filter). */
int sp_nat_inbound(struct sp_nat *nat, const struct sp_runtime *rt,
		   const struct sp_flow_key *key, uint8_t tcp_flags,
		   uint32_t now, int check_owner, uint32_t *sidx,
		   unsigned *owner);

/*
 * The worker that owns a flow from outside to external (addr, port), host
 * order, before it has a session: a DNAT rule's inside host's worker, else
 * the one the RSS partition gives the endpoint (core/rss.h).
 */
unsigned sp_nat_owner_external(const struct sp_nat *nat, uint8_t proto,
			       uint32_t addr, uint16_t port);

/*
 * Fetches ahead what sp_nat_outbound (outside = 0) or sp_nat_inbound would
 * read first for key's mapping: its bucket in stage 0, then the bucket's
 * first mapping in stage 1. The fast path calls both stages over a burst's
 * misses before it opens their sessions one by one, so the misses' cache
 * and TLB misses overlap instead of queueing.
 */
void sp_nat_prefetch_miss(const struct sp_nat *nat,
			  const struct sp_flow_key *key, int outside,
			  unsigned stage);

#endif /* SP_NAT_H */
