// SPDX-License-Identifier: Apache-2.0
//
// Connection-table miss handling. The switch does not run QNS: it only
// decides whether a packet without a session is in the scope of some NAT
// rule (then the controller must see it: QNS, allocate, install both
// directions, send the packet back with an INJECT packet-out) or not.
//
// Inside zone, in this order:
//   dnat_scope hit (hairpin to a published address) -> needs NAT
//   addressed to the router (local_address)          -> drop LOCAL_ADDRESS
//   snat_scope hit                                   -> needs NAT
//   otherwise                                        -> drop NO_RULE (IN-RULE-1:
//                                                       never leak an inside
//                                                       address untranslated)
// Outside zone, in this order:
//   ICMP error, or L4 not parsed (options, PNA)      -> needs NAT (RFC 5508)
//   dnat_scope hit                                   -> needs NAT
//   slow_path_out2in hit (offload mode: the pool)    -> needs NAT
//   addressed to the router                          -> drop LOCAL_ADDRESS
//   fragment                                         -> drop IPV4_FRAGMENT
//   TTL <= 1                                         -> drop TTL_EXPIRED,
//                                                       time exceeded
//   otherwise                                        -> drop NO_MAPPING
// "Needs NAT" then becomes:
//   TTL <= 1                   -> drop TTL_EXPIRED and copy TIME_EXCEEDED
//                                 (error_copy.p4): a packet routing would
//                                 discard never creates a mapping, and the
//                                 sender learns of it (traceroute)
//   fragment                   -> punt FRAGMENT: the controller keeps each
//                                 datagram's ports (virtual reassembly, RFC
//                                 4787 REQ-14) and routes it translated
//   options the target's parser
//   did not walk (PNA)         -> punt IPV4_OPTIONS: the controller checks
//                                 them, translates and routes it
//   ICMP error                 -> punt ICMP_ERROR (the controller translates
//                                 the embedded packet or drops it)
//   TCP, UDP, ICMP echo        -> punt NEW_FLOW (inside) / NEW_FLOW_DNAT
//                                 (outside)
//   any other protocol         -> drop UNSUPPORTED_L4
// (swpath decides in the same order: TTL, then fragments, then the rest.)
// In offload mode every punt goes to a slow-path instance instead
// (packet_io.p4, slow_path.p4); the TIME_EXCEEDED copies stay the
// controller's.
// Nothing that needs NAT is ever forwarded untranslated.

#ifndef __NAT_SCOPE__
#define __NAT_SCOPE__

#include "../header.p4"
#include "error_copy.p4"

control NatScopeIngress(inout headers_t hdr,
                        inout local_metadata_t local_md) {
    DropWithIcmpError() drop_with_icmp_error;

    // The packet falls under a NAT rule's prefix; the apply block decides
    // between punt and drop.
    action mark_nat_required() { }

    // snat_scope: LPM on IPv4 source of inside-zone packets that missed
    // nat_in2out -> mark_nat_required. One entry per SNAT rule prefix.
    // Miss: no rule covers the source; drop NO_RULE (swpath: drop_no_rule).
    // Routing it untranslated would leak the inside address.
    table snat_scope {
        key = {
            hdr.ipv4.src_addr: lpm @name("ipv4_src");
        }
        actions = {
            mark_nat_required;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = SNAT_SCOPE_TABLE_SIZE;
    }

    // dnat_scope: LPM on IPv4 destination of packets that missed the
    // connection table of their zone -> mark_nat_required. One entry per
    // DNAT rule prefix (published addresses).
    // Miss: outside zone, drop (NO_MAPPING): unsolicited inbound traffic
    // never creates a mapping; inside zone, go on to snat_scope.
    table dnat_scope {
        key = {
            hdr.ipv4.dst_addr: lpm @name("ipv4_dst");
        }
        actions = {
            mark_nat_required;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = DNAT_SCOPE_TABLE_SIZE;
    }

    apply {
        bool needs_nat = false;
        bool in_dnat_scope = dnat_scope.apply().hit;
        PuntReason_t new_flow_reason = PuntReason_t.NEW_FLOW;

        if (local_md.zone == ZONE_OUTSIDE) {
            new_flow_reason = PuntReason_t.NEW_FLOW_DNAT;
            // Offload mode: the pool's addresses and port blocks miss here
            // for sessions held only in software (slow_path.p4).
            // An ICMP error, or a datagram whose L4 this target did not
            // parse (opaque_l4), may be a session's: the slow path looks.
            if (local_md.is_icmp_error || local_md.opaque_l4 || in_dnat_scope
                    || local_md.slow_path) {
                needs_nat = true;
            } else if (local_md.is_local) {
                local_md.drop_reason = DropReason_t.LOCAL_ADDRESS;
            } else if (local_md.is_fragment) {
                local_md.drop_reason = DropReason_t.IPV4_FRAGMENT;
            } else if (hdr.ipv4.ttl <= 1) {
                drop_with_icmp_error.apply(local_md, DropReason_t.TTL_EXPIRED,
                                     PuntReason_t.TIME_EXCEEDED);
            } else {
                local_md.drop_reason = DropReason_t.NO_MAPPING;
            }
        } else {
            if (in_dnat_scope) {
                needs_nat = true;
            } else if (local_md.is_local) {
                local_md.drop_reason = DropReason_t.LOCAL_ADDRESS;
            } else if (snat_scope.apply().hit) {
                needs_nat = true;
            } else {
                local_md.drop_reason = DropReason_t.NO_RULE;
            }
        }

        if (needs_nat) {
            if (hdr.ipv4.ttl <= 1) {
                drop_with_icmp_error.apply(local_md, DropReason_t.TTL_EXPIRED,
                                     PuntReason_t.TIME_EXCEEDED);
            } else if (local_md.is_fragment) {
                local_md.punt_reason = PuntReason_t.FRAGMENT;
            } else if (local_md.opaque_l4) {
                // options this target's parser did not walk (pna/ipv4_options.p4)
                local_md.punt_reason = PuntReason_t.IPV4_OPTIONS;
            } else if (local_md.is_icmp_error) {
                local_md.punt_reason = PuntReason_t.ICMP_ERROR;
            } else if (local_md.l4_ports_valid) {
                local_md.punt_reason = new_flow_reason;
            } else {
                local_md.drop_reason = DropReason_t.UNSUPPORTED_L4;
            }
        }
    }
}

#endif // __NAT_SCOPE__
