// SPDX-License-Identifier: Apache-2.0
//
// One P4 program running: its pipelines (one per thread, each with the same
// tables), the P4Info bound to them, and what P4Runtime wrote: every table
// entry (for Read, and for the duplicate checks rte_swx_ctl would make in
// O(entries): here a hash index, see src/tables.h), action profile members
// and groups, meter configurations. A WriteRequest is checked update by
// update against this state, staged into every pipeline's tables, and
// committed once: the data plane sees it whole, the flows of a batch share
// one table swap.
//
// Its code is in program_*.cc, a file per concern: build (and start/stop),
// commit (a WriteRequest as one commit), table_writes (entries, action
// profiles), counters_meters, reads, packet_io, stats.
#ifndef SWX_P4RT_PROGRAM_H
#define SWX_P4RT_PROGRAM_H

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "binding.h"
#include "device_types.h"
#include "entry_codec.h"
#include "p4/v1/p4runtime.pb.h"

extern "C" {
#include "fastpath_stats.h"
#include "info.h"
#include "runner.h"
#include "tables.h"
}

namespace swx {

class Program {
 public:
  // Builds the pipelines (not started) and binds the P4Info. nullptr and
  // why in *status when the config does not build or bind.
  static std::unique_ptr<Program> Build(const DeviceOptions& options,
                                        const p4::v1::ForwardingPipelineConfig& config,
                                        uint64_t generation, grpc::Status* status);
  ~Program();

  grpc::Status Start(const DeviceOptions& options);  // the pipeline threads
  void Stop();
  const p4::v1::ForwardingPipelineConfig& config() const { return config_; }
  // The cookie of a config that is this one (RECONCILE_AND_COMMIT).
  void TakeCookie(const p4::v1::ForwardingPipelineConfig& from) {
    if (from.has_cookie())
      *config_.mutable_cookie() = from.cookie();
    else
      config_.clear_cookie();
  }

  grpc::Status Write(const p4::v1::WriteRequest& request, std::vector<p4::v1::Error>* errors);
  grpc::Status Read(const p4::v1::ReadRequest& request,
                    const std::function<void(const p4::v1::ReadResponse&)>& send);
  grpc::Status PacketOut(const p4::v1::PacketOut& packet, swx_ports* ports);
  size_t TakePacketIns(swx_ports* ports, std::vector<p4::v1::PacketIn>* out, size_t max);
  void TakeIdle(std::vector<p4::v1::TableEntry>* out);
  void PortStats(const swx_ports& ports,
                 const std::function<void(uint32_t, const swx::PortStats&)>& each,
                 OutputDrops* drops) const;
  void TableStats(
      const std::function<void(const std::string&, uint64_t, uint64_t)>& each) const;
  void LearnerStats(
      const std::function<void(const std::string&, const LearnerCounts&)>& each) const;
  bool FastpathStats(FastpathCounts* counts) const;

 private:
  struct Instance {
    rte_swx_pipeline* pipeline = nullptr;
    swx_tables* tables = nullptr;
    swx_runner runner{};
    bool started = false;
  };
  struct Stored {
    std::string entry;  // the TableEntry as Read returns it, serialized
    EncodedEntry encoded;
    int64_t slot = -1;  // the key's slot in an exact-match table
    uint64_t base_packets = 0, base_bytes = 0;  // the direct counter at insert
    // idle timeout: the packet count last seen, since when, and whether the
    // controller was told
    uint64_t seen_packets = 0;
    std::chrono::steady_clock::time_point seen_at;
    uint64_t idle_timeout_ns = 0;
    bool reported = false;
  };
  struct Table {
    const TableBinding* binding = nullptr;
    std::unordered_map<std::string, Stored> entries;  // EncodedEntry::Identity
    std::string default_entry;  // set by a MODIFY, serialized; empty: the program's
  };
  struct Member {
    p4::v1::ActionProfileMember member;
    EncodedEntry encoded;
  };
  struct Profile {
    const ProfileBinding* binding = nullptr;
    std::map<uint32_t, Member> members;
    std::map<uint32_t, p4::v1::ActionProfileGroup> groups;
  };
  // What an update changed, to put back if the commit refuses it.
  struct Undo {
    std::function<void()> revert;
    std::function<void()> after_commit;  // what needs the committed tables
  };

  Program() = default;
  // Build's steps (program_build.cc)
  grpc::Status BuildPipelines(const DeviceOptions& options, uint64_t generation);
  grpc::Status SetLearnTimeouts(const std::vector<uint32_t>& given);
  grpc::Status BindP4Info();

  grpc::Status WriteOne(const p4::v1::Update& update, Undo* undo);
  grpc::Status UnknownTable(uint32_t id) const;
  grpc::Status WriteTableEntry(p4::v1::Update::Type type, const p4::v1::TableEntry& entry,
                               Undo* undo);
  grpc::Status WriteDefault(p4::v1::Update::Type type, const p4::v1::TableEntry& entry,
                            Undo* undo);
  grpc::Status WriteMember(p4::v1::Update::Type type, const p4::v1::ActionProfileMember& m,
                           Undo* undo);
  grpc::Status WriteGroup(p4::v1::Update::Type type, const p4::v1::ActionProfileGroup& g,
                          Undo* undo);
  grpc::Status WriteMeter(const p4::v1::MeterEntry& m);
  grpc::Status WriteCounter(const p4::v1::CounterEntry& c);
  grpc::Status EncodeTableAction(const Table& table, const p4::v1::TableEntry& entry,
                                 bool for_default, EncodedEntry* out);

  // the same change to every pipeline's tables
  void StageAdd(uint32_t table, const EncodedEntry& e);
  void StageDelete(uint32_t table, const EncodedEntry& e);
  void StageDefault(uint32_t table, const EncodedEntry& e);
  void StageGroup(const ProfileBinding& profile, const p4::v1::ActionProfileGroup& g);
  int Commit(std::vector<int>* results);

  void ReadTable(const p4::v1::TableEntry& query,
                 const std::function<void(p4::v1::Entity&&)>& emit);
  grpc::Status ReadTableEntries(const p4::v1::TableEntry& query,
                                const std::function<void(p4::v1::Entity&&)>& emit);
  grpc::Status ReadCounters(const p4::v1::CounterEntry& query,
                            const std::function<void(p4::v1::Entity&&)>& emit);
  grpc::Status ReadMeters(const p4::v1::MeterEntry& query,
                          const std::function<void(p4::v1::Entity&&)>& emit);
  void ReadProfiles(const p4::v1::Entity& query,
                    const std::function<void(p4::v1::Entity&&)>& emit);
  // a counter's packets and bytes summed over the pipelines
  void CounterValue(const CounterBinding& c, uint32_t index, uint64_t* packets,
                    uint64_t* bytes) const;
  void DirectCounterData(const Table& table, const Stored& s, p4::v1::CounterData* data) const;

  p4::v1::ForwardingPipelineConfig config_;
  std::vector<Instance> instances_;
  swx_info info_{};
  // the lookups the fast path repeats, which TableStats leaves out
  swx_fastpath_exits fastpath_exits_{};
  Binding binding_;
  std::map<uint32_t, Table> tables_;      // P4Info table id
  std::map<uint32_t, Profile> profiles_;  // P4Info action profile id
  std::map<std::pair<uint32_t, uint32_t>, p4::v1::MeterConfig> meters_;
  // A DPDK meter profile per configuration some cell has, deleted with its
  // last cell: DPDK keeps them in a list it scans on every add and set.
  struct MeterProfile {
    std::string name;
    size_t cells = 0;
  };
  std::map<std::string, MeterProfile> meter_profiles_;  // MeterProfileKey
  uint64_t meter_profiles_added_ = 0;                   // names them
  void ReleaseMeterProfile(const std::string& key);
  size_t staged_ = 0;
};

}  // namespace swx

#endif  // SWX_P4RT_PROGRAM_H
