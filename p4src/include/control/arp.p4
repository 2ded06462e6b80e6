// SPDX-License-Identifier: Apache-2.0
//
// ARP: the switch answers requests for the addresses it owns, its own
// interface addresses and the public pool addresses (proxy ARP, so the
// upstream router can deliver replies to pool addresses without a route),
// in place and at line rate. ARP replies are punted so the controller can
// learn next-hop MACs for routing_v4 (it may resolve them by sending ARP
// requests as DIRECT packet-outs); everything else ARP is dropped.

#ifndef __ARP__
#define __ARP__

#include "../header.p4"

control ArpIngress(inout headers_t hdr,
                   inout local_metadata_t local_md) {

    // Turn the request into the reply in place (RFC 826) and send it back
    // out of the port it came in on.
    action reply_arp(mac_addr_t mac) {
        ipv4_addr_t requested_ip = hdr.arp.target_ip;
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;
        hdr.arp.opcode = ARP_OPCODE_REPLY;
        hdr.arp.target_mac = hdr.arp.sender_mac;
        hdr.arp.target_ip = hdr.arp.sender_ip;
        hdr.arp.sender_mac = mac;
        hdr.arp.sender_ip = requested_ip;
        local_md.egress_port = local_md.ingress_port;
        local_md.forward = true;
    }

    // arp_reply: exact on (logical ingress port, ARP target IP) of an
    // Ethernet/IPv4 ARP request -> reply_arp(mac), the MAC that owns the
    // address on that port. Keyed by port so a pool address is answered
    // only on the outside port, an inside address only inside.
    // Miss: drop, ARP_IGNORED (a request for someone else's address).
    table arp_reply {
        key = {
            local_md.ingress_port: exact @name("ingress_port");
            hdr.arp.target_ip:     exact @name("arp_target_ip");
        }
        actions = {
            reply_arp;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = ARP_REPLY_TABLE_SIZE;
    }

    apply {
        bool is_ethernet_ipv4 = hdr.arp.hw_type == ARP_HW_TYPE_ETHERNET
            && hdr.arp.proto_type == ETHERTYPE_IPV4
            && hdr.arp.hw_addr_len == ARP_HW_ADDR_LEN
            && hdr.arp.proto_addr_len == ARP_PROTO_ADDR_LEN;
        if (!is_ethernet_ipv4) {
            local_md.drop_reason = DropReason_t.ARP_IGNORED;
        } else if (hdr.arp.opcode == ARP_OPCODE_REQUEST) {
            if (!arp_reply.apply().hit) {
                local_md.drop_reason = DropReason_t.ARP_IGNORED;
            }
        } else if (hdr.arp.opcode == ARP_OPCODE_REPLY) {
            local_md.punt_reason = PuntReason_t.ARP;
        } else {
            local_md.drop_reason = DropReason_t.ARP_IGNORED;
        }
    }
}

#endif // __ARP__
