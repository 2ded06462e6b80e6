// SPDX-License-Identifier: Apache-2.0
//
// The input contract's field rules that the parser cannot express
// (docs/nat-behavior.md): TCP flag combinations (IN-TCP-2), port 0
// (IN-L4-1), martian and non-unicast addresses and NAT-owned sources
// (IN-IP-5, IN-IP-6). Applied to every IPv4 packet before the connection
// tables, so a packet that breaks a rule neither opens nor refreshes a
// session; swpath makes the same checks in the same order (sp_parse, then
// sp_address_check).
//
// Packets the controller sends (INJECT, ROUTE) are checked for non-unicast
// destinations only: they passed this check when they first arrived, and a
// translated ICMP error carries a NAT-owned source by design.

#ifndef __INPUT_CHECK__
#define __INPUT_CHECK__

#include "../header.p4"

control InputCheckIngress(inout headers_t hdr,
                          inout local_metadata_t local_md) {

    action mark_owned() { }

    // owned_source: LPM on the IPv4 source -> mark_owned. One entry per
    // NAT-owned prefix (pools, SNAT `to` addresses, published DNAT
    // prefixes). Hit: the packet claims to come from the NAT itself, which
    // only a spoofer does (it could reach a hairpinned session or pose as a
    // mapping's external endpoint): drop MARTIAN. Miss: go on.
    table owned_source {
        key = {
            hdr.ipv4.src_addr: lpm @name("ipv4_src");
        }
        actions = {
            mark_owned;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = OWNED_SOURCE_TABLE_SIZE;
    }

    apply {
        bit<8> src8 = hdr.ipv4.src_addr[31:24];
        bit<8> dst8 = hdr.ipv4.dst_addr[31:24];
        bit<8> flags = hdr.tcp.flags & TCP_FLAGS_CHECKED;

        if (local_md.injected) {
            // checked on the way in; only the destination is checked again
        } else if (hdr.tcp.isValid()
                && flags != TCP_FLAG_SYN
                && flags != (TCP_FLAG_SYN | TCP_FLAG_URG)
                && flags != (TCP_FLAG_SYN | TCP_FLAG_ACK)
                && flags != TCP_FLAG_RST
                && flags != (TCP_FLAG_RST | TCP_FLAG_ACK)
                && flags != (TCP_FLAG_FIN | TCP_FLAG_ACK)
                && flags != (TCP_FLAG_FIN | TCP_FLAG_ACK | TCP_FLAG_URG)
                && flags != TCP_FLAG_ACK
                && flags != (TCP_FLAG_ACK | TCP_FLAG_URG)) {
            // IN-TCP-2: SYN+FIN, SYN+RST, no flag, FIN without ACK, ...
            local_md.drop_reason = DropReason_t.BAD_TCP_FLAGS;
        } else if ((hdr.tcp.isValid() || hdr.udp.isValid())
                && (local_md.l4_sport == 0 || local_md.l4_dport == 0)) {
            local_md.drop_reason = DropReason_t.PORT_ZERO;
        }
        if (local_md.drop_reason != DropReason_t.NONE) {
            // dropped above
        } else if (hdr.ipv4.dst_addr[31:28] == 0xe
                || hdr.ipv4.dst_addr == 0xffffffff) {
            // RFC 4787 and 5382 define no multicast or broadcast behaviour.
            local_md.drop_reason = DropReason_t.NOT_UNICAST;
        } else if (local_md.injected) {
            // a translated error's source is NAT-owned by design
        } else if (src8 == 0 || src8 == 127 || src8[7:5] == 0x7
                || dst8 == 0 || dst8 == 127 || dst8[7:4] == 0xf) {
            // RFC 1812 sec. 5.3.7, RFC 6890: 0/8, 127/8, multicast and
            // class E sources (224 and up: the top three bits set); 0/8,
            // 127/8 and class E destinations (240 and up).
            local_md.drop_reason = DropReason_t.MARTIAN;
        } else if (owned_source.apply().hit) {
            local_md.drop_reason = DropReason_t.MARTIAN;
        }
    }
}

#endif // __INPUT_CHECK__
