// SPDX-License-Identifier: Apache-2.0
//
// IPv4 routing after translation (the lookup uses the translated
// destination): TTL check and decrement, next-hop port and MACs, and the
// egress port's MTU. A packet whose TTL would reach 0, or a DF packet bigger
// than the MTU, is dropped and copied to the controller for the ICMP error
// (error_copy.p4); a bigger packet without DF is dropped: the switch never
// fragments.

#ifndef __ROUTING__
#define __ROUTING__

#include "../header.p4"
#include "../checksum.p4"
#include "error_copy.p4"

control RoutingIngress(inout headers_t hdr,
                       inout local_metadata_t local_md) {
    DropWithIcmpError() drop_with_icmp_error;

    action set_next_hop(port_t port, mac_addr_t smac, mac_addr_t dmac) {
        local_md.egress_port = port;
        hdr.ethernet.src_addr = smac;
        hdr.ethernet.dst_addr = dmac;
        local_md.forward = true;
    }

    // routing_v4: LPM on the (translated: route_dst) IPv4 destination ->
    // set_next_hop(port, smac, dmac): the router's MAC on that port and the
    // next hop's MAC. A directly connected host needs its own /32 entry
    // (the entry carries its MAC; there is no neighbour table).
    // Miss: drop, NO_ROUTE.
    table routing_v4 {
        key = {
            local_md.route_dst: lpm @name("ipv4_dst");
        }
        actions = {
            set_next_hop;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = ROUTING_V4_TABLE_SIZE;
    }

    action set_mtu(bit<16> mtu) {
        local_md.egress_mtu = mtu;
    }

    // egress_mtu: exact on the egress port routing_v4 chose -> set_mtu(mtu):
    // the largest IPv4 packet (header included) that port sends, from the
    // configuration's [[interface]] mtu.
    // Miss: no limit.
    table egress_mtu {
        key = {
            local_md.egress_port: exact @name("egress_port");
        }
        actions = {
            set_mtu;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = EGRESS_MTU_TABLE_SIZE;
    }

    apply {
        // From a slow-path instance (offload mode): translated and
        // TTL-checked there, TTL decremented, ICMP errors sent: route only.
        bool from_slow_path = local_md.from_slow_path;
        if (hdr.ipv4.ttl <= 1 && !from_slow_path) {
            // RFC 1812 sec. 5.3.1: a packet that would leave with TTL 0 is
            // not forwarded; its source gets time exceeded.
            drop_with_icmp_error.apply(local_md, DropReason_t.TTL_EXPIRED,
                                 PuntReason_t.TIME_EXCEEDED);
        } else if (routing_v4.apply().hit) {
            if (egress_mtu.apply().hit
                    && hdr.ipv4.total_len > local_md.egress_mtu) {
                // RFC 4787 REQ-13, RFC 1191: DF set -> fragmentation needed
                // with the MTU; otherwise dropped (never fragmented).
                if (hdr.ipv4.flag_dont_fragment == 1 && !from_slow_path) {
                    drop_with_icmp_error.apply(local_md, DropReason_t.MTU_EXCEEDED,
                                         PuntReason_t.FRAG_NEEDED);
                } else {
                    local_md.drop_reason = DropReason_t.MTU_EXCEEDED;
                    local_md.forward = false;
                }
            } else if (!from_slow_path) {
                bit<8> ttl = hdr.ipv4.ttl - 1;
                hdr.ipv4.hdr_checksum = ipv4_checksum_word(hdr.ipv4.hdr_checksum,
                    hdr.ipv4.ttl ++ hdr.ipv4.protocol, ttl ++ hdr.ipv4.protocol);
                hdr.ipv4.ttl = ttl;
            }
        } else {
            local_md.drop_reason = DropReason_t.NO_ROUTE;
        }
    }
}

#endif // __ROUTING__
