// SPDX-License-Identifier: Apache-2.0
#include "device_types.h"

#include <cstdlib>

namespace swx {

// "S0,S1,...": up to 8 classes (p4c-dpdk's), each a whole second or more.
bool ParseLearnTimeouts(const char* text, std::vector<uint32_t>* out) {
  out->clear();
  const char* p = text;
  while (*p != '\0') {
    char* end = nullptr;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p || v == 0 || v > 86400 * 7 || out->size() == 8) return false;
    out->push_back(static_cast<uint32_t>(v));
    if (*end == ',') end++;
    else if (*end != '\0') return false;
    p = end;
  }
  return !out->empty();
}

}  // namespace swx
