// SPDX-License-Identifier: Apache-2.0
//
// IPv4 routing after translation (the lookup uses the translated
// destination): TTL check and decrement, next-hop port and MACs.

#ifndef __ROUTING__
#define __ROUTING__

#include "../header.p4"

control RoutingIngress(inout headers_t hdr,
                       inout local_metadata_t local_md) {

    action set_next_hop(PortId_t port, mac_addr_t smac, mac_addr_t dmac) {
        local_md.egress_port = port;
        hdr.ethernet.src_addr = smac;
        hdr.ethernet.dst_addr = dmac;
        local_md.forward = true;
    }

    // routing_v4: LPM on the (translated) IPv4 destination ->
    // set_next_hop(port, smac, dmac): the router's MAC on that port and the
    // next hop's MAC. A directly connected host needs its own /32 entry
    // (the entry carries its MAC; there is no neighbour table).
    // Miss: drop, NO_ROUTE.
    table routing_v4 {
        key = {
            hdr.ipv4.dst_addr: lpm @name("ipv4_dst");
        }
        actions = {
            set_next_hop;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = ROUTING_V4_TABLE_SIZE;
    }

    apply {
        // RFC 1812 sec. 5.3.1: a packet that would leave with TTL 0 is not
        // forwarded.
        if (hdr.ipv4.ttl <= 1) {
            local_md.drop_reason = DropReason_t.TTL_EXPIRED;
        } else if (routing_v4.apply().hit) {
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
            local_md.ipv4_changed = true;
        } else {
            local_md.drop_reason = DropReason_t.NO_ROUTE;
        }
    }
}

#endif // __ROUTING__
