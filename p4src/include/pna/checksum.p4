// SPDX-License-Identifier: Apache-2.0
//
// PNA: the IPv4 header checksum verified in the main control (PNA has no
// checksum blocks). A header with options is not
// verified here: such a datagram is the slow path's (pna/ipv4_options.p4),
// which verifies it.

#ifndef __TARGET_CHECKSUM__
#define __TARGET_CHECKSUM__

#include "../checksum.p4"

control Ipv4ChecksumVerify(in headers_t hdr,
                           inout local_metadata_t local_md) {
    apply {
        if (hdr.ipv4.isValid() && !local_md.opaque_l4) {
            // RFC 1071 over the header's ten 16-bit words, the checksum's
            // among them: right when the folded sum is 0xffff (-0). In
            // plain arithmetic rather than the InternetChecksum extern,
            // which p4c-dpdk feeds the header's sub-byte fields one by one
            // (it merges them into bytes in the spec) and gets wrong.
            bit<32> sum = (bit<32>)(hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp_ecn)
                + (bit<32>)hdr.ipv4.total_len + (bit<32>)hdr.ipv4.identification
                + (bit<32>)(hdr.ipv4.flag_reserved ++ hdr.ipv4.flag_dont_fragment
                            ++ hdr.ipv4.flag_more_fragments ++ hdr.ipv4.frag_offset)
                + (bit<32>)(hdr.ipv4.ttl ++ hdr.ipv4.protocol)
                + (bit<32>)hdr.ipv4.hdr_checksum
                + (bit<32>)hdr.ipv4.src_addr[31:16] + (bit<32>)hdr.ipv4.src_addr[15:0]
                + (bit<32>)hdr.ipv4.dst_addr[31:16] + (bit<32>)hdr.ipv4.dst_addr[15:0];
            if (csum16_fold(sum) != 0xffff) {
                local_md.checksum_failed = true;
            }
        }
    }
}

#endif // __TARGET_CHECKSUM__
