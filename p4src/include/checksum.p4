// SPDX-License-Identifier: Apache-2.0
//
// Checksums.
// - IPv4 header checksum: verified on the way in by the target
//   (v1model/checksum.p4, pna/checksum.p4; a failure is dropped by ingress
//   as IPV4_CHECKSUM) and updated incrementally (RFC 1624) by the controls
//   that change the header (a TTL, an address), options or not: an
//   untouched header (packet-in, direct packet-out) leaves as it came.
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

// The IPv4 header checksum after one of its 16-bit words changed, e.g. the
// TTL and protocol word after a TTL decrement.
bit<16> ipv4_checksum_word(in bit<16> checksum, in bit<16> old_word,
                           in bit<16> new_word) {
    return csum16_update(checksum, csum16_delta16(old_word, new_word));
}

#endif // __CHECKSUM__
