// SPDX-License-Identifier: Apache-2.0
//
// Offload mode: the switch is a cache of established flows in front of one
// or more swpath instances (slow-path instances), which take every packet
// the controller would take in controller mode: new flows, hairpin, ICMP
// errors, fragments, inside RSTs and the TCP SYN/FIN/RST of sessions the
// switch holds (untranslated: the instance translates them and tracks the
// state), and outside packets for the pool that miss (sessions held only in
// software). The mode is the configuration of these two tables: empty, the
// program is in controller mode.
//
// Which instance:
//   inside zone:  slow_path_in2out, an action selector over the inside
//                 host (inside_host): one host's mappings, paired pooling
//                 and per-host limits live on one instance (RFC 4787
//                 REQ-2). The inside host is the source, but for an ICMP
//                 error: the destination of the packet it quotes, the host
//                 whose session the error is about (RFC 5508 sec. 4.2), so
//                 an error from an inside router reaches that host's
//                 instance, not the one its own address hashes to.
//   outside zone: slow_path_out2in, ternary on destination address and
//                 port: each instance owns disjoint port blocks of the pool
//                 (RFC 7422), an entry per block (has_ports 1); a
//                 lowest-priority entry per pool prefix catches what has no
//                 port (ICMP errors: the switch does not parse the packet
//                 they quote, so one instance, the default, takes them all).
//   pinned:       slow_path_pin, LPM on the inside host ahead of the
//                 selector: the hosts of rules that are not a pool's (DNAT
//                 servers, SNAT to one address) live on the instance that
//                 takes their outside packets (mostly the default's).
// Between instances (several behind one switch): an instance sends a packet
// that belongs to another (a hairpin to the other's mapping; an ICMP error
// or a fragment from outside about the other's port) back with one of that
// one's peer VIDs (>= SLOW_PATH_VID_PEER_MIN); slow_path_peer sends it on
// to that instance, untouched but for the tag its entry gives: the hand-off
// VID (a hairpin's second pass) or the relay VID (as from the outside link).
// The packet goes out of the instance's port as it arrived, with an 802.1Q
// tag whose VID is the zone it arrived from. What comes back on a
// slow-path port (zone ZONE_SLOW_PATH, VID = the zone it leaves to) is
// translated and TTL-decremented already: untagged, routed, never looked up.

#ifndef __SLOW_PATH__
#define __SLOW_PATH__

#include "../header.p4"

control SlowPathIngress(inout headers_t hdr,
                        inout local_metadata_t local_md) {

    action to_slow_path(port_t port) {
        local_md.slow_path = true;
        local_md.slow_path_port = port;
    }

    // slow_path_pin: inside-zone packets whose inside host a rule that is
    // not a pool's covers; zone exact (1), inside_host LPM ->
    // to_slow_path(port). Miss: the selector.
    table slow_path_pin {
        key = {
            local_md.zone: exact @name("zone");
            local_md.inside_host: lpm @name("inside_host");
        }
        actions = {
            to_slow_path;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = SLOW_PATH_PIN_TABLE_SIZE;
    }

    // One member per instance, one group of them all; crc16 over inside_host.
    @name("slow_path_selector")
    DECLARE_ACTION_SELECTOR(slow_path_selector, SLOW_PATH_MEMBERS, 16);

    // slow_path_in2out: inside-zone packets; exact on the zone (1) and the
    // selector over inside_host -> a member to_slow_path(port) per instance.
    // Miss: controller mode.
    table slow_path_in2out {
        key = {
            local_md.zone: exact @name("zone");
            local_md.inside_host: selector @name("inside_host");
        }
        // No default action of ours: BMv2 cannot set one on a selector
        // table (p4c warns; p4src/Makefile allows it); a miss changes nothing.
        actions = {
            to_slow_path;
        }
        TABLE_IMPLEMENTATION = slow_path_selector;
        size = SLOW_PATH_IN2OUT_TABLE_SIZE;
    }

    // slow_path_out2in: outside-zone packets; ternary on ipv4_dst, has_ports
    // (1 bit: TCP, UDP, ICMP echo) and l4_dport -> to_slow_path(port). A
    // block's entry has has_ports 1, so port 0 of a packet without ports
    // never falls in the first block.
    // Miss: controller mode (dnat_scope and NO_MAPPING as there).
    table slow_path_out2in {
        key = {
            hdr.ipv4.dst_addr: ternary @name("ipv4_dst");
            local_md.l4_ports_valid: ternary @name("has_ports");
            local_md.l4_dport: ternary @name("l4_dport");
        }
        actions = {
            to_slow_path;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = SLOW_PATH_OUT2IN_TABLE_SIZE;
    }

    apply {
        if (local_md.injected) {
            // a controller-mode packet-out: the controller decided already
        } else if (local_md.zone == ZONE_INSIDE) {
            if (local_md.is_icmp_error && local_md.icmp_quote_valid) {
                local_md.inside_host = local_md.icmp_quote_dst;
            } else {
                local_md.inside_host = hdr.ipv4.src_addr;
            }
            if (!slow_path_pin.apply().hit) {
                slow_path_in2out.apply();
            }
        } else if (local_md.zone == ZONE_OUTSIDE) {
            slow_path_out2in.apply();
        }
    }
}

// A packet an instance hands to another (a tagged frame from a slow-path
// port whose VID is a peer VID): re-tagged as the entry says (define.p4:
// SLOW_PATH_VID_HANDOFF or SLOW_PATH_VID_RELAY), out of the owner's port,
// nothing else changed (the sender translated what it could).
control SlowPathPeerIngress(inout headers_t hdr,
                            inout local_metadata_t local_md) {

    action hand_off(port_t port, bit<12> vid) {
        hdr.vlan.vid = vid;
        local_md.egress_port = port;
        local_md.forward = true;
    }

    // slow_path_peer: vid exact -> hand_off(port, vid), two entries per
    // instance (its hand-off and relay peer VIDs). Miss: drop SLOW_PATH_TAG.
    table slow_path_peer {
        key = {
            hdr.vlan.vid: exact @name("vid");
        }
        actions = {
            hand_off;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = SLOW_PATH_PEER_TABLE_SIZE;
    }

    apply {
        if (!slow_path_peer.apply().hit) {
            local_md.drop_reason = DropReason_t.SLOW_PATH_TAG;
        }
    }
}

// A packet leaving for a slow-path instance: tagged with its zone, out of
// the instance's port, as it arrived (no rewrite ran on it). (A control, as
// error_copy.p4's: an action would copy hdr and local_md in and out.)
control SendToSlowPath(inout headers_t hdr, inout local_metadata_t local_md) {
    apply {
        hdr.vlan.setValid();
        hdr.vlan.pcp = 0;
        hdr.vlan.dei = 0;
        hdr.vlan.vid = (bit<12>)local_md.zone;
        hdr.vlan.eth_type = hdr.ethernet.eth_type;
        hdr.ethernet.eth_type = ETHERTYPE_VLAN;
        local_md.egress_port = local_md.slow_path_port;
        local_md.forward = true;
    }
}

#endif // __SLOW_PATH__
