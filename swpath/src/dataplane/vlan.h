/* SPDX-License-Identifier: Apache-2.0 */
/*
 * 802.1Q sub-interfaces: several interfaces on one DPDK port, one VID each
 * (and at most one untagged). This is how a slow-path instance sees the P4
 * switch in offload mode: the switch tags each miss with the zone it
 * arrived from (p4src/README.md, "The slow-path tag"), so the zones are two
 * sub-interfaces of the one port to the switch.
 *
 * Receive: sp_vlan_demux() picks each frame's interface from its VID (the
 * PMD may have put the tag in vlan_tci already) and strips the tag, so
 * everything after it sees an untagged frame on an interface, as on any
 * other port. Send: sp_vlan_tag() puts the interface's tag back in front.
 */
#ifndef SP_VLAN_H
#define SP_VLAN_H

#include "contract/p4_constants.h"
#include "dataplane/sp.h"

/* The tags of a packet another instance passed to this one (peer.h), both
 * on the port's outside slow-path sub-interface: a hairpin's second pass
 * (SP_META_OUTSIDE), or a packet from the outside link as it came
 * (SP_META_RELAYED). The P4 program's numbers (define.p4, generated). */
#define SP_VID_HANDOFF P4_SLOW_PATH_VID_HANDOFF
#define SP_VID_RELAY P4_SLOW_PATH_VID_RELAY

/* Builds the (port, VID) -> interface map from sp.ifaces; start-up only. */
void sp_vlan_setup(void);

/*
 * Frames of a port with sub-interfaces: sets each one's meta (flags 0, or
 * those of a peer's tag; its interface), untagged; drops, counted drop_slow_path_tag, a frame whose
 * VID no interface has (or untagged, when the port has no untagged
 * interface). Returns how many are left, compacted in order.
 */
uint16_t sp_vlan_demux(struct sp_worker *w, struct rte_mbuf **pkts,
		       uint16_t n);

/* Tags m for sub-interface ifc; 0, or -1 when m has no room (never with
 * the mempool's headroom). */
static inline int
sp_vlan_tag(const struct sp_iface *ifc, struct rte_mbuf *m)
{
	m->vlan_tci = ifc->vlan;
	return rte_vlan_insert(&m);
}

#endif /* SP_VLAN_H */
