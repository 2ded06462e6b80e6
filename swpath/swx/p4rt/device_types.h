// SPDX-License-Identifier: Apache-2.0
//
// What a Device (device.h) is built with, and the counts it and the
// Programs it runs (program.h) report: the one vocabulary of the two, so
// that neither includes the other's header (a program is built with its
// device's options; the device runs programs).
#ifndef SWX_P4RT_DEVICE_TYPES_H
#define SWX_P4RT_DEVICE_TYPES_H

#include <cstdint>
#include <vector>

extern "C" {
#include "build.h"
#include "ports.h"
}

namespace swx {

// How the device runs every program it is given (main.cc's options).
struct DeviceOptions {
  swx_build_options build{};  // zeroed: a field not set is "as default" (its cc too)
  swx_ports* ports = nullptr;
  std::vector<unsigned> lcores;  // one pipeline per lcore
  uint32_t idle_sleep_us = 0;
  // The learner tables' timeout classes, in seconds (--learn-timeouts;
  // empty: as p4c-dpdk compiled them). The same for every learner.
  std::vector<uint32_t> learn_timeouts;
};

struct PortStats {
  // tx_dropped: what the device would not take (its queue full)
  uint64_t rx_packets = 0, tx_packets = 0, tx_dropped = 0, truncated = 0;
};

// Packets the pipelines dropped on their way out, summed: those the program
// dropped (DPDK's drop port, which it adds after the last output port) and
// those it sent to a port number no device has (a sink: src/ports.h).
struct OutputDrops {
  uint64_t by_program = 0, no_device = 0;
};

// "S0,S1,...": a learner's timeout classes in seconds (1 to 8 of them,
// each at least 1): quicknat-swx --learn-timeouts and the device config's line.
bool ParseLearnTimeouts(const char* text, std::vector<uint32_t>* out);

// A learner table's statistics, summed over the pipelines (telemetry.h).
struct LearnerCounts {
  uint64_t hits = 0, misses = 0, learned = 0, learn_failed = 0, rearmed = 0;
};

// The PNA program's established-flow fast path (p4src/include/pna/
// fastpath.spec): packets it sent, and packets it handed on to the full
// program.
struct FastpathCounts {
  uint64_t sent = 0, handed_on = 0;
};

}  // namespace swx

#endif  // SWX_P4RT_DEVICE_TYPES_H
