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
                      inout standard_metadata_t standard_md) {

    state start {
        // v1model zeroes user metadata; say so explicitly for other targets.
        local_md.ingress_port = standard_md.ingress_port;
        local_md.frame_len = standard_md.packet_length;
        local_md.injected = false;
        local_md.zone = 0;
        local_md.l4_ports_valid = false;
        local_md.l4_sport = 0;
        local_md.l4_dport = 0;
        local_md.is_icmp_error = false;
        local_md.icmp_quote_valid = false;
        local_md.icmp_quote_dst = 0;
        local_md.inside_host = 0;
        local_md.is_local = false;
        local_md.slow_path = false;
        local_md.slow_path_port = 0;
        local_md.from_slow_path = false;
        local_md.nat.hit = false;
        local_md.nat.rewrite_src = false;
        local_md.nat.rewrite_dst = false;
        local_md.nat.pending = false;
        local_md.route_ipv4 = false;
        local_md.ipv4_changed = false;
        local_md.forward = false;
        local_md.egress_port = 0;
        local_md.packet_out_direct = false;
        local_md.punt_reason = PuntReason_t.NONE;
        local_md.drop_reason = DropReason_t.NONE;
        transition select(standard_md.ingress_port) {
            CPU_PORT: parse_packet_out;
            default:  parse_ethernet;
        }
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
            default:        accept;
        }
    }

    // One tag: the slow-path tag (ingress keeps it only on a slow-path port).
    // Its 4 bytes are not the datagram's (IN-IP-2 compares with frame_len).
    state parse_vlan {
        packet.extract(hdr.vlan);
        local_md.frame_len = local_md.frame_len - VLAN_TAG_BYTES;
        transition select(hdr.vlan.eth_type) {
            ETHERTYPE_ARP:  parse_arp;
            ETHERTYPE_IPV4: parse_ipv4;
            default:        accept;
        }
    }

    state parse_arp {
        packet.extract(hdr.arp);
        transition accept;
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
        transition select(hdr.ipv4.ihl) {
            IPV4_MIN_IHL: parse_ipv4_payload;
            default:      parse_ipv4_options;
        }
    }

    // Options (ihl 6..15: 1..10 words) are walked first, without consuming
    // them: the walk reads a copy (lookahead of exactly the options' size,
    // left-aligned in opt_scan) one option at a time, so that source routes
    // and malformed lists are refused as swpath refuses them (RFC 7126 sec.
    // 4.3, 4.4: a source-routed packet would be steered past the NAT's
    // rewrite). Then the options are extracted whole, as one varbit.
    state parse_ipv4_options {
        local_md.opt_left = ((bit<8>)hdr.ipv4.ihl - (bit<8>)IPV4_MIN_IHL) << 2;
        transition select(hdr.ipv4.ihl) {
            6:  look_1;
            7:  look_2;
            8:  look_3;
            9:  look_4;
            10: look_5;
            11: look_6;
            12: look_7;
            13: look_8;
            14: look_9;
            default: look_10;
        }
    }

    state look_1 {
        local_md.opt_scan = packet.lookahead<bit<32>>() ++ (bit<288>)0;
        transition scan_option;
    }
    state look_2 {
        local_md.opt_scan = packet.lookahead<bit<64>>() ++ (bit<256>)0;
        transition scan_option;
    }
    state look_3 {
        local_md.opt_scan = packet.lookahead<bit<96>>() ++ (bit<224>)0;
        transition scan_option;
    }
    state look_4 {
        local_md.opt_scan = packet.lookahead<bit<128>>() ++ (bit<192>)0;
        transition scan_option;
    }
    state look_5 {
        local_md.opt_scan = packet.lookahead<bit<160>>() ++ (bit<160>)0;
        transition scan_option;
    }
    state look_6 {
        local_md.opt_scan = packet.lookahead<bit<192>>() ++ (bit<128>)0;
        transition scan_option;
    }
    state look_7 {
        local_md.opt_scan = packet.lookahead<bit<224>>() ++ (bit<96>)0;
        transition scan_option;
    }
    state look_8 {
        local_md.opt_scan = packet.lookahead<bit<256>>() ++ (bit<64>)0;
        transition scan_option;
    }
    state look_9 {
        local_md.opt_scan = packet.lookahead<bit<288>>() ++ (bit<32>)0;
        transition scan_option;
    }
    state look_10 {
        local_md.opt_scan = packet.lookahead<bit<320>>();
        transition scan_option;
    }

    state scan_option {
        transition select(local_md.opt_left, local_md.opt_scan[319:312]) {
            (0, _):   extract_ipv4_options;  // walked them all
            (_, 0):   extract_ipv4_options;  // end of option list
            (_, 1):   skip_nop;
            (_, 131): source_route;          // loose source route
            (_, 137): source_route;          // strict source route
            default:  skip_option;
        }
    }

    state skip_nop {
        local_md.opt_scan = local_md.opt_scan << 8;
        local_md.opt_left = local_md.opt_left - 1;
        transition scan_option;
    }

    state skip_option {
        bit<8> len = local_md.opt_scan[311:304];
        verify(len >= 2 && len <= local_md.opt_left, error.Ipv4BadOption);
        // BMv2 shifts by at most 255 bits: an option of up to 40 bytes
        // (320 bits) is skipped in two halves.
        local_md.opt_scan = local_md.opt_scan << (len << 2) << (len << 2);
        local_md.opt_left = local_md.opt_left - len;
        transition scan_option;
    }

    state source_route {
        verify(false, error.Ipv4SourceRoute);
        transition accept;
    }

    state extract_ipv4_options {
        packet.extract(hdr.ipv4_options,
                       (bit<32>)(((bit<16>)hdr.ipv4.ihl - (bit<16>)IPV4_MIN_IHL) << 5));
        transition parse_ipv4_payload;
    }

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
            (0, 0, _):             accept;
            default:               mark_fragment;
        }
    }

    state mark_fragment {
        local_md.is_fragment = true;
        transition accept;
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
        local_md.l4_ports_valid = true;
        transition accept;
    }

    state parse_udp {
        verify(local_md.l4_len >= UDP_HDR_BYTES, error.L4Truncated);
        packet.extract(hdr.udp);
        // IN-UDP-1: its own length covers its header and fits the datagram
        verify(hdr.udp.len >= UDP_HDR_BYTES && hdr.udp.len <= local_md.l4_len,
               error.UdpBadLength);
        local_md.l4_sport = hdr.udp.sport;
        local_md.l4_dport = hdr.udp.dport;
        local_md.l4_ports_valid = true;
        transition accept;
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
            default:                 accept;
        }
    }

    state parse_icmp_echo {
        packet.extract(hdr.icmp_echo);
        // RFC 5508 sec. 3.1: the identifier is the query's "port", the same
        // value in both key fields in both directions.
        local_md.l4_sport = hdr.icmp_echo.identifier;
        local_md.l4_dport = hdr.icmp_echo.identifier;
        local_md.l4_ports_valid = true;
        transition accept;
    }

    state mark_icmp_error {
        local_md.is_icmp_error = true;
        transition select(local_md.l4_len >= ICMP_ERROR_QUOTE_MIN_BYTES) {
            true:    read_icmp_quote;
            default: accept;   // too short to quote a header: the slow path drops it
        }
    }

    // Looked at, not extracted: the quote stays payload for the deparser.
    // 4 bytes of the error's header (unused / MTU), then the quoted header,
    // its destination at byte 16. Offload mode steers an inside host's
    // errors by it (slow_path.p4).
    state read_icmp_quote {
        bit<192> quote = packet.lookahead<bit<192>>();
        local_md.icmp_quote_dst = quote[31:0];
        local_md.icmp_quote_valid = true;
        transition accept;
    }
}

control QuickNatDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.vlan);
        packet.emit(hdr.arp);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
        packet.emit(hdr.icmp);
        packet.emit(hdr.icmp_echo);
    }
}

#endif // __PARSER__
