// SPDX-License-Identifier: Apache-2.0
#include "bytestring.h"

#include <algorithm>

namespace swx {

namespace {

// Left-pad (or trim leading zeros of) a big-endian value to n bytes.
std::string Padded(const std::string& value, size_t n) {
  std::string v = Canonical(value);
  if (v.size() > n) return v.substr(v.size() - n);
  return std::string(n - v.size(), '\0') + v;
}

}  // namespace

bool FitsBitwidth(const std::string& value, uint32_t bitwidth) {
  size_t first = value.find_first_not_of('\0');
  if (first == std::string::npos) return !value.empty();  // zero fits; "" is no value
  uint32_t bits = static_cast<uint32_t>(value.size() - first) * 8;
  // the top byte's leading zero bits do not count
  for (uint8_t top = static_cast<uint8_t>(value[first]); !(top & 0x80); top <<= 1) bits--;
  return bits <= bitwidth;
}

std::string Canonical(const std::string& value) {
  size_t first = value.find_first_not_of('\0');
  if (first == std::string::npos) return std::string(1, '\0');
  return value.substr(first);
}

void ToField(const std::string& value, uint8_t* out, uint32_t n_bytes, bool network_order) {
  std::string v = Padded(value, n_bytes);
  if (network_order) {
    std::copy(v.begin(), v.end(), out);
  } else {
    std::reverse_copy(v.begin(), v.end(), out);
  }
}

std::string FromField(const uint8_t* in, uint32_t n_bytes, bool network_order,
                      uint32_t bitwidth) {
  std::string v(n_bytes, '\0');
  if (network_order) {
    std::copy(in, in + n_bytes, v.begin());
  } else {
    std::reverse_copy(in, in + n_bytes, v.begin());
  }
  // only the P4 bitwidth's bits: a field wider in the pipeline (a 9-bit
  // port in 32 bits) has zeros above them, but mask anyway
  uint32_t keep = (bitwidth + 7) / 8;
  if (keep < n_bytes) v = v.substr(n_bytes - keep);
  if (bitwidth % 8) v[0] = static_cast<char>(v[0] & ((1 << (bitwidth % 8)) - 1));
  return Canonical(v);
}

std::string PrefixMask(uint32_t prefix_len, uint32_t bitwidth) {
  uint32_t n = (bitwidth + 7) / 8;
  std::string mask(n, '\0');
  // bit i of the value counts from the most significant bit of bitwidth
  for (uint32_t i = 0; i < prefix_len && i < bitwidth; i++) {
    uint32_t bit = bitwidth - 1 - i;  // from the least significant end
    mask[n - 1 - bit / 8] = static_cast<char>(mask[n - 1 - bit / 8] | (1 << (bit % 8)));
  }
  return mask;
}

int MaskPrefixLen(const std::string& mask, uint32_t bitwidth) {
  std::string m = Padded(mask, (bitwidth + 7) / 8);
  int len = 0;
  bool zeros = false;
  for (uint32_t i = 0; i < bitwidth; i++) {
    uint32_t bit = bitwidth - 1 - i;
    bool set = (static_cast<uint8_t>(m[m.size() - 1 - bit / 8]) >> (bit % 8)) & 1;
    if (set && zeros) return -1;
    if (set) {
      len++;
    } else {
      zeros = true;
    }
  }
  return len;
}

bool WithinMask(const std::string& value, const std::string& mask) {
  size_t n = std::max(value.size(), mask.size());
  std::string v = Padded(value, n), m = Padded(mask, n);
  for (size_t i = 0; i < n; i++)
    if (static_cast<uint8_t>(v[i]) & ~static_cast<uint8_t>(m[i])) return false;
  return true;
}

uint64_t ToUint64(const std::string& value) {
  uint64_t v = 0;
  for (char c : Canonical(value)) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

std::string FromUint64(uint64_t v, uint32_t bitwidth) {
  uint32_t n = (bitwidth + 7) / 8;
  std::string out(n, '\0');
  for (uint32_t i = 0; i < n && i < 8; i++) out[n - 1 - i] = static_cast<char>(v >> (8 * i));
  return Canonical(out);
}

}  // namespace swx
