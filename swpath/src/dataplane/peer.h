/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Slow-path peers: the other swpath instances behind the same P4 switch in
 * offload mode (docs/offload.md, "Several instances"). The switch steers an
 * outside packet to the instance that owns its destination port's block
 * (slow_path_out2in); some still reach an instance that does not own them,
 * and it passes them on, back through the switch, tagged with one of the
 * owner's two peer VIDs (p4src/README.md, slow_path_peer):
 *
 *   - a hairpinned packet (RFC 4787 REQ-9) for another instance's mapping,
 *     after this one translated its source, as a hairpin's first pass: the
 *     peer VID; the owner gets it tagged SP_VID_HANDOFF and takes it as the
 *     second pass (no link checks: the source is one of our addresses);
 *   - from the outside link, an ICMP error about another instance's
 *     session (the switch does not read the port in the packet it quotes,
 *     so every such error comes to the default instance; RFC 5508 sec. 6
 *     wants it translated by the owner of that session), and a fragment of
 *     another instance's flow (the switch reads no port of a fragment):
 *     the peer VID + 1, as it came; the owner gets it tagged SP_VID_RELAY
 *     and takes it as from the link (SP_META_RELAYED: never passed on
 *     again, whatever it thinks of the owner).
 *
 * Ownership is the switch's: a pool address with a port in an instance's
 * block is that instance's, everything else (DNAT and SNAT `to` addresses,
 * ports in no block, no port at all) the default instance's (the one
 * marked `default`, or the first). This is cold
 * code: only hairpins and ICMP errors from outside that miss ask.
 */
#ifndef SP_PEER_H
#define SP_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/sp.h"

#define SP_MAX_PEERS 64         /* the switch's slow_path_peer table */

struct sp_peer {
	uint16_t vid;           /* hairpins; what is relayed: vid + 1 */
	uint16_t port_min, port_max;
};

struct sp_peers {
	unsigned n;             /* instances, this one included; 0: alone */
	unsigned self;          /* this one's index */
	unsigned deflt;         /* the default instance's index */
	uint16_t iface;         /* the outside slow-path sub-interface */
	uint16_t neigh;         /* the switch on it (a static neighbour) */
	bool has_self;
	bool has_default;
	struct sp_peer p[SP_MAX_PEERS];
};

/* Filled at start-up by the `peer` commands (control/peers.c), read-only
 * once the workers run. */
extern struct sp_peers sp_peers;

/* The index of the instance that owns external (addr, port), host order;
 * has_port 0 for a packet without one. */
unsigned sp_peer_owner(uint32_t addr, uint16_t port, bool has_port);

/* Sends m, as it is, to instance owner through the switch: a hairpin's
 * second pass, or (relay) a packet from the outside link. */
void sp_peer_send(struct sp_worker *w, struct rte_mbuf *m, unsigned owner,
		  bool relay);

/* The owner of an outside packet's external end, when it is another
 * instance; -1 when it is this one or there are no peers. */
int sp_peer_elsewhere(struct rte_mbuf *m);

/* The same for a fragment's datagram, by the ports of its first fragment
 * (network order, as in a flow key). */
int sp_peer_elsewhere_port(rte_be32_t dst, rte_be16_t dport);

#endif /* SP_PEER_H */
