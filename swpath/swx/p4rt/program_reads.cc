// SPDX-License-Identifier: Apache-2.0
//
// P4Runtime Read: table entries (with their direct counters), action
// profile members and groups, and the dispatch of every entity kind,
// streamed in bounded messages.
#include "program.h"

#include "program_shared.h"

namespace swx {

using grpc::Status;
using grpc::StatusCode;

Status Program::ReadTableEntries(const p4::v1::TableEntry& query,
                                 const std::function<void(p4::v1::Entity&&)>& emit) {
  if (query.table_id() != 0 && !tables_.count(query.table_id()))
    return UnknownTable(query.table_id());
  for (auto& [id, table] : tables_) {
    if (query.table_id() != 0 && id != query.table_id()) continue;
    const TableBinding& b = *table.binding;
    if (query.is_default_action()) {
      p4::v1::Entity e;
      auto* entry = e.mutable_table_entry();
      if (!table.default_entry.empty()) {
        entry->ParseFromString(table.default_entry);
      } else {
        entry->set_table_id(id);
        entry->set_is_default_action(true);
        uint32_t action;
        std::string data(b.layout->action_data_size + 1, '\0');
        swx_tables_get_default(instances_[0].tables, b.swx_id, &action,
                               reinterpret_cast<uint8_t*>(&data[0]));
        for (const auto& [aid, ref] : b.actions)
          if (ref.action->swx_id == action) {
            auto* a = entry->mutable_action()->mutable_action();
            a->set_action_id(aid);
            for (const auto& p : ref.action->params) {
              auto* param = a->add_params();
              param->set_param_id(p.id);
              param->set_value(FromField(reinterpret_cast<const uint8_t*>(&data[p.arg->offset]),
                                         p.arg->n_bits / 8, p.arg->network_order, p.bitwidth));
            }
          }
      }
      emit(std::move(e));
      continue;
    }
    if (query.match_size() > 0) {  // one entry
      EncodedEntry enc;
      if (Status s = EncodeMatch(b, query, &enc); !s.ok()) return s;
      auto found = table.entries.find(enc.Identity());
      if (found == table.entries.end()) continue;
      p4::v1::Entity e;
      e.mutable_table_entry()->ParseFromString(found->second.entry);
      if (query.has_counter_data())
        DirectCounterData(table, found->second, e.mutable_table_entry()->mutable_counter_data());
      emit(std::move(e));
      continue;
    }
    for (const auto& [identity, s] : table.entries) {
      p4::v1::Entity e;
      e.mutable_table_entry()->ParseFromString(s.entry);
      if (query.has_counter_data())
        DirectCounterData(table, s, e.mutable_table_entry()->mutable_counter_data());
      emit(std::move(e));
    }
  }
  return Status::OK;
}

void Program::ReadProfiles(const p4::v1::Entity& query,
                           const std::function<void(p4::v1::Entity&&)>& emit) {
  bool members = query.has_action_profile_member();
  uint32_t profile = members ? query.action_profile_member().action_profile_id()
                             : query.action_profile_group().action_profile_id();
  for (const auto& [id, p] : profiles_) {
    if (profile != 0 && id != profile) continue;
    if (members) {
      for (const auto& [mid, m] : p.members) {
        uint32_t want = query.action_profile_member().member_id();
        if (want != 0 && want != mid) continue;
        p4::v1::Entity e;
        *e.mutable_action_profile_member() = m.member;
        emit(std::move(e));
      }
    } else {
      for (const auto& [gid, g] : p.groups) {
        uint32_t want = query.action_profile_group().group_id();
        if (want != 0 && want != gid) continue;
        p4::v1::Entity e;
        *e.mutable_action_profile_group() = g;
        emit(std::move(e));
      }
    }
  }
}

Status Program::Read(const p4::v1::ReadRequest& request,
                     const std::function<void(const p4::v1::ReadResponse&)>& send) {
  p4::v1::ReadResponse response;
  auto emit = [&](p4::v1::Entity&& e) {
    *response.add_entities() = std::move(e);
    if (response.entities_size() >= 1000) {  // a stream of bounded messages
      send(response);
      response.Clear();
    }
  };
  for (const auto& q : request.entities()) {
    Status s;
    switch (q.entity_case()) {
      case p4::v1::Entity::kTableEntry:
        s = ReadTableEntries(q.table_entry(), emit);
        break;
      case p4::v1::Entity::kCounterEntry:
        s = ReadCounters(q.counter_entry(), emit);
        break;
      case p4::v1::Entity::kMeterEntry:
        s = ReadMeters(q.meter_entry(), emit);
        break;
      case p4::v1::Entity::kActionProfileMember:
      case p4::v1::Entity::kActionProfileGroup:
        ReadProfiles(q, emit);
        break;
      case p4::v1::Entity::kDirectCounterEntry: {
        const auto& te = q.direct_counter_entry().table_entry();
        auto it = tables_.find(te.table_id());
        if (it == tables_.end()) return NotFound("no table id " + std::to_string(te.table_id()));
        EncodedEntry enc;
        if (Status m = EncodeMatch(*it->second.binding, te, &enc); !m.ok()) return m;
        auto found = it->second.entries.find(enc.Identity());
        if (found == it->second.entries.end()) return NotFound("no such entry");
        p4::v1::Entity e;
        e.mutable_direct_counter_entry()->mutable_table_entry()->ParseFromString(found->second.entry);
        DirectCounterData(it->second, found->second, e.mutable_direct_counter_entry()->mutable_data());
        emit(std::move(e));
        break;
      }
      default:
        return Status(StatusCode::UNIMPLEMENTED, "reading this entity is not implemented");
    }
    if (!s.ok()) return s;
  }
  if (response.entities_size() > 0 || request.entities_size() == 0) send(response);
  return Status::OK;
}

}  // namespace swx
