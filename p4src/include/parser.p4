// SPDX-License-Identifier: Apache-2.0
//
// Parser and deparser. Headers are extracted only where the packet really
// holds them: L4 is parsed only in unfragmented datagrams (a non-first
// fragment's payload is not an L4 header, and a first fragment is not
// translated without the rest) and only after any IPv4 options,
// and the ICMP identifier only for echo request/reply. A parser error does
// not drop the packet by itself on v1model; ingress drops it (PARSER_ERROR).

#ifndef __PARSER__
#define __PARSER__

#include "header.p4"

error {
    Ipv4BadVersion,
    Ipv4BadIhl
}

parser QuickNatParser(packet_in packet,
                      out headers_t hdr,
                      inout local_metadata_t local_md,
                      inout standard_metadata_t standard_md) {

    state start {
        // v1model zeroes user metadata; say so explicitly for other targets.
        local_md.ingress_port = standard_md.ingress_port;
        local_md.injected = false;
        local_md.zone = 0;
        local_md.l4_ports_valid = false;
        local_md.l4_sport = 0;
        local_md.l4_dport = 0;
        local_md.is_icmp_error = false;
        local_md.is_local = false;
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
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.eth_type) {
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
        transition select(hdr.ipv4.ihl) {
            IPV4_MIN_IHL: parse_ipv4_payload;
            default:      parse_ipv4_options;
        }
    }

    state parse_ipv4_options {
        // ihl is 6..15 here: 1..10 words of options.
        packet.extract(hdr.ipv4_options,
                       (bit<32>)(((bit<16>)hdr.ipv4.ihl - (bit<16>)IPV4_MIN_IHL) << 5));
        transition parse_ipv4_payload;
    }

    state parse_ipv4_payload {
        // A first fragment has ports but its other fragments have none, and
        // there is no reassembly here: no fragment is looked up or
        // translated (NAT-BEHAVIOR.md, RFC 4787 REQ-14: handled safely).
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
        packet.extract(hdr.tcp);
        local_md.l4_sport = hdr.tcp.sport;
        local_md.l4_dport = hdr.tcp.dport;
        local_md.l4_ports_valid = true;
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        local_md.l4_sport = hdr.udp.sport;
        local_md.l4_dport = hdr.udp.dport;
        local_md.l4_ports_valid = true;
        transition accept;
    }

    state parse_icmp {
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
        transition accept;
    }
}

control QuickNatDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
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
