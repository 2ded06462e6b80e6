// SPDX-License-Identifier: Apache-2.0
//
// Writes of table entries (and default entries) and of action profile
// members and groups: checked against what P4Runtime wrote before, then
// staged (program_commit.cc commits them).
#include "program.h"

#include <chrono>
#include <optional>
#include <set>

#include "program_shared.h"

namespace swx {

using grpc::Status;
using grpc::StatusCode;
using p4::v1::Update;

Status Program::EncodeTableAction(const Table& table, const p4::v1::TableEntry& entry,
                                  bool for_default, EncodedEntry* out) {
  const TableBinding& b = *table.binding;
  const auto& a = entry.action();
  if (a.has_action()) {
    if (b.profile != nullptr)
      return Invalid("table " + b.name + " takes action profile members or groups");
    return EncodeAction(b, a.action(), for_default, out);
  }
  if (b.profile == nullptr) return Invalid("table " + b.name + ": an entry needs an action");
  const Profile& p = profiles_.at(b.profile->id);
  uint32_t id;
  int swx_action;
  if (a.type_case() == p4::v1::TableAction::kActionProfileMemberId) {
    id = a.action_profile_member_id();
    if (!p.members.count(id)) return NotFound("no member " + std::to_string(id));
    swx_action = p.binding->set_member_action;
  } else if (a.type_case() == p4::v1::TableAction::kActionProfileGroupId) {
    id = a.action_profile_group_id();
    if (p.binding->selector < 0) return Invalid("action profile " + p.binding->name + " has no groups");
    if (!p.groups.count(id)) return NotFound("no group " + std::to_string(id));
    swx_action = p.binding->set_group_action;
  } else {
    return Status(StatusCode::UNIMPLEMENTED, "one-shot action sets are not implemented");
  }
  const swx_action_layout& layout = info_.actions[swx_action];
  out->action = static_cast<uint32_t>(swx_action);
  out->data.assign(layout.data_size, '\0');
  ToField(FromUint64(id, 32), reinterpret_cast<uint8_t*>(&out->data[layout.args[0].offset]),
          layout.args[0].n_bits / 8, layout.args[0].network_order);
  return Status::OK;
}

// A table id that is no table of ours: a learner's (its entries are the
// data plane's: DPDK 22.11 can neither write nor list them through its
// control API) or none.
Status Program::UnknownTable(uint32_t id) const {
  auto learner = binding_.Learners().find(id);
  if (learner != binding_.Learners().end())
    return Status(StatusCode::UNIMPLEMENTED, "table " + learner->second +
                                                 " is learned by the data plane (PNA "
                                                 "add_on_miss): its entries are not written or read");
  return NotFound("no table id " + std::to_string(id));
}

Status Program::WriteTableEntry(Update::Type type, const p4::v1::TableEntry& given, Undo* undo) {
  auto it = tables_.find(given.table_id());
  if (it == tables_.end()) return UnknownTable(given.table_id());
  if (given.is_default_action()) return WriteDefault(type, given, undo);
  Table& table = it->second;
  const TableBinding& b = *table.binding;
  EncodedEntry enc;
  if (Status s = EncodeMatch(b, given, &enc); !s.ok()) return s;
  std::string identity = enc.Identity();
  auto found = table.entries.find(identity);
  if (type == Update::DELETE) {
    if (found == table.entries.end()) return NotFound("table " + b.name + ": no such entry");
    StageDelete(b.swx_id, found->second.encoded);
    undo->revert = [&table, identity, old = std::move(found->second)]() {
      table.entries[identity] = old;
    };
    table.entries.erase(found);
    return Status::OK;
  }
  if (type == Update::INSERT && found != table.entries.end())
    return Status(StatusCode::ALREADY_EXISTS, "table " + b.name + ": the entry exists");
  if (type == Update::MODIFY && found == table.entries.end())
    return NotFound("table " + b.name + ": no such entry");
  if (type != Update::INSERT && type != Update::MODIFY) return Invalid("no such update type");
  if (type == Update::INSERT && table.entries.size() >= b.size)
    return Status(StatusCode::RESOURCE_EXHAUSTED,
                  "table " + b.name + " is full (" + std::to_string(b.size) + " entries)");
  if (given.idle_timeout_ns() != 0 && !b.idle_timeout)
    return Invalid("table " + b.name + " has no idle timeout");
  if (given.has_meter_config() || given.has_counter_data())
    return Status(StatusCode::UNIMPLEMENTED,
                  "direct meter configs and counter data on write are not implemented");
  if (Status s = EncodeTableAction(table, given, false, &enc); !s.ok()) return s;
  Stored next;
  if (found != table.entries.end()) {
    Stored old = found->second;
    next = old;
    undo->revert = [&table, identity, old]() { table.entries[identity] = old; };
  } else {
    undo->revert = [&table, identity]() { table.entries.erase(identity); };
    undo->after_commit = [this, &table, identity]() {
      auto at = table.entries.find(identity);
      if (at == table.entries.end()) return;
      Stored& s = at->second;
      s.slot = swx_tables_entry_id(instances_[0].tables, table.binding->swx_id,
                                   reinterpret_cast<const uint8_t*>(s.encoded.key.data()));
      s.base_packets = s.base_bytes = 0;
      if (table.binding->direct_counter != nullptr && s.slot >= 0)
        CounterValue(*table.binding->direct_counter, static_cast<uint32_t>(s.slot + 1),
                     &s.base_packets, &s.base_bytes);
      s.seen_packets = s.base_packets;
      s.seen_at = std::chrono::steady_clock::now();
    };
  }
  StageAdd(b.swx_id, enc);
  next.entry = SerializedCanonical(b, given);
  next.encoded = std::move(enc);
  next.idle_timeout_ns = static_cast<uint64_t>(given.idle_timeout_ns());
  next.reported = false;
  next.seen_at = std::chrono::steady_clock::now();
  if (found != table.entries.end())
    found->second = std::move(next);
  else
    table.entries.emplace(std::move(identity), std::move(next));
  return Status::OK;
}

Status Program::WriteDefault(Update::Type type, const p4::v1::TableEntry& given, Undo* undo) {
  Table& table = tables_.at(given.table_id());
  const TableBinding& b = *table.binding;
  if (type != Update::MODIFY) return Invalid("a default entry is only modified");
  if (given.match_size() != 0 || given.priority() != 0)
    return Invalid("a default entry has no match and no priority");
  if (b.const_default_action != 0)
    return Status(StatusCode::PERMISSION_DENIED, "table " + b.name + " has a const default action");
  EncodedEntry enc;
  if (!given.has_action()) return Invalid("a default entry needs an action");
  if (Status s = EncodeTableAction(table, given, true, &enc); !s.ok()) return s;
  std::string old = table.default_entry;
  table.default_entry = SerializedCanonical(b, given);
  undo->revert = [&table, old]() { table.default_entry = old; };
  StageDefault(b.swx_id, enc);
  return Status::OK;
}

Status Program::WriteMember(Update::Type type, const p4::v1::ActionProfileMember& m, Undo* undo) {
  auto it = profiles_.find(m.action_profile_id());
  if (it == profiles_.end())
    return NotFound("no action profile id " + std::to_string(m.action_profile_id()));
  Profile& p = it->second;
  const ProfileBinding& b = *p.binding;
  auto found = p.members.find(m.member_id());
  if (type == Update::DELETE) {
    if (found == p.members.end()) return NotFound("no member " + std::to_string(m.member_id()));
    for (const auto& [gid, g] : p.groups)
      for (const auto& gm : g.members())
        if (gm.member_id() == m.member_id())
          return Status(StatusCode::FAILED_PRECONDITION,
                        "member " + std::to_string(m.member_id()) + " is in group " +
                            std::to_string(gid));
    Member old = found->second;
    p.members.erase(found);
    StageDelete(b.member_table->swx_id, old.encoded);
    undo->revert = [&p, old]() { p.members[old.member.member_id()] = old; };
    return Status::OK;
  }
  if (type == Update::INSERT && found != p.members.end())
    return Status(StatusCode::ALREADY_EXISTS, "member " + std::to_string(m.member_id()) + " exists");
  if (type == Update::MODIFY && found == p.members.end())
    return NotFound("no member " + std::to_string(m.member_id()));
  if (type == Update::INSERT && p.members.size() >= b.size)
    return Status(StatusCode::RESOURCE_EXHAUSTED, "action profile " + b.name + " is full");
  auto action = b.member_table->actions.find(m.action().action_id());
  if (action == b.member_table->actions.end())
    return Invalid("action profile " + b.name + " has no action id " +
                   std::to_string(m.action().action_id()));
  Member next{m, MemberKey(b, m.member_id())};
  if (Status s = EncodeMemberAction(*action->second.action, m.action(), &next.encoded); !s.ok())
    return s;
  if (found != p.members.end()) {
    Member old = found->second;
    undo->revert = [&p, old]() { p.members[old.member.member_id()] = old; };
  } else {
    uint32_t id = m.member_id();
    undo->revert = [&p, id]() { p.members.erase(id); };
  }
  p.members[m.member_id()] = next;
  StageAdd(b.member_table->swx_id, next.encoded);
  return Status::OK;
}

Status Program::WriteGroup(Update::Type type, const p4::v1::ActionProfileGroup& g, Undo* undo) {
  auto it = profiles_.find(g.action_profile_id());
  if (it == profiles_.end())
    return NotFound("no action profile id " + std::to_string(g.action_profile_id()));
  Profile& p = it->second;
  const ProfileBinding& b = *p.binding;
  if (b.selector < 0) return Invalid("action profile " + b.name + " has no groups");
  auto found = p.groups.find(g.group_id());
  if (type == Update::INSERT && found != p.groups.end())
    return Status(StatusCode::ALREADY_EXISTS, "group " + std::to_string(g.group_id()) + " exists");
  if (type != Update::INSERT && found == p.groups.end())
    return NotFound("no group " + std::to_string(g.group_id()));
  if (type == Update::INSERT && p.groups.size() >= static_cast<size_t>(info_.selectors[b.selector].n_groups_max))
    return Status(StatusCode::RESOURCE_EXHAUSTED, "action selector " + b.name + " has no room");
  std::optional<p4::v1::ActionProfileGroup> old;
  if (found != p.groups.end()) old = found->second;
  uint32_t id = g.group_id();
  undo->revert = [&p, id, old]() {
    if (old) p.groups[id] = *old;
    else p.groups.erase(id);
  };
  if (type == Update::DELETE) {
    p.groups.erase(found);
    p4::v1::ActionProfileGroup empty;
    empty.set_group_id(id);
    StageGroup(b, empty);
    return Status::OK;
  }
  if (g.members_size() > static_cast<int>(b.max_group_size) && b.max_group_size > 0)
    return Invalid("group " + std::to_string(id) + ": more members than its max size");
  if (old && old->max_size() != g.max_size())
    return Invalid("group " + std::to_string(id) + ": max_size is set when it is inserted");
  // a set of members, each weighted above 0 (P4Runtime, ActionProfileGroup:
  // the weight repeats a member, a member given twice is refused)
  std::set<uint32_t> seen;
  for (const auto& m : g.members()) {
    if (!seen.insert(m.member_id()).second)
      return Invalid("group " + std::to_string(id) + ": member " +
                     std::to_string(m.member_id()) + " given twice");
    if (m.weight() < 1)
      return Invalid("group " + std::to_string(id) + ": member " +
                     std::to_string(m.member_id()) + " has weight " +
                     std::to_string(m.weight()) + " (1 or more)");
    if (!p.members.count(m.member_id()))
      return NotFound("group " + std::to_string(id) + ": no member " +
                      std::to_string(m.member_id()));
  }
  p.groups[id] = g;
  StageGroup(b, g);
  return Status::OK;
}

}  // namespace swx
