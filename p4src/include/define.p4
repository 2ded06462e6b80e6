// SPDX-License-Identifier: Apache-2.0
//
// Constants, zones, punt reasons and drop reasons. The numeric values of the
// enums are part of the controller contract (p4src/README.md): PuntReason_t
// travels in the packet_in header, DropReason_t indexes drop_counter.

#ifndef __DEFINE__
#define __DEFINE__

// (after the target's target.p4, which the program's top file includes first)

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<16> l4_port_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP  = 0x0806;
// IEEE 802.1Q: the slow-path tag (slow_path.p4); its VLAN ID is a zone.
const bit<16> ETHERTYPE_VLAN = 0x8100;
// IEEE 802 local experimental EtherType 1: the learn tag a slow-path
// instance puts after the slow-path tag (header.p4's learn_t, nat_learn.p4).
const bit<16> ETHERTYPE_LEARN = 0x88B5;

const bit<8> IP_PROTO_ICMP = 1;
const bit<8> IP_PROTO_TCP  = 6;
const bit<8> IP_PROTO_UDP  = 17;

// ARP over Ethernet for IPv4 (RFC 826); nothing else is answered.
const bit<16> ARP_HW_TYPE_ETHERNET = 1;
const bit<8>  ARP_HW_ADDR_LEN      = 6;
const bit<8>  ARP_PROTO_ADDR_LEN   = 4;
const bit<16> ARP_OPCODE_REQUEST   = 1;
const bit<16> ARP_OPCODE_REPLY     = 2;

// ICMP types (RFC 792). Echo is the only ICMP query the data plane maps (its
// identifier plays the role of a port, RFC 5508 sec. 3.1); the error types
// are punted so the controller can translate the embedded packet (RFC 5508
// sec. 3.3), which the data plane does not parse.
const bit<8> ICMP_TYPE_ECHO_REPLY     = 0;
const bit<8> ICMP_TYPE_DEST_UNREACH   = 3;
const bit<8> ICMP_TYPE_ECHO_REQUEST   = 8;
const bit<8> ICMP_TYPE_TIME_EXCEEDED  = 11;
const bit<8> ICMP_TYPE_PARAM_PROBLEM  = 12;

const bit<4> IPV4_MIN_IHL = 5;

// TCP flags that change a session's state (RFC 7857 sec. 2.2).
const bit<8> TCP_FLAG_FIN = 0x01;
const bit<8> TCP_FLAG_SYN = 0x02;
const bit<8> TCP_FLAG_RST = 0x04;
const bit<8> TCP_FLAG_ACK = 0x10;
const bit<8> TCP_FLAG_URG = 0x20;
// The flags whose combination is checked (IN-TCP-2): all but PSH, ECE, CWR.
const bit<8> TCP_FLAGS_CHECKED = 0x37;

// Bytes before the IPv4 header: Ethernet II and an 802.1Q tag (the
// packet_out header's length is the target's: target.p4).
const bit<32> ETHERNET_HDR_BYTES = 14;
const bit<32> VLAN_TAG_BYTES = 4;
const bit<32> LEARN_TAG_BYTES = 16;
// learn_t.flags: the session's direction the tagged packet took
// (0: inside to outside, its source translated).
const bit<8> LEARN_FLAG_OUT2IN = 1;
// learn_counter's slots (nat.p4): traffic hits of learned entries, and
// what learn tags did.
#define LEARN_IN2OUT_HIT 0
#define LEARN_OUT2IN_HIT 1
#define LEARN_IN2OUT_ADDED 2
#define LEARN_OUT2IN_ADDED 3
#define LEARN_RENEWED 4
#define LEARN_COUNTER_SLOTS 8
// The smallest L4 header of each protocol the parser extracts (IN-IP-2).
const bit<16> TCP_MIN_HDR_BYTES = 20;
const bit<16> UDP_HDR_BYTES = 8;
const bit<16> ICMP_MIN_BYTES = 8;
// An ICMP error's 8 bytes and the IPv4 header it quotes (RFC 792): what the
// parser needs to read the quoted destination (the quote's byte 16).
const bit<16> ICMP_ERROR_QUOTE_MIN_BYTES = 28;
// TTL of the echo replies the router originates (RFC 1700 default).
const bit<8> ICMP_ECHO_REPLY_TTL = 64;

// Zone of a port, set by port_zone. Any other value drops the packet.
// A slow-path port (offload mode, slow_path.p4) leads to a swpath instance:
// what arrives on it is translated already and only routed.
typedef bit<8> zone_t;
const zone_t ZONE_INSIDE    = 1;
const zone_t ZONE_OUTSIDE   = 2;
const zone_t ZONE_SLOW_PATH = 3;

// Slow-path tags that are not a zone (slow_path.p4): an instance sends a
// packet for another with one of that one's two peer VIDs
// (SLOW_PATH_VID_PEER_MIN and up: slow_path_peer), and the switch hands it
// over tagged with what the entry says: SLOW_PATH_VID_HANDOFF for a
// hairpin's second pass (its source is one of our own addresses),
// SLOW_PATH_VID_RELAY for a packet from the outside link passed on as it
// came (an ICMP error or a fragment whose session is the other's).
const bit<12> SLOW_PATH_VID_HANDOFF  = 4;
const bit<12> SLOW_PATH_VID_RELAY    = 5;
const bit<12> SLOW_PATH_VID_PEER_MIN = 16;

// packet_out.mode
enum bit<8> PacketOutMode_t {
    DIRECT = 0, // send the payload out of egress_port as is, no pipeline
    INJECT = 1, // run the payload through ingress as if it came in on
                // packet_out.ingress_port
    ROUTE  = 2  // the same, but already translated by the controller (an
                // ICMP error, RFC 5508): skip NAT, route it
}

// packet_in.reason: why a packet was sent to the controller.
enum bit<8> PuntReason_t {
    NONE          = 0,
    NEW_FLOW      = 1, // inside-zone miss, snat_scope or dnat_scope hit
    NEW_FLOW_DNAT = 2, // outside-zone miss, dnat_scope hit
    ARP           = 3, // ARP reply, for neighbour learning
    ICMP_ERROR    = 4, // ICMP error that may belong to a session (RFC 5508)
    TCP_STATE     = 5, // copy of a translated TCP SYN, FIN or RST (RFC 7857
                       // sec. 2.2: the controller tracks state, sets timeouts)
    TIME_EXCEEDED = 6, // copy of a packet dropped TTL_EXPIRED: the controller
                       // sends ICMP time exceeded (RFC 1812 sec. 5.3.1)
    FRAG_NEEDED   = 7, // copy of a DF packet dropped MTU_EXCEEDED: the
                       // controller sends fragmentation needed (RFC 1191)
    TCP_RST       = 8, // an inside TCP RST, not looked up (a hit would
                       // refresh its entry, RFC 7857 sec. 2.2): the
                       // controller translates and routes it
    FRAGMENT      = 9, // an IPv4 fragment that needs NAT: the switch cannot
                       // keep a datagram's ports, the controller does
                       // (RFC 4787 REQ-14, virtual reassembly) and routes it
    TCP_SEGMENT   = 10,// a TCP SYN, FIN or RST of a session the switch
                       // holds, on a target that cannot copy it
                       // (TARGET_CLONES 0): not forwarded; the controller
                       // tracks its state, translates and routes it
    IPV4_OPTIONS  = 11 // an IPv4 datagram with options that needs NAT, on a
                       // target whose parser does not walk options (PNA):
                       // the controller checks them (RFC 7126 sec. 4.3),
                       // translates and routes it
}

// Clone session (P4Runtime CloneSessionEntry, one replica to CPU_PORT) of the
// TCP_STATE copies, and the field list those copies keep.
const bit<32> CPU_CLONE_SESSION = 99;
const bit<8>  PUNT_FIELD_LIST = 1;

// Index of drop_counter. Every dropped packet is counted under exactly one
// reason: the first one that applies.
enum bit<8> DropReason_t {
    NONE                  = 0,
    PARSER_ERROR          = 1,  // malformed or truncated headers
    IPV4_CHECKSUM         = 2,  // bad IPv4 header checksum
    UNKNOWN_PORT          = 3,  // port_zone miss, or zone neither inside nor outside
    UNSUPPORTED_ETHERTYPE = 4,  // neither ARP nor IPv4 (IPv6, LLDP, ...; VLAN
                                // tagged, except on a slow-path port)
    ARP_IGNORED           = 5,  // ARP request for no owned address, or not Ethernet/IPv4
    NOT_UNICAST           = 6,  // IPv4 multicast or limited broadcast destination
    IPV4_FRAGMENT         = 7,  // fragment to an address the NAT does not own (outside)
    UNSUPPORTED_L4        = 8,  // needs NAT but has no mappable ports (GRE, ESP, ICMP timestamp, ...)
    NO_MAPPING            = 9,  // outside-zone miss outside dnat_scope: unsolicited inbound
    LOCAL_ADDRESS         = 10, // addressed to the router and not an echo request
    TTL_EXPIRED           = 11, // TTL <= 1 on a packet to be forwarded
    NO_ROUTE              = 12, // routing_v4 miss
    PUNT_RATE_LIMITED     = 13, // punt_meter said red
    PUNT_LOOP             = 14, // an injected packet-out would be punted again
    BAD_PACKET_OUT        = 15, // packet_out with an unknown mode
    NO_DECISION           = 16, // no stage forwarded or dropped it (a bug; never expected)
    MTU_EXCEEDED          = 17, // bigger than the egress port's MTU (egress_mtu); never fragmented
    IP_OPTIONS            = 18, // loose or strict source route option (RFC 7126 sec. 4.3)
    BAD_TCP_FLAGS         = 19, // a TCP flag combination no peer sends (IN-TCP-2)
    PORT_ZERO             = 20, // TCP or UDP port 0 (IN-L4-1)
    MARTIAN               = 21, // martian source or destination, or a NAT-owned
                                // source from a link (IN-IP-5, IN-IP-6)
    NO_RULE               = 22, // inside source no SNAT rule covers (IN-RULE-1)
    SLOW_PATH_TAG         = 23  // untagged frame on a slow-path port, or a tag
                                // that is not a zone (slow_path.p4)
}

#endif // __DEFINE__
