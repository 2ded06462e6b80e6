// SPDX-License-Identifier: Apache-2.0
//
// The P4Info's objects bound to the pipeline's: which SWX table, action,
// argument, selector, register array and meter array each P4Info id is.
// p4c-dpdk names them after the P4 names (without the top control's,
// dots made underscores, a copy of an action per table suffixed _N; an
// action profile's member table after the profile, its selector NAME_sel),
// and keeps a table's key fields and an action's arguments in the
// program's order (the P4Info ids' order); Bind checks every count and
// width. (Its context JSON would name them too, but p4c-dpdk 1.2.4.17
// cannot write one for a program with an action selector in a nested
// control: "unable to find id for ..._sel".)
#ifndef SWX_P4RT_BINDING_H
#define SWX_P4RT_BINDING_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "p4/config/v1/p4info.pb.h"

extern "C" {
#include "info.h"
}

namespace swx {

struct FieldBinding {
  uint32_t id = 0;        // P4Info match field id
  std::string name;
  uint32_t bitwidth = 0;  // P4's
  p4::config::v1::MatchField::MatchType match = p4::config::v1::MatchField::UNSPECIFIED;
  const swx_field* field = nullptr;  // where it sits in the SWX key
};

struct ParamBinding {
  uint32_t id = 0;
  std::string name;
  uint32_t bitwidth = 0;
  const swx_arg* arg = nullptr;
};

struct ActionBinding {
  uint32_t id = 0;        // P4Info action id
  std::string name;
  uint32_t swx_id = 0;    // pipeline action id
  const swx_action_layout* layout = nullptr;
  std::vector<ParamBinding> params;  // by P4Info param id order
  const ParamBinding* Param(uint32_t id) const;
};

struct ActionRef {
  const ActionBinding* action = nullptr;
  bool table_only = false;    // @tableonly
  bool default_only = false;  // @defaultonly
};

struct ProfileBinding;

struct CounterBinding {
  uint32_t id = 0;
  std::string name;
  p4::config::v1::CounterSpec::Unit unit = p4::config::v1::CounterSpec::UNSPECIFIED;
  int packets = -1, bytes = -1;  // register arrays (PACKETS_AND_BYTES has both)
  uint32_t size = 0;
  // A direct counter is indexed by the data plane's entry id, 1 + the
  // table's key slot (0 is a miss: rte_swx_pipeline.c's entryid).
  uint32_t table_id = 0;  // P4Info table of a direct counter; 0 otherwise
};

struct MeterBinding {
  uint32_t id = 0;
  std::string name;
  p4::config::v1::MeterSpec::Unit unit = p4::config::v1::MeterSpec::UNSPECIFIED;
  std::string metarray;
  uint32_t size = 0;
};

struct TableBinding {
  uint32_t id = 0;  // P4Info table id
  std::string name;
  uint32_t swx_id = 0;
  const swx_table_layout* layout = nullptr;
  std::vector<FieldBinding> fields;  // by P4Info match field id order
  std::unordered_map<uint32_t, ActionRef> actions;  // P4Info action id
  uint32_t size = 0;
  bool idle_timeout = false;    // NOTIFY_CONTROL in the P4Info, or counted
  uint32_t const_default_action = 0;
  bool lpm = false;             // has an LPM field (the priority is its prefix)
  bool ternary = false;         // needs a P4Runtime priority
  const CounterBinding* direct_counter = nullptr;
  const ProfileBinding* profile = nullptr;  // action selector or profile
  const FieldBinding* Field(uint32_t id) const;
};

// An action profile (or selector): its members live in the member table
// (keyed by member id), a table entry names a member or a group through
// the compiler's set_member_id / set_group_id actions of its table.
struct ProfileBinding {
  uint32_t id = 0;
  std::string name;
  uint32_t size = 0;
  uint32_t max_group_size = 0;
  int selector = -1;                  // SWX selector; -1: a plain profile
  const TableBinding* member_table = nullptr;  // P4-invisible: key = member id
  int set_member_action = -1;  // pipeline action ids, in the table that uses it
  int set_group_action = -1;
};

struct PacketMetadataBinding {
  uint32_t id = 0;
  std::string name;
  uint32_t bitwidth = 0;
  bool padding = false;  // @padding: zero out, never reported in
};

class Binding {
 public:
  // Binds p4info to the pipeline described by info, built from `spec` (the
  // device config: its controller headers' layout is only there). Empty
  // string: bound; else what does not bind.
  std::string Bind(const p4::config::v1::P4Info& p4info, const swx_info* info,
                   const std::string& spec);

  const TableBinding* Table(uint32_t id) const;
  const CounterBinding* Counter(uint32_t id) const;
  const CounterBinding* DirectCounter(uint32_t id) const;
  const MeterBinding* Meter(uint32_t id) const;
  const ProfileBinding* Profile(uint32_t id) const;
  const std::map<uint32_t, TableBinding>& Tables() const { return tables_; }
  // P4Info tables that are the pipeline's learner tables (PNA add_on_miss):
  // their entries are the data plane's, never written or read here; by P4
  // id, the learner's name.
  const std::map<uint32_t, std::string>& Learners() const { return learners_; }
  const std::map<uint32_t, CounterBinding>& Counters() const { return counters_; }
  const std::map<uint32_t, MeterBinding>& Meters() const { return meters_; }
  const std::map<uint32_t, ProfileBinding>& Profiles() const { return profiles_; }
  // controller_packet_metadata "packet_in" / "packet_out", in header order
  const std::vector<PacketMetadataBinding>& PacketIn() const { return packet_in_; }
  const std::vector<PacketMetadataBinding>& PacketOut() const { return packet_out_; }

 private:
  // Bind's steps, one per kind of P4Info object (binding.cc says the order)
  std::string BindTables(const p4::config::v1::P4Info& p4info, const swx_info* info);
  std::string BindActions(const p4::config::v1::P4Info& p4info, const swx_info* info);
  std::string BindAction(const p4::config::v1::Action& a, int swx_action, const swx_info* info,
                         const ActionBinding** out);
  std::string BindProfiles(const p4::config::v1::P4Info& p4info, const swx_info* info);
  std::string BindCounters(const p4::config::v1::P4Info& p4info, const swx_info* info);
  std::string BindDirectCounters(const p4::config::v1::P4Info& p4info, const swx_info* info);
  std::string BindMeters(const p4::config::v1::P4Info& p4info, const swx_info* info);
  std::string CheckIdleTimeouts(const p4::config::v1::P4Info& p4info, const swx_info* info);
  std::string BindPacketMetadata(const p4::config::v1::P4Info& p4info, const std::string& spec);

  std::map<uint32_t, TableBinding> tables_;
  std::map<uint32_t, std::string> learners_;
  // one per (P4 action, pipeline action): tables point into it
  std::vector<std::unique_ptr<ActionBinding>> action_storage_;
  std::map<uint32_t, CounterBinding> counters_;
  std::map<uint32_t, CounterBinding> direct_counters_;
  std::map<uint32_t, MeterBinding> meters_;
  std::map<uint32_t, ProfileBinding> profiles_;
  std::vector<PacketMetadataBinding> packet_in_, packet_out_;
  std::map<uint32_t, TableBinding> hidden_;  // action profiles' member tables, by SWX id
};

}  // namespace swx

#endif  // SWX_P4RT_BINDING_H
