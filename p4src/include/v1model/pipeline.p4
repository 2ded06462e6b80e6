// SPDX-License-Identifier: Apache-2.0
//
// v1model's ingress and egress around the shared ingress
// (control/ingress.p4): the parser's and the checksum unit's verdicts in,
// egress_spec or mark_to_drop out; in egress, the packet_in header for the
// controller. This and target.p4 are the only places that know v1model's
// metadata.

#ifndef __TARGET_PIPELINE__
#define __TARGET_PIPELINE__

#include "../control/ingress.p4"

control QuickNatIngress(inout headers_t hdr,
                        inout local_metadata_t local_md,
                        inout standard_metadata_t standard_md) {

    QuickNatIngressCore() core;

    apply {
        local_md.source_routed = standard_md.parser_error == error.Ipv4SourceRoute;
        local_md.checksum_failed = standard_md.checksum_error == 1;
        core.apply(hdr, local_md);
        if (local_md.forward) {
            standard_md.egress_spec = local_md.egress_port;
        } else {
            mark_to_drop(standard_md);
        }
    }
}

control QuickNatEgress(inout headers_t hdr,
                       inout local_metadata_t local_md,
                       inout standard_metadata_t standard_md) {

    PacketInEncap() packet_in_encap;

    apply {
        packet_in_encap.apply(hdr, local_md, standard_md.egress_port);
    }
}

#endif // __TARGET_PIPELINE__
