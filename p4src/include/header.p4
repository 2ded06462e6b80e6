// SPDX-License-Identifier: Apache-2.0
//
// Header layouts, the header struct and the local metadata. One definition of
// each layout; the controller's packet-in/packet-out codec follows the two
// controller headers below (p4src/README.md has them as byte diagrams).

#ifndef __HEADER__
#define __HEADER__

#include "define.p4"

// Prepended by the switch to every packet sent to the controller, followed by
// the packet exactly as it arrived (no TTL decrement, no rewrite).
@controller_header("packet_in")
header packet_in_header_t {
    port_t       ingress_port; // logical ingress port (after packet-out injection)
    PACKET_IN_PADDING          // (to whole bytes: target.p4)
    PuntReason_t reason;
    bit<16>      mtu;          // FRAG_NEEDED: the egress port's MTU; 0 otherwise
}

// Prepended by the controller to every packet-out.
@controller_header("packet_out")
header packet_out_header_t {
    port_t          egress_port;  // DIRECT: port to send the payload out of
    port_t          ingress_port; // INJECT: port the payload is processed as arriving on
    PacketOutMode_t mode;
    PACKET_OUT_PADDING            // (to whole bytes: target.p4)
}

header ethernet_t {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    eth_type;
}

// IEEE 802.1Q tag: on a slow-path port only (slow_path.p4), vid = the zone
// the packet arrived from (toward swpath) or leaves to (from swpath).
header vlan_t {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> eth_type;
}

// The learn tag (offload mode, learning switches: nat.p4): a slow-path
// instance sends a packet it translated back with the packet's 5-tuple as
// it was before the translation, so the switch learns both directions of
// the session from it without a table write (docs/offload.md). After the
// slow-path tag, before IPv4 (EtherType ETHERTYPE_LEARN); 16 bytes. For ICMP
// echo both ports are the identifier. lease: the switch's timeout class.
header learn_t {
    ipv4_addr_t orig_src_addr;
    ipv4_addr_t orig_dst_addr;
    bit<16>     orig_sport;
    bit<16>     orig_dport;
    bit<8>      lease;
    bit<8>      flags;       // LEARN_FLAG_OUT2IN
    bit<16>     eth_type;
}

// ARP for Ethernet/IPv4 only (28 bytes, RFC 826); other hardware or protocol
// types are recognised by the control (hw_type, ...) and dropped.
header arp_t {
    bit<16>     hw_type;
    bit<16>     proto_type;
    bit<8>      hw_addr_len;
    bit<8>      proto_addr_len;
    bit<16>     opcode;
    mac_addr_t  sender_mac;
    ipv4_addr_t sender_ip;
    mac_addr_t  target_mac;
    ipv4_addr_t target_ip;
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      dscp_ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<1>      flag_reserved;
    bit<1>      flag_dont_fragment;
    bit<1>      flag_more_fragments;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

// IPv4 options, (ihl - 5) 32-bit words, at most 40 bytes. Extracted whole so
// that L4 is parsed at the right offset and the header checksum covers them.
header ipv4_options_t {
    varbit<320> options;
}

header tcp_t {
    l4_port_t sport;
    l4_port_t dport;
    bit<32>   seq_no;
    bit<32>   ack_no;
    bit<4>    data_offset;
    bit<4>    reserved;
    bit<8>    flags;
    bit<16>   window;
    bit<16>   checksum;
    bit<16>   urgent_ptr;
}

header udp_t {
    l4_port_t sport;
    l4_port_t dport;
    bit<16>   len;
    bit<16>   checksum; // 0: no checksum (RFC 768)
}

header icmp_t {
    bit<8>  icmp_type;
    bit<8>  icmp_code;
    bit<16> checksum;
}

// Rest of the ICMP header of echo request / reply only.
header icmp_echo_t {
    bit<16> identifier;
    bit<16> sequence;
}

// What follows an ICMP error's first 4 bytes, up to the quoted header's
// destination (RFC 792): read for offload mode's steering, never changed.
header icmp_quote_t {
    bit<32>     rest;        // unused, or the MTU of a fragmentation needed
    bit<64>     quote0;      // the quoted IPv4 header's bytes 0..7
    bit<64>     quote1;      // and 8..15
    ipv4_addr_t quote_dst;   // its destination
}

struct headers_t {
    packet_in_header_t  packet_in;
    packet_out_header_t packet_out;
    ethernet_t          ethernet;
    vlan_t              vlan;
    learn_t             learn;
    arp_t               arp;
    ipv4_t              ipv4;
    ipv4_options_t      ipv4_options;
    tcp_t               tcp;
    udp_t               udp;
    icmp_t              icmp;
    icmp_echo_t         icmp_echo;
    icmp_quote_t        icmp_quote;
}

// Translation chosen by a connection-table hit, applied by NatIngress.
struct nat_rewrite_t {
    bool        hit;             // nat_in2out / nat_out2in hit (and rewrote)
    bool        rewrite_src;
    bool        rewrite_dst;
    bool        pending;         // hairpin_pending: to the controller instead
    ipv4_addr_t src_addr;
    l4_port_t   src_port;
    ipv4_addr_t dst_addr;
    l4_port_t   dst_port;
}

// A connection-table key, the packet's 5-tuple gathered in one place: the
// tables match on one contiguous piece of metadata, which p4c-dpdk needs
// to make them exact-match tables (header and metadata fields together it
// classes as wildcard, and refuses a direct counter on).
struct flow_key_t {
    ipv4_addr_t src;
    ipv4_addr_t dst;
    bit<8>      proto;
    l4_port_t   sport;
    l4_port_t   dport;
}

// A learned entry's action data (nat.p4's learned_in2out, learned_out2in).
struct learned_params_t {
    ipv4_addr_t addr;
    l4_port_t   port;
}

struct local_metadata_t {
    // Port the packet is processed as arriving on: the wire port, or
    // packet_out.ingress_port for an injected packet-out. Every table and
    // the packet_in header use this, never the architecture's ingress port.
    // Kept in TCP_STATE copies (clone field list), like copy_reason.
    @field_list(PUNT_FIELD_LIST)
    port_t        ingress_port;
    bool          injected;        // came from the controller (INJECT or ROUTE)
    bool          skip_nat;        // ROUTE packet-out: translated already
    zone_t        zone;
    // Connection-table key: TCP/UDP ports, or the ICMP echo identifier in
    // both (so an echo request and its reply use the same key shape).
    // Valid only when l4_ports_valid.
    bool          l4_ports_valid;
    l4_port_t     l4_sport;
    l4_port_t     l4_dport;
    bool          is_icmp_error;   // ICMP destination unreachable, time exceeded, parameter problem
    // An ICMP error's quoted IPv4 destination (its header read, not parsed:
    // nothing rewrites it here); valid only when icmp_quote_valid.
    bool          icmp_quote_valid;
    ipv4_addr_t   icmp_quote_dst;
    bit<32>       frame_len;       // bytes from the Ethernet header on (IN-IP-2)
    bit<16>       l4_len;          // IPv4 total length less its header
    // What the target's parser needs to walk IPv4 options (target.p4).
    TARGET_PARSER_METADATA
    // The datagram has IPv4 options this target's parser does not walk, so
    // its L4 header was not parsed: it is the slow path's (IPV4_OPTIONS).
    bool          opaque_l4;
    bool          is_fragment;     // MF set or a fragment offset: never translated
    bool          is_local;        // local_address hit
    // Offload mode (slow_path.p4): a slow-path instance takes this packet's
    // misses (slow_path_port); from_slow_path: came back translated from one.
    bool          slow_path;
    port_t        slow_path_port;
    ipv4_addr_t   inside_host;     // the inside host an inside-zone packet is about
    bool          from_slow_path;
    flow_key_t    flow;            // the connection tables' key (nat.p4)
    // A learn tag to learn from (a learning target, nat.p4): what the
    // learned tables' default actions add (nat.src_addr and nat.src_port,
    // for the lease class learn_lease).
    bool          learning;
    bit<8>        learn_lease;
    bit<8>        learn_slot;      // learn_counter's (nat.p4)
    nat_rewrite_t nat;
    bool          route_ipv4;      // run routing_v4 (translated, or inside traffic not subject to NAT)
    // The destination routing_v4 looks up: the packet's, or the one a NAT
    // hit translates it to (the header is rewritten only once the packet
    // is known to leave: NatRewriteIngress).
    ipv4_addr_t   route_dst;
    // What the target's parser and checksum verification found (the
    // target's pipeline.p4 sets them before QuickNatIngressCore).
    bool          parser_failed;
    bool          source_routed;   // a source route option (IP_OPTIONS)
    bool          checksum_failed;
    // Forwarding decision. When ingress ends either drop_reason is set or
    // forward is (a punt becomes forward to CPU_PORT in PacketInIngress).
    bool          forward;
    port_t        egress_port;
    // MTU of egress_port (egress_mtu table), for a FRAG_NEEDED copy.
    @field_list(PUNT_FIELD_LIST)
    bit<16>       egress_mtu;
    bool          packet_out_direct;
    PuntReason_t  punt_reason;
    // Reason of a copy to the controller: made while the packet itself is
    // forwarded (TCP_STATE), or of a packet dropped that the controller
    // answers with an ICMP error (TIME_EXCEEDED, FRAG_NEEDED); NONE otherwise.
    @field_list(PUNT_FIELD_LIST)
    PuntReason_t  copy_reason;
    DropReason_t  drop_reason;
    // A target without clones (TARGET_CLONES 0) sends a packet it drops for
    // an ICMP error to the controller itself, as it arrived, instead of a
    // copy: the drop is counted, then it goes to CPU_PORT.
    bool          punt_dropped;
}

#endif // __HEADER__
