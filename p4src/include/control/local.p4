// SPDX-License-Identifier: Apache-2.0
//
// Traffic addressed to the router itself. Applied only to IPv4 packets that
// missed the connection tables (a session may legitimately use a router
// address as its public address). An ICMP echo request is answered here, at
// line rate; whatever else is addressed to the router is dropped by the
// NAT miss handling (LOCAL_ADDRESS) unless dnat_scope publishes the address
// (port forwarding on the router's own public address) or it is an ICMP
// error from outside (which may belong to a session).

#ifndef __LOCAL__
#define __LOCAL__

#include "../header.p4"
#include "../checksum.p4"

control LocalIngress(inout headers_t hdr,
                     inout local_metadata_t local_md) {

    action mark_local() {
        local_md.is_local = true;
    }

    // local_address: exact on IPv4 destination -> mark_local; one entry per
    // address of the router's own interfaces. Pool addresses belong here only
    // if the router should answer pings to them.
    // Miss: not for the router, nothing happens.
    table local_address {
        key = {
            hdr.ipv4.dst_addr: exact @name("ipv4_dst");
        }
        actions = {
            mark_local;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = LOCAL_ADDRESS_TABLE_SIZE;
    }

    apply {
        local_address.apply();
        // Only whole, option-less echo requests: the reply must not echo
        // options (record route would carry inside addresses out), and a
        // fragment's reply cannot be built from one fragment.
        if (local_md.is_local
                && hdr.icmp_echo.isValid()
                && hdr.icmp.icmp_type == ICMP_TYPE_ECHO_REQUEST
                && hdr.ipv4.flag_more_fragments == 0
                && !hdr.ipv4_options.isValid()) {
            // Type 8 -> 0 changes one 16-bit word of the ICMP checksum
            // coverage (type, code); the checksum does not cover IP
            // addresses, so the swap below needs no further update.
            hdr.icmp.checksum = csum16_update(hdr.icmp.checksum,
                csum16_delta16(hdr.icmp.icmp_type ++ hdr.icmp.icmp_code,
                               ICMP_TYPE_ECHO_REPLY ++ hdr.icmp.icmp_code));
            hdr.icmp.icmp_type = ICMP_TYPE_ECHO_REPLY;

            // Swapping the addresses leaves the header's sum as it was; the
            // new TTL is one word's change.
            ipv4_addr_t requester = hdr.ipv4.src_addr;
            hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
            hdr.ipv4.dst_addr = requester;
            hdr.ipv4.hdr_checksum = ipv4_checksum_word(hdr.ipv4.hdr_checksum,
                hdr.ipv4.ttl ++ hdr.ipv4.protocol,
                ICMP_ECHO_REPLY_TTL ++ hdr.ipv4.protocol);
            hdr.ipv4.ttl = ICMP_ECHO_REPLY_TTL;

            // Back to the neighbour that sent the request.
            mac_addr_t neighbour = hdr.ethernet.src_addr;
            hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
            hdr.ethernet.dst_addr = neighbour;
            local_md.egress_port = local_md.ingress_port;
            local_md.forward = true;
        }
    }
}

#endif // __LOCAL__
