// SPDX-License-Identifier: Apache-2.0
//
// P4Runtime's binary strings (P4Runtime spec sec. 8.4) and the pipeline's
// field bytes. A P4Runtime value is big-endian; a client may send it with
// leading zero bytes or without (the canonical form, which Read returns),
// but never wider than its bitwidth. The pipeline keeps a header field in
// network order and a metadata field or action argument in host order, in
// as many bytes as the spec gives it (at least the P4 bitwidth).
#ifndef SWX_P4RT_BYTESTRING_H
#define SWX_P4RT_BYTESTRING_H

#include <cstdint>
#include <string>

namespace swx {

// Whether `value` is a binary string of a `bitwidth`-bit value: not empty,
// no bit set past the width, leading zero bytes allowed (P4Runtime sec.
// 8.4; the server answers any other with OUT_OF_RANGE). Allocates
// nothing: the write path asks it of every field.
bool FitsBitwidth(const std::string& value, uint32_t bitwidth);

// The value with its leading zero bytes removed (at least one byte).
std::string Canonical(const std::string& value);

// Big-endian value -> field bytes: `n_bytes` at `out`, network order when
// `network_order`, else host (little-endian) order. Caller checked the width.
void ToField(const std::string& value, uint8_t* out, uint32_t n_bytes, bool network_order);

// Field bytes -> canonical big-endian value of `bitwidth` bits.
std::string FromField(const uint8_t* in, uint32_t n_bytes, bool network_order,
                      uint32_t bitwidth);

// An LPM prefix or a ternary mask of `bitwidth` bits, as a big-endian value.
std::string PrefixMask(uint32_t prefix_len, uint32_t bitwidth);

// The prefix length of a big-endian mask, or -1 when it is not a prefix.
int MaskPrefixLen(const std::string& mask, uint32_t bitwidth);

// Value & mask == value (no bit set outside the mask: P4Runtime sec. 9.1.1).
bool WithinMask(const std::string& value, const std::string& mask);

uint64_t ToUint64(const std::string& value);
std::string FromUint64(uint64_t v, uint32_t bitwidth);

}  // namespace swx

#endif  // SWX_P4RT_BYTESTRING_H
