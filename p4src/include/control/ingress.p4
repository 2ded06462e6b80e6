// SPDX-License-Identifier: Apache-2.0
//
// The ingress of every target: orders the feature controls and leaves the
// decision in local_md (forward and egress_port, or drop_reason). The
// target's pipeline.p4 runs it between what only it knows (the parser's and
// the checksum's verdicts in, the architecture's forwarding calls out).
//
// Order:
//   packet-out decode -> (DIRECT: out, nothing else runs;
//                         ROUTE: routing_v4 only, the controller translated)
//   parser / checksum errors -> port_zone ->
//   slow-path port: untag -> routing_v4 only (translated by swpath;
//                   a learn tag: nat learns the session first, then the
//                   tag goes too);
//                   a peer VID: slow_path_peer, out to that instance
//   ARP:  arp_reply
//   IPv4: input_check (flags, ports, addresses) -> slow_path_pin /
//         slow_path_in2out |
//         slow_path_out2in (offload mode) -> nat_in2out | nat_out2in
//         hit:  decide the rewrite -> routing_v4 (on the translated
//               destination)
//         miss: local_address (echo reply) -> dnat_scope / snat_scope
//               -> punt | drop (nothing leaves untranslated)
//   punt_meter (offload mode: tag, to the slow-path instance)
//   -> drop_counter; a leaving NAT hit is rewritten last (NatRewriteIngress)

#ifndef __INGRESS__
#define __INGRESS__

#include "../header.p4"
#include "packet_io.p4"
#include "port_zone.p4"
#include "arp.p4"
#include "input_check.p4"
#include "local.p4"
#include "nat.p4"
#include "nat_scope.p4"
#include "slow_path.p4"
#include "routing.p4"

control QuickNatIngressCore(inout headers_t hdr,
                            inout local_metadata_t local_md) {

    PacketOutIngress() packet_out_decap;
    PortZoneIngress() zone;
    ArpIngress() arp;
    InputCheckIngress() input_check;
    LocalIngress() local;
    NatIngress() nat;
    NatRewriteIngress() nat_rewrite;
    NatScopeIngress() nat_scope;
    SlowPathIngress() slow_path;
    SlowPathPeerIngress() slow_path_peer;
    RoutingIngress() routing;
    PacketInIngress() punt;

    // Every dropped packet, by DropReason_t (define.p4): tests assert on it.
    DECLARE_COUNTER(drop_counter, DROP_REASON_SLOTS);

    apply {
        packet_out_decap.apply(hdr, local_md);

        // (comparisons before negations in && and ||: p4c-dpdk's
        // LogicalExpressionUnroll takes nothing else on the left)
        if (local_md.drop_reason == DropReason_t.NONE
                && !local_md.packet_out_direct) {
            if (local_md.source_routed) {
                local_md.drop_reason = DropReason_t.IP_OPTIONS;
            } else if (local_md.parser_failed) {
                local_md.drop_reason = DropReason_t.PARSER_ERROR;
            } else if (local_md.checksum_failed) {
                local_md.drop_reason = DropReason_t.IPV4_CHECKSUM;
            } else {
                zone.apply(hdr, local_md);
            }

            // The 802.1Q tag is the slow-path tag: only a slow-path port
            // carries it, and always (slow_path.p4).
            if (local_md.drop_reason == DropReason_t.NONE) {
                if (local_md.zone == ZONE_SLOW_PATH) {
                    if (!hdr.vlan.isValid()) {
                        local_md.drop_reason = DropReason_t.SLOW_PATH_TAG;
                    } else if (hdr.vlan.vid == (bit<12>)ZONE_INSIDE
                               || hdr.vlan.vid == (bit<12>)ZONE_OUTSIDE) {
                        hdr.ethernet.eth_type = hdr.vlan.eth_type;
                        hdr.vlan.setInvalid();
                        local_md.from_slow_path = true;
                        if (hdr.learn.isValid()) {
                            // learned from below (nat.p4) on a target
                            // that learns; stripped on every target
                            local_md.learning = TARGET_LEARNS == 1;
                            hdr.ethernet.eth_type = hdr.learn.eth_type;
                        }
                    } else {
                        // for another instance, or a drop (SLOW_PATH_TAG)
                        slow_path_peer.apply(hdr, local_md);
                    }
                } else if (hdr.vlan.isValid()) {
                    local_md.drop_reason = DropReason_t.UNSUPPORTED_ETHERTYPE;
                }
            }

            if (local_md.drop_reason == DropReason_t.NONE && !local_md.forward) {
                if (hdr.arp.isValid()) {
                    if (local_md.from_slow_path) {
                        // instances use static neighbours: nothing to answer
                        local_md.drop_reason = DropReason_t.ARP_IGNORED;
                    } else {
                        arp.apply(hdr, local_md);
                    }
                } else if (hdr.ipv4.isValid()) {
                    local_md.route_dst = hdr.ipv4.dst_addr;
                    if (!local_md.from_slow_path) {
                        input_check.apply(hdr, local_md);
                    }
                    if (local_md.drop_reason == DropReason_t.NONE) {
                        bool translate = !local_md.skip_nat && !local_md.from_slow_path;
                        if (translate) {
                            slow_path.apply(hdr, local_md);
                        }
                        // (a learn tag: nat learns the session, decides nothing)
                        if (translate || local_md.learning) {
                            nat.apply(hdr, local_md);
                        }
                        if (!translate) {
                            local_md.route_ipv4 = true;
                        } else if (!local_md.nat.hit) {
                            local.apply(hdr, local_md);
                            if (!local_md.forward) {
                                nat_scope.apply(hdr, local_md);
                            }
                        }
                        if (local_md.route_ipv4) {
                            routing.apply(hdr, local_md);
                        }
                    }
                } else {
                    local_md.drop_reason = DropReason_t.UNSUPPORTED_ETHERTYPE;
                }
            }

            punt.apply(hdr, local_md);
            hdr.learn.setInvalid();

            if (local_md.drop_reason == DropReason_t.NONE && !local_md.forward) {
                local_md.drop_reason = DropReason_t.NO_DECISION;
            }
        }

        if (local_md.drop_reason != DropReason_t.NONE) {
            COUNT(drop_counter, (bit<8>)local_md.drop_reason);
            // dropped; but for a target without clones, sent up as the
            // copy it could not make (packet_io.p4)
            local_md.forward = local_md.punt_dropped;
        } else if (local_md.nat.hit && local_md.route_ipv4
                   && local_md.egress_port != CPU_PORT) {
            // a NAT hit that leaves: only now is the packet rewritten, so
            // that what was dropped or sent up is as it arrived
            nat_rewrite.apply(hdr, local_md);
        }
    }
}

#endif // __INGRESS__
