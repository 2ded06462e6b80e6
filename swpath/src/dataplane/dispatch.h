/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which worker owns a packet, computed as the NIC computes it (core/rss.h):
 * the RSS tables from DPDK's Toeplitz hash, the owner of a packet before it
 * hits a session, and software dispatch (worker 0 receives and spreads) for
 * devices without RSS on the fields swpath needs (docs/swpath.md,
 * "Dispatch modes").
 */
#ifndef SP_DISPATCH_H
#define SP_DISPATCH_H

#include <stdint.h>

#include "core/rss.h"
#include "dataplane/sp.h"

/* The default key (the Microsoft RSS verification key most NICs ship). */
extern const uint8_t sp_rss_default_key[SP_RSS_KEY_LEN];

/*
 * Fills the tables for this key from rte_softrss, a RETA of reta_size
 * entries (a power of two, <= SP_RETA_MAX) spreading n_queues queues
 * round-robin (entry i -> i % n).
 */
void sp_rss_init(struct sp_rss *rss, const uint8_t *key, unsigned reta_size,
		 unsigned n_queues);

/* The worker that owns a packet received on interface iface before it
 * hits a session: the NIC's hash of the zone's fields, in software. */
unsigned sp_dispatch_owner(struct rte_mbuf *m, uint16_t iface);

/* The same for a packet arriving in zone (SP_ZONE_*), whatever its port. */
unsigned sp_owner_of(struct rte_mbuf *m, unsigned zone);

/* An outside packet's external (address, port), host order: its
 * destination, or an ICMP error's quoted source; 0 when it has none. */
int sp_outside_end(struct rte_mbuf *m, uint32_t *addr, uint16_t *port);

/*
 * Software RSS (worker 0): passes each packet of a burst from iface to the
 * ring of the worker that owns it, and keeps its own, compacted at the
 * front of pkts in order; returns how many it kept.
 */
uint16_t sp_dispatch_burst(struct sp_worker *w, struct rte_mbuf **pkts,
			   uint16_t n, uint16_t iface);

#endif /* SP_DISPATCH_H */
