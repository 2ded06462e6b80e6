// SPDX-License-Identifier: Apache-2.0
//
// DPDK telemetry of the switch (usertools/dpdk-telemetry.py, or any client
// of its socket): /quicknat_swx/ports, each pipeline port's packets in and
// out summed over the pipelines, and what the input guard dropped
// (truncated); /quicknat_swx/tables, each table's hits and misses.
// P4Runtime has no port counters; these are a switch's own.
#ifndef SWX_P4RT_TELEMETRY_H
#define SWX_P4RT_TELEMETRY_H

namespace swx {

class Device;

// Registers the commands, reading `device` (which outlives the EAL's
// telemetry thread: main.cc).
void RegisterTelemetry(Device* device);
// The device is going: the commands answer empty from now on.
void DetachTelemetry();

}  // namespace swx

#endif  // SWX_P4RT_TELEMETRY_H
