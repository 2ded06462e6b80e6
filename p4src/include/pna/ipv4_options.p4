// SPDX-License-Identifier: Apache-2.0
//
// PNA on DPDK SWX: the parser's IPv4 options states (included into
// QuickNatParser, parser.p4). v1model walks the options one by one in a
// 320-bit copy of them (v1model/ipv4_options.p4); SWX has no field wider
// than 64 bits to walk them in, and extracting them unchecked would let a
// source route through (RFC 7126 sec. 4.3). So a datagram with options is
// not parsed further: its L4 header stays unread (opaque_l4), the tables
// are not looked up, and, when it needs NAT, the slow path takes it whole
// (punt IPV4_OPTIONS: the controller checks the options and translates
// it; in offload mode the slow-path instance, as any miss). A datagram
// with options is rare (RFC 7126 sec. 4: most are dropped on the Internet).

    state parse_ipv4_options {
        local_md.opaque_l4 = true;
        transition parsed;
    }
