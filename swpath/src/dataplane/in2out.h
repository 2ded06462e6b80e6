/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside to outside, slow path (VPP nat44-ed's in2out slow path): new flows
 * (SNAT via QNS and the allocator) and ICMP errors sent by inside hosts
 * about traffic they received. Each returns the session the fast path then
 * translates or forwards (fastpath.c), or SP_NONE when the packet was
 * consumed here: dropped and counted, handed to the worker that owns it, or
 * answered with an ICMP error.
 */
#ifndef SP_IN2OUT_H
#define SP_IN2OUT_H

#include <stdint.h>

#include "dataplane/packet.h"
#include "dataplane/sp.h"

/* A packet from inside that missed the flow index: its session, opened
 * now or just before in its burst. */
uint32_t sp_in2out_miss(struct sp_worker *w, struct rte_mbuf *m,
			struct sp_pkt *p, const struct sp_flow_key *key,
			const struct sp_runtime *rt);

/* An ICMP error from inside about a packet of one of our sessions, its
 * outer and quoted headers translated already (RFC 5508): the session,
 * whose in2out route it takes (or its hairpin, RFC 5508 sec. 6). */
uint32_t sp_in2out_icmp_error(struct sp_worker *w, struct rte_mbuf *m,
			      struct sp_pkt *p, const struct sp_runtime *rt);

#endif /* SP_IN2OUT_H */
