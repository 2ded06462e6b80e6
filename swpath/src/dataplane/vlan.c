/* SPDX-License-Identifier: Apache-2.0 */
/*
 * 802.1Q sub-interfaces (vlan.h). The map is a short array, scanned: a port
 * has a handful of sub-interfaces (a slow-path instance two), fewer than a
 * cache line of entries, and no hash beats that.
 */
#include <rte_ether.h>

#include "dataplane/vlan.h"

struct vlan_entry {
	uint16_t port;
	uint16_t vid;                   /* 0: the port's untagged interface */
	uint16_t iface;
	uint32_t flags;                 /* the meta it starts with */
};

/* every sub-interface, and the two peer tags of each slow-path port */
static struct vlan_entry vlan_map[3 * SP_MAX_IFACES];
static unsigned n_vlan;

void
sp_vlan_setup(void)
{
	n_vlan = 0;
	for (unsigned i = 0; i < sp.n_ifaces; i++) {
		const struct sp_iface *ifc = &sp.ifaces[i];

		if (sp.port_iface[ifc->port] != SP_IFACE_TRUNK)
			continue;
		vlan_map[n_vlan++] = (struct vlan_entry){
			.port = ifc->port, .vid = ifc->vlan,
			.iface = (uint16_t)i,
		};
		if (ifc->slow_path && ifc->zone == SP_ZONE_OUTSIDE) {
			vlan_map[n_vlan++] = (struct vlan_entry){
				.port = ifc->port, .vid = SP_VID_HANDOFF,
				.iface = (uint16_t)i, .flags = SP_META_OUTSIDE,
			};
			vlan_map[n_vlan++] = (struct vlan_entry){
				.port = ifc->port, .vid = SP_VID_RELAY,
				.iface = (uint16_t)i, .flags = SP_META_RELAYED,
			};
		}
	}
}

static inline const struct vlan_entry *
lookup(uint16_t port, uint16_t vid)
{
	for (unsigned i = 0; i < n_vlan; i++)
		if (vlan_map[i].port == port && vlan_map[i].vid == vid)
			return &vlan_map[i];
	return NULL;
}

uint16_t
sp_vlan_demux(struct sp_worker *w, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t kept = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct sp_mbuf_meta *meta = sp_mbuf_meta(m);
		const struct vlan_entry *e;
		uint16_t vid = 0;

		if (m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED)
			vid = m->vlan_tci & 0xfff;
		else if (rte_pktmbuf_data_len(m) >= sizeof(struct rte_ether_hdr) +
							    sizeof(struct rte_vlan_hdr) &&
			 rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->ether_type ==
				 RTE_BE16(RTE_ETHER_TYPE_VLAN) &&
			 rte_vlan_strip(m) == 0)
			vid = m->vlan_tci & 0xfff;
		e = lookup(m->port, vid);
		if (unlikely(e == NULL)) {
			sp_drop(w, m, SP_CNT_drop_slow_path_tag);
			continue;
		}
		m->ol_flags &= ~(RTE_MBUF_F_RX_VLAN | RTE_MBUF_F_RX_VLAN_STRIPPED);
		meta->flags = e->flags;
		meta->iface = e->iface;
		if (unlikely(e->flags != 0)) {
			/* no first pass here to unwind (icmp_gen.h) */
			meta->hp_src_addr = 0;
			meta->hp_src_port = 0;
			SP_INC(w, peer_received);
		}
		pkts[kept++] = m;
	}
	return kept;
}
