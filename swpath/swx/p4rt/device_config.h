// SPDX-License-Identifier: Apache-2.0
//
// The p4_device_config of this target: one JSON object,
//   {"spec": "<the SWX spec p4c-dpdk wrote>", "context": {<its context JSON>}}
// (p4src/build/pna/quicknat.swx.json, made by p4src/Makefile). The spec is
// what the pipeline runs; the context names, for each P4 table, action and
// extern, the pipeline object p4c-dpdk made of it (binding.h).
#ifndef SWX_P4RT_DEVICE_CONFIG_H
#define SWX_P4RT_DEVICE_CONFIG_H

#include <string>

namespace swx {

struct DeviceConfig {
  std::string spec;
  std::string context;  // JSON text
};

// Empty string: parsed; else what is wrong with it.
std::string ParseDeviceConfig(const std::string& bytes, DeviceConfig* out);

}  // namespace swx

#endif  // SWX_P4RT_DEVICE_CONFIG_H
