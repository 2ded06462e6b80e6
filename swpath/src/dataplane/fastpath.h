/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-packet path. fastpath.c parses a burst, looks all flow keys up at
 * once (sp_nat_lookup_bulk) and translates the hits; a miss goes to
 * in2out.c / out2in.c, which open its session (core/nat.h) and give it back
 * to translate, or consume the packet (a drop, a hand-off to the worker
 * that owns it, an ICMP error). No allocation, lock or system call.
 */
#ifndef SP_FASTPATH_H
#define SP_FASTPATH_H

#include <stdint.h>

#include "dataplane/sp.h"

/* A burst received on interface iface; outside: process as outside zone. */
void sp_process_burst(struct sp_worker *w, struct rte_mbuf **pkts, uint16_t n,
		      uint16_t iface, int outside,
		      const struct sp_runtime *rt);

/* Packets from the worker's ring: any interface, grouped in runs. */
void sp_process_ring(struct sp_worker *w, struct rte_mbuf **pkts, uint16_t n,
		     const struct sp_runtime *rt);

#endif /* SP_FASTPATH_H */
