// SPDX-License-Identifier: Apache-2.0
//
// A WriteRequest as one commit: each update checked and staged into every
// pipeline's tables, then one commit; an update the pipeline refuses is
// put back (its Undo) and answered with why.
#include "program.h"

#include <cerrno>
#include <cstring>

#include "program_shared.h"

namespace swx {

using grpc::Status;
using grpc::StatusCode;
using p4::v1::Update;

// -- staging ----------------------------------------------------------------

void Program::StageAdd(uint32_t table, const EncodedEntry& e) {
  swx_entry s = ToSwx(table, e);
  for (auto& in : instances_) swx_tables_add(in.tables, &s);
  staged_++;
}

void Program::StageDelete(uint32_t table, const EncodedEntry& e) {
  swx_entry s = ToSwx(table, e);
  for (auto& in : instances_) swx_tables_delete(in.tables, &s);
  staged_++;
}

void Program::StageDefault(uint32_t table, const EncodedEntry& e) {
  for (auto& in : instances_)
    swx_tables_set_default(in.tables, table, e.action,
                           reinterpret_cast<const uint8_t*>(e.data.data()));
  staged_++;
}

void Program::StageGroup(const ProfileBinding& p, const p4::v1::ActionProfileGroup& g) {
  std::vector<uint32_t> members, weights;
  for (const auto& m : g.members()) {
    members.push_back(m.member_id());
    weights.push_back(m.weight() > 0 ? static_cast<uint32_t>(m.weight()) : 1);
  }
  for (auto& in : instances_)
    swx_tables_set_group(in.tables, static_cast<uint32_t>(p.selector), g.group_id(),
                         members.data(), weights.data(), static_cast<uint32_t>(members.size()));
  staged_++;
}

int Program::Commit(std::vector<int>* results) {
  results->assign(staged_, 0);
  int failed = 0;
  std::vector<int> other(staged_, 0);
  for (size_t i = 0; i < instances_.size(); i++) {
    // every pipeline got the same changes: they fail alike
    int f = swx_tables_commit(instances_[i].tables, i ? other.data() : results->data(), staged_);
    if (i == 0) failed = f;
  }
  staged_ = 0;
  return failed;
}

// -- writes -----------------------------------------------------------------

Status Program::Write(const p4::v1::WriteRequest& request, std::vector<p4::v1::Error>* errors) {
  const int n = request.updates_size();
  std::vector<Status> status(n);
  std::vector<Undo> undo(n);
  std::vector<std::pair<size_t, size_t>> ops(n);  // each update's staged changes
  for (int i = 0; i < n; i++) {
    size_t before = staged_;
    status[i] = WriteOne(request.updates(i), &undo[i]);
    ops[i] = {before, staged_};
  }
  std::vector<int> results;
  if (staged_ > 0 && Commit(&results) > 0) {
    for (int i = n - 1; i >= 0; i--) {
      for (size_t k = ops[i].first; k < ops[i].second; k++) {
        if (results[k] == 0) continue;
        status[i] = results[k] == -ENOSPC
                        ? Status(StatusCode::RESOURCE_EXHAUSTED, "the table is full")
                        : Status(StatusCode::INTERNAL,
                                 std::string("the pipeline refused it: ") + strerror(-results[k]));
        if (undo[i].revert) undo[i].revert();
        undo[i].after_commit = nullptr;
        break;
      }
    }
  }
  errors->resize(n);
  for (int i = 0; i < n; i++) {
    if (status[i].ok() && undo[i].after_commit) undo[i].after_commit();
    (*errors)[i].set_canonical_code(status[i].error_code());
    (*errors)[i].set_message(status[i].error_message());
    (*errors)[i].set_space("grpc");
  }
  return Status::OK;
}

Status Program::WriteOne(const Update& update, Undo* undo) {
  const auto& e = update.entity();
  if (update.type() != Update::INSERT && update.type() != Update::MODIFY &&
      update.type() != Update::DELETE)
    return Invalid("no such update type");
  switch (e.entity_case()) {
    case p4::v1::Entity::kTableEntry:
      return WriteTableEntry(update.type(), e.table_entry(), undo);
    case p4::v1::Entity::kActionProfileMember:
      return WriteMember(update.type(), e.action_profile_member(), undo);
    case p4::v1::Entity::kActionProfileGroup:
      return WriteGroup(update.type(), e.action_profile_group(), undo);
    case p4::v1::Entity::kMeterEntry:
      if (update.type() != Update::MODIFY) return Invalid("meter entries are only modified");
      return WriteMeter(e.meter_entry());
    case p4::v1::Entity::kCounterEntry:
      if (update.type() != Update::MODIFY) return Invalid("counter entries are only modified");
      return WriteCounter(e.counter_entry());
    case p4::v1::Entity::kPacketReplicationEngineEntry:
      return Status(StatusCode::UNIMPLEMENTED,
                    "this target has no packet replication engine (PNA on DPDK SWX: no clone "
                    "sessions; p4src/README.md says what the program does instead)");
    default:
      return Status(StatusCode::UNIMPLEMENTED, "this entity is not implemented on this target");
  }
}

}  // namespace swx
