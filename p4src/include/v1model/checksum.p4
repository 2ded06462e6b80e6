// SPDX-License-Identifier: Apache-2.0
//
// v1model: the IPv4 header checksum verified (options included) by the
// architecture's verify_checksum; standard_metadata.checksum_error says
// how it went (v1model/pipeline.p4).

#ifndef __TARGET_CHECKSUM__
#define __TARGET_CHECKSUM__

#include "../checksum.p4"

control QuickNatVerifyChecksum(inout headers_t hdr,
                               inout local_metadata_t local_md) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && !hdr.ipv4_options.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp_ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification,
              hdr.ipv4.flag_reserved, hdr.ipv4.flag_dont_fragment,
              hdr.ipv4.flag_more_fragments, hdr.ipv4.frag_offset,
              hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4_options.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp_ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification,
              hdr.ipv4.flag_reserved, hdr.ipv4.flag_dont_fragment,
              hdr.ipv4.flag_more_fragments, hdr.ipv4.frag_offset,
              hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
              hdr.ipv4_options.options },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

// The header checksum is updated where the header changes (checksum.p4).
control QuickNatComputeChecksum(inout headers_t hdr,
                                inout local_metadata_t local_md) {
    apply { }
}

#endif // __TARGET_CHECKSUM__
