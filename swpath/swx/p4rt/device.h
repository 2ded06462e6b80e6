// SPDX-License-Identifier: Apache-2.0
//
// One P4Runtime device: the P4 program running on DPDK's SWX pipeline, one
// pipeline per thread (each its own queue of every port, the same tables
// written to each), and what P4Runtime sees of it. The program arrives as a
// ForwardingPipelineConfig: its P4Info and, as p4_device_config, the SWX
// spec p4c-dpdk wrote (p4src/build/pna/quicknat.spec). A new program
// replaces the running one with empty tables (VERIFY_AND_COMMIT); the
// ports stay.
#ifndef SWX_P4RT_DEVICE_H
#define SWX_P4RT_DEVICE_H

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device_types.h"
#include "p4/v1/p4runtime.pb.h"

namespace swx {

class Program;

class Device {
 public:
  using Options = DeviceOptions;

  explicit Device(Options options);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  grpc::Status Verify(const p4::v1::ForwardingPipelineConfig& config);
  grpc::Status Save(const p4::v1::ForwardingPipelineConfig& config);
  grpc::Status Commit(const p4::v1::ForwardingPipelineConfig& config);
  grpc::Status CommitSaved();
  grpc::Status Reconcile(const p4::v1::ForwardingPipelineConfig& config);
  grpc::Status GetConfig(p4::v1::GetForwardingPipelineConfigRequest::ResponseType type,
                         p4::v1::ForwardingPipelineConfig* config);

  // One WriteRequest: errors gets one entry per update (OK or why not).
  // A non-OK status fails the whole request (no pipeline yet).
  grpc::Status Write(const p4::v1::WriteRequest& request, std::vector<p4::v1::Error>* errors);
  grpc::Status Read(const p4::v1::ReadRequest& request,
                    const std::function<void(const p4::v1::ReadResponse&)>& send);

  grpc::Status PacketOut(const p4::v1::PacketOut& packet);
  // Up to max packets the pipeline sent to the CPU port, waiting up to
  // `wait` for the first. How many.
  size_t TakePacketIns(std::vector<p4::v1::PacketIn>* out, size_t max,
                       std::chrono::milliseconds wait);
  // The entries that have been idle for their idle_timeout_ns since they
  // were last reported (each once, until a packet hits it again).
  void TakeIdle(std::vector<p4::v1::TableEntry>* out);

  // The running pipelines' port and table counts, summed over the
  // pipelines (telemetry.h): the CPU port and each port with a device;
  // nothing without a program.
  void PortStats(const std::function<void(uint32_t, const swx::PortStats&)>& each,
                 OutputDrops* drops);
  void TableStats(
      const std::function<void(const std::string&, uint64_t hits, uint64_t misses)>& each);
  void LearnerStats(const std::function<void(const std::string&, const LearnerCounts&)>& each);
  // false when the running program has no fast path
  bool FastpathStats(FastpathCounts* counts);

 private:
  std::unique_ptr<Program> Build(const p4::v1::ForwardingPipelineConfig& config,
                                 grpc::Status* status);
  grpc::Status Install(std::unique_ptr<Program> program);

  Options options_;
  std::mutex mutex_;  // program_ and everything in it
  // Packet I/O takes a reference to the running program and works without
  // the mutex (a commit must not hold back packet-ins); a program replaced
  // meanwhile stops when its last reference goes.
  std::shared_ptr<Program> program_;
  std::shared_ptr<Program> Running();
  std::unique_ptr<p4::v1::ForwardingPipelineConfig> saved_;
  uint64_t generation_ = 0;  // pipeline names must differ from the last ones
};

}  // namespace swx

#endif  // SWX_P4RT_DEVICE_H
