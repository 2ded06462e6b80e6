/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Outside to inside, slow path: new flows from outside (DNAT rules, or an
 * existing mapping that the filtering mode lets in; never a new mapping),
 * and ICMP errors about packets we translated out. As in2out.h: the session
 * the fast path translates or forwards, or SP_NONE when the packet was
 * consumed here (dropped, handed to its worker or to the peer instance
 * that owns it).
 */
#ifndef SP_OUT2IN_H
#define SP_OUT2IN_H

#include <stdint.h>

#include "dataplane/packet.h"
#include "dataplane/sp.h"

uint32_t sp_out2in_miss(struct sp_worker *w, struct rte_mbuf *m,
			struct sp_pkt *p, const struct sp_flow_key *key,
			const struct sp_runtime *rt);

/* An ICMP error from outside about a packet of one of our sessions, its
 * headers translated already: the session, whose out2in route it takes. */
uint32_t sp_out2in_icmp_error(struct sp_worker *w, struct rte_mbuf *m,
			      struct sp_pkt *p, const struct sp_runtime *rt);

#endif /* SP_OUT2IN_H */
