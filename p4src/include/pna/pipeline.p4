// SPDX-License-Identifier: Apache-2.0
//
// PNA's main control around the shared ingress (control/ingress.p4): the
// parser's verdict and the IPv4 checksum (pna/checksum.p4) in, send_to_port
// or drop_packet out, and the packet_in header for the controller at the
// end (p4c-dpdk runs no egress). This and target.p4 are the only places
// that know PNA's metadata.

#ifndef __TARGET_PIPELINE__
#define __TARGET_PIPELINE__

#include "../control/ingress.p4"
#include "checksum.p4"

// PNA's send_to_port takes a port the compiler knows (a directionless
// parameter: p4c refuses a variable, and its DPDK backend drops a table's
// const entries that could map one). The program decides its egress port
// as data, so it is sent by a tree of tests on the port's six bits, each
// leaf with its constant: six branches a packet, for the SWX ports 0..63
// (quicknat-swx's SWX_MAX_PORTS); a higher port drops.
#define SEND_BIT0(p, base) \
    if (p[0:0] == 0) { send_to_port((PortId_t)(base)); } \
    else { send_to_port((PortId_t)((base) + 1)); }
#define SEND_BIT1(p, base) \
    if (p[1:1] == 0) { SEND_BIT0(p, base) } else { SEND_BIT0(p, (base) + 2) }
#define SEND_BIT2(p, base) \
    if (p[2:2] == 0) { SEND_BIT1(p, base) } else { SEND_BIT1(p, (base) + 4) }
#define SEND_BIT3(p, base) \
    if (p[3:3] == 0) { SEND_BIT2(p, base) } else { SEND_BIT2(p, (base) + 8) }
#define SEND_BIT4(p, base) \
    if (p[4:4] == 0) { SEND_BIT3(p, base) } else { SEND_BIT3(p, (base) + 16) }
#define SEND_TO_PORT(p) \
    if (p[31:6] != 0) { drop_packet(); } \
    else if (p[5:5] == 0) { SEND_BIT4(p, 32w0) } else { SEND_BIT4(p, 32w32) }

control QuickNatPreControl(in headers_t hdr,
                           inout local_metadata_t local_md,
                           in pna_pre_input_metadata_t istd,
                           inout pna_pre_output_metadata_t ostd) {
    apply { }
}

control QuickNatMainControl(inout headers_t hdr,
                            inout local_metadata_t local_md,
                            in pna_main_input_metadata_t istd,
                            inout pna_main_output_metadata_t ostd) {

    Ipv4ChecksumVerify() checksum;
    QuickNatIngressCore() core;
    PacketInEncap() packet_in_encap;


    apply {
        local_md.ingress_port = (port_t)(PortIdUint_t)istd.input_port;
        // (no source route error here: this parser does not walk options)
        checksum.apply(hdr, local_md);
        core.apply(hdr, local_md);
        if (local_md.forward) {
            packet_in_encap.apply(hdr, local_md, local_md.egress_port);
            SEND_TO_PORT(local_md.egress_port)
        } else {
            drop_packet();
        }
    }
}

#endif // __TARGET_PIPELINE__
