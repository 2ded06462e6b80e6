// SPDX-License-Identifier: Apache-2.0
//
// Parser and deparser. Headers are extracted only where the packet really
// holds them: L4 is parsed only in unfragmented datagrams (a non-first
// fragment's payload is not an L4 header, and fragments are the
// controller's) and only after any IPv4 options,
// and the ICMP identifier only for echo request/reply. The length and
// header-structure rules of the input contract (docs/nat-behavior.md: IN-IP-1,
// IN-IP-2, IN-IP-4, IN-TCP-1, IN-UDP-1, IN-ICMP-1) are verify()s here, so a
// packet that breaks one is never looked up. A parser error does not drop
// the packet by itself on v1model; ingress drops it (PARSER_ERROR).

#ifndef __PARSER__
#define __PARSER__

#include "header.p4"

error {
    Ipv4BadVersion,
    Ipv4BadIhl,
    Ipv4BadOption,     // an option runs past the header or has length < 2
    Ipv4SourceRoute,   // LSRR or SSRR: ingress drops it as IP_OPTIONS
    Ipv4BadLength,     // total length below the header or beyond the frame
    L4Truncated,       // total length leaves no room for the L4 header
    TcpBadDataOffset,  // below 5 words or past the segment
    UdpBadLength       // below 8 or beyond the IP payload
}

parser QuickNatParser(packet_in packet,
                      out headers_t hdr,
                      inout local_metadata_t local_md,
                      PARSER_TARGET_PARAMS) {

    state start {
        // Every field, every packet: v1model zeroes user metadata, but the
        // SWX pipeline keeps a thread's metadata from one packet to the next
        // (controller/tests/test_p4_source.py holds this list to header.p4).
        local_md.ingress_port = TARGET_INGRESS_PORT;
        local_md.frame_len = TARGET_FRAME_LEN;
        TARGET_PARSER_INIT
        local_md.injected = false;
        local_md.skip_nat = false;
        local_md.zone = 0;
        local_md.l4_ports_valid = false;
        local_md.l4_sport = 0;
        local_md.l4_dport = 0;
        local_md.flow.src = 0;
        local_md.flow.dst = 0;
        local_md.flow.proto = 0;
        local_md.flow.sport = 0;
        local_md.flow.dport = 0;
        local_md.is_icmp_error = false;
        local_md.icmp_quote_valid = false;
        local_md.icmp_quote_dst = 0;
        local_md.l4_len = 0;
        local_md.inside_host = 0;
        local_md.is_local = false;
        local_md.slow_path = false;
        local_md.slow_path_port = 0;
        local_md.from_slow_path = false;
        local_md.learning = false;
        local_md.learn_lease = 0;
        local_md.learn_slot = 0;
        local_md.nat.hit = false;
        local_md.nat.rewrite_src = false;
        local_md.nat.rewrite_dst = false;
        local_md.nat.pending = false;
        local_md.nat.src_addr = 0;
        local_md.nat.src_port = 0;
        local_md.nat.dst_addr = 0;
        local_md.nat.dst_port = 0;
        local_md.route_ipv4 = false;
        local_md.route_dst = 0;
        local_md.opaque_l4 = false;
        local_md.is_fragment = false;
        // Until the parse reaches `parsed`: a failed verify() ends it before
        // that, on every target, so the parser itself says whether it
        // finished. (p4c-dpdk writes a failed verify's error into PNA's pre
        // control metadata, which the main control never sees.)
        local_md.parser_failed = true;
        local_md.source_routed = false;
        local_md.checksum_failed = false;
        local_md.punt_dropped = false;
        local_md.copy_reason = PuntReason_t.NONE;
        local_md.egress_mtu = 0;
        local_md.forward = false;
        local_md.egress_port = 0;
        local_md.packet_out_direct = false;
        local_md.punt_reason = PuntReason_t.NONE;
        local_md.drop_reason = DropReason_t.NONE;
        transition select(TARGET_FROM_CPU) {
            TARGET_FROM_CPU_VALUE: parse_packet_out;
            default:               parse_ethernet;
        }
    }

    // Every successful parse ends here.
    state parsed {
        local_md.parser_failed = false;
        transition accept;
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        local_md.frame_len = local_md.frame_len - PACKET_OUT_HDR_BYTES;
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.eth_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_ARP:  parse_arp;
            ETHERTYPE_IPV4: parse_ipv4;
            default:        parsed;
        }
    }

    // One tag: the slow-path tag (ingress keeps it only on a slow-path port).
    // Its 4 bytes are not the datagram's (IN-IP-2 compares with frame_len).
    state parse_vlan {
        packet.extract(hdr.vlan);
        local_md.frame_len = local_md.frame_len - VLAN_TAG_BYTES;
        transition select(hdr.vlan.eth_type) {
            ETHERTYPE_ARP:   parse_arp;
            ETHERTYPE_IPV4:  parse_ipv4;
            ETHERTYPE_LEARN: parse_learn;
            default:         parsed;
        }
    }

    // Only after the slow-path tag, and only IPv4 after it (ingress drops
    // a tag elsewhere with the slow-path tag's rule).
    state parse_learn {
        packet.extract(hdr.learn);
        local_md.frame_len = local_md.frame_len - LEARN_TAG_BYTES;
        transition select(hdr.learn.eth_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default:        parsed;
        }
    }

    state parse_arp {
        packet.extract(hdr.arp);
        transition parsed;
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.Ipv4BadVersion);
        verify(hdr.ipv4.ihl >= IPV4_MIN_IHL, error.Ipv4BadIhl);
        // IN-IP-2: the datagram holds its header and fits in the frame
        // (Ethernet padding after it is allowed). A total length the
        // deparser would carry unchanged must never leave translated.
        verify(hdr.ipv4.total_len >= ((bit<16>)hdr.ipv4.ihl << 2)
               && ETHERNET_HDR_BYTES + (bit<32>)hdr.ipv4.total_len
                  <= local_md.frame_len,
               error.Ipv4BadLength);
        local_md.l4_len = hdr.ipv4.total_len - ((bit<16>)hdr.ipv4.ihl << 2);
        if (hdr.ipv4.flag_more_fragments == 1 || hdr.ipv4.frag_offset != 0) {
            local_md.is_fragment = true;
        }
        // the connection tables' key (flow_key_t), gathered as it is parsed
        local_md.flow.src = hdr.ipv4.src_addr;
        local_md.flow.dst = hdr.ipv4.dst_addr;
        local_md.flow.proto = hdr.ipv4.protocol;
        transition select(hdr.ipv4.ihl) {
            IPV4_MIN_IHL: parse_ipv4_payload;
            default:      parse_ipv4_options;
        }
    }

    // IPv4 options (ihl 6..15): the target's states (target.p4), from
    // parse_ipv4_options to parse_ipv4_payload or parsed.
#include TARGET_IPV4_OPTIONS

    state parse_ipv4_payload {
        // A first fragment has ports but its other fragments have none: no
        // fragment is looked up here; the ones that need NAT go to the
        // controller, which keeps each datagram's ports (nat_scope.p4,
        // docs/nat-behavior.md IN-IP-8, RFC 4787 REQ-14).
        transition select(hdr.ipv4.flag_more_fragments, hdr.ipv4.frag_offset,
                          hdr.ipv4.protocol) {
            (0, 0, IP_PROTO_TCP):  parse_tcp;
            (0, 0, IP_PROTO_UDP):  parse_udp;
            (0, 0, IP_PROTO_ICMP): parse_icmp;
            default:               parsed; // a fragment, or no L4 of ours
        }
    }

    state parse_tcp {
        verify(local_md.l4_len >= TCP_MIN_HDR_BYTES, error.L4Truncated);
        packet.extract(hdr.tcp);
        // IN-TCP-1: a header of 5..15 words inside the segment
        verify(hdr.tcp.data_offset >= 5
               && ((bit<16>)hdr.tcp.data_offset << 2) <= local_md.l4_len,
               error.TcpBadDataOffset);
        local_md.l4_sport = hdr.tcp.sport;
        local_md.l4_dport = hdr.tcp.dport;
        local_md.flow.sport = hdr.tcp.sport;
        local_md.flow.dport = hdr.tcp.dport;
        local_md.l4_ports_valid = true;
        transition parsed;
    }

    state parse_udp {
        verify(local_md.l4_len >= UDP_HDR_BYTES, error.L4Truncated);
        packet.extract(hdr.udp);
        // IN-UDP-1: its own length covers its header and fits the datagram
        verify(hdr.udp.len >= UDP_HDR_BYTES && hdr.udp.len <= local_md.l4_len,
               error.UdpBadLength);
        local_md.l4_sport = hdr.udp.sport;
        local_md.l4_dport = hdr.udp.dport;
        local_md.flow.sport = hdr.udp.sport;
        local_md.flow.dport = hdr.udp.dport;
        local_md.l4_ports_valid = true;
        transition parsed;
    }

    state parse_icmp {
        // IN-ICMP-1: every ICMP message the NAT reads has 8 bytes of header
        verify(local_md.l4_len >= ICMP_MIN_BYTES, error.L4Truncated);
        packet.extract(hdr.icmp);
        transition select(hdr.icmp.icmp_type) {
            ICMP_TYPE_ECHO_REQUEST:  parse_icmp_echo;
            ICMP_TYPE_ECHO_REPLY:    parse_icmp_echo;
            ICMP_TYPE_DEST_UNREACH:  mark_icmp_error;
            ICMP_TYPE_TIME_EXCEEDED: mark_icmp_error;
            ICMP_TYPE_PARAM_PROBLEM: mark_icmp_error;
            default:                 parsed;
        }
    }

    state parse_icmp_echo {
        packet.extract(hdr.icmp_echo);
        // RFC 5508 sec. 3.1: the identifier is the query's "port", the same
        // value in both key fields in both directions.
        local_md.l4_sport = hdr.icmp_echo.identifier;
        local_md.l4_dport = hdr.icmp_echo.identifier;
        local_md.flow.sport = hdr.icmp_echo.identifier;
        local_md.flow.dport = hdr.icmp_echo.identifier;
        local_md.l4_ports_valid = true;
        transition parsed;
    }

    state mark_icmp_error {
        local_md.is_icmp_error = true;
        transition select(local_md.l4_len >= ICMP_ERROR_QUOTE_MIN_BYTES) {
            true:    read_icmp_quote;
            default: parsed;   // too short to quote a header: the slow path drops it
        }
    }

    // The rest of the error's header (unused / MTU) and the quoted IPv4
    // header, its destination at byte 16, extracted as one header and
    // emitted unchanged (SWX reads at most 64 bits ahead: no lookahead of
    // 24 bytes). Offload mode steers an inside host's errors by it
    // (slow_path.p4).
    state read_icmp_quote {
        packet.extract(hdr.icmp_quote);
        local_md.icmp_quote_dst = hdr.icmp_quote.quote_dst;
        local_md.icmp_quote_valid = true;
        transition parsed;
    }
}

control QuickNatDeparser(packet_out packet, in headers_t hdr DEPARSER_TARGET_PARAMS) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.vlan);
        packet.emit(hdr.learn);
        packet.emit(hdr.arp);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
        packet.emit(hdr.icmp);
        packet.emit(hdr.icmp_echo);
        packet.emit(hdr.icmp_quote);
    }
}

#endif // __PARSER__
