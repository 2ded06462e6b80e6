// SPDX-License-Identifier: Apache-2.0
//
// Checksums.
// - IPv4 header checksum: verified on the way in (a failure is dropped by
//   ingress as IPV4_CHECKSUM) and recomputed on the way out, options
//   included, only when the pipeline changed the header; an untouched
//   header (packet-in, direct packet-out) leaves exactly as it came.
// - TCP/UDP/ICMP checksums: updated incrementally (RFC 1624) by the controls
//   that rewrite covered fields. An incremental update needs only the old
//   checksum and the changed 16-bit words, so it stays correct for any
//   payload length and for first fragments, whose payload the switch never
//   sees whole, and it leaves a wrong checksum wrong (the end host still
//   detects the corruption).

#ifndef __CHECKSUM__
#define __CHECKSUM__

#include "header.p4"

// ---- One's-complement helpers (RFC 1071, RFC 1624) -------------------------
//
// A 32-bit accumulator holds a sum of up to 65537 16-bit words without
// overflow; callers add at most 13. Folding the carries once can itself
// carry (0x2ffff -> 0xffff + 0x2 = 0x10001), so fold twice; after the
// second fold the value fits in 16 bits for any sum of up to 65537 words.

bit<16> csum16_fold(in bit<32> sum) {
    bit<32> folded = (sum & 0xffff) + (sum >> 16);
    folded = (folded & 0xffff) + (folded >> 16);
    return folded[15:0];
}

// ~m + m' for a 16-bit field changing from m to m'.
bit<32> csum16_delta16(in bit<16> old_value, in bit<16> new_value) {
    return (bit<32>)(~old_value) + (bit<32>)new_value;
}

// ~m + m' for a 32-bit field (an IPv4 address), as two 16-bit words.
bit<32> csum16_delta32(in bit<32> old_value, in bit<32> new_value) {
    return (bit<32>)(~old_value[31:16]) + (bit<32>)(~old_value[15:0])
         + (bit<32>)new_value[31:16] + (bit<32>)new_value[15:0];
}

// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), with delta the sum of ~m + m'
// over the changed words. Unlike eqn. 2 (HC' = HC - ~m - m') it never
// produces 0xffff (-0) for a checksum whose correct value is 0x0000 (+0).
bit<16> csum16_update(in bit<16> checksum, in bit<32> delta) {
    return ~csum16_fold((bit<32>)(~checksum) + delta);
}

// ---- v1model checksum controls ---------------------------------------------

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

control QuickNatComputeChecksum(inout headers_t hdr,
                                inout local_metadata_t local_md) {
    apply {
        update_checksum(local_md.ipv4_changed && hdr.ipv4.isValid()
                            && !hdr.ipv4_options.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp_ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification,
              hdr.ipv4.flag_reserved, hdr.ipv4.flag_dont_fragment,
              hdr.ipv4.flag_more_fragments, hdr.ipv4.frag_offset,
              hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(local_md.ipv4_changed && hdr.ipv4.isValid()
                            && hdr.ipv4_options.isValid(),
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

#endif // __CHECKSUM__
