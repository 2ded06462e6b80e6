// SPDX-License-Identifier: Apache-2.0
//
// DPDK telemetry of the switch (usertools/dpdk-telemetry.py, or any client
// of its socket): /quicknat_swx/ports, each pipeline port's packets in and
// out summed over the pipelines, and what the input guard dropped
// (truncated); /quicknat_swx/tables, each table's hits and misses, and
// each learner table's learned, learn_failed and rearmed, by the
// pipeline's names (the spec's: core_nat_nat_in2out for nat_in2out).
// P4Runtime has no port counters; these are a switch's own.
#ifndef SWX_P4RT_TELEMETRY_H
#define SWX_P4RT_TELEMETRY_H

namespace swx {

class Device;

// Registers the commands, reading `device` (which outlives the EAL's
// telemetry thread: main.cc); false, with a message on stderr, when DPDK
// refused one (the switch runs on without it).
bool RegisterTelemetry(Device* device);
// The device is going: the commands answer empty from now on.
void DetachTelemetry();

}  // namespace swx

#endif  // SWX_P4RT_TELEMETRY_H
