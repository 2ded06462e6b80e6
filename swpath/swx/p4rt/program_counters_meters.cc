// SPDX-License-Identifier: Apache-2.0
//
// Counters (indirect and direct) and meters: written, and read back summed
// over the pipelines.
#include "program.h"

#include "program_shared.h"

extern "C" {
#include <rte_swx_ctl.h>

#include "arrays.h"
}

namespace swx {

using grpc::Status;
using grpc::StatusCode;

Status Program::WriteMeter(const p4::v1::MeterEntry& m) {
  const MeterBinding* b = binding_.Meter(m.meter_id());
  if (b == nullptr) return NotFound("no meter id " + std::to_string(m.meter_id()));
  std::vector<uint32_t> cells;
  if (m.has_index()) {
    if (m.index().index() < 0 || static_cast<uint32_t>(m.index().index()) >= b->size)
      return Invalid("meter " + b->name + ": index out of range");
    cells.push_back(static_cast<uint32_t>(m.index().index()));
  } else {
    for (uint32_t i = 0; i < b->size; i++) cells.push_back(i);
  }
  const auto& c = m.config();
  bool reset = !m.has_config() || (c.cir() == 0 && c.pir() == 0 && c.cburst() == 0 && c.pburst() == 0);
  std::string profile;
  if (!reset) {
    if (c.cir() <= 0 || c.pir() < c.cir() || c.cburst() <= 0 || c.pburst() <= 0)
      return Invalid("meter " + b->name + ": a config needs 0 < cir <= pir and bursts above 0");
    std::string key = std::to_string(c.cir()) + "_" + std::to_string(c.cburst()) + "_" +
                      std::to_string(c.pir()) + "_" + std::to_string(c.pburst());
    auto known = meter_profiles_.find(key);
    if (known == meter_profiles_.end()) {
      profile = "p" + std::to_string(meter_profiles_.size());
      // a packets meter counts length 1 per packet (the program's
      // METER_PACKETS_LENGTH): its rates are in packets
      rte_meter_trtcm_params params{};
      params.cir = static_cast<uint64_t>(c.cir());
      params.pir = static_cast<uint64_t>(c.pir());
      params.cbs = static_cast<uint64_t>(c.cburst());
      params.pbs = static_cast<uint64_t>(c.pburst());
      for (auto& in : instances_)
        if (rte_swx_ctl_meter_profile_add(in.pipeline, profile.c_str(), &params) != 0)
          return Status(StatusCode::INTERNAL, "meter profile refused");
      meter_profiles_[key] = profile;
    } else {
      profile = known->second;
    }
  }
  for (uint32_t cell : cells) {
    for (auto& in : instances_) {
      int r = reset ? rte_swx_ctl_meter_reset(in.pipeline, b->metarray.c_str(), cell)
                    : rte_swx_ctl_meter_set(in.pipeline, b->metarray.c_str(), cell, profile.c_str());
      if (r != 0) return Status(StatusCode::INTERNAL, "meter " + b->name + ": the pipeline refused it");
    }
    if (reset) {
      meters_.erase({m.meter_id(), cell});
    } else {
      meters_[{m.meter_id(), cell}] = c;
    }
  }
  return Status::OK;
}

Status Program::WriteCounter(const p4::v1::CounterEntry& c) {
  const CounterBinding* b = binding_.Counter(c.counter_id());
  if (b == nullptr) return NotFound("no counter id " + std::to_string(c.counter_id()));
  if (!c.has_index() || c.index().index() < 0 ||
      static_cast<uint32_t>(c.index().index()) >= b->size)
    return Invalid("counter " + b->name + ": a write names one index in range");
  uint32_t index = static_cast<uint32_t>(c.index().index());
  for (size_t i = 0; i < instances_.size(); i++) {
    rte_swx_pipeline* p = instances_[i].pipeline;
    // the value is the sum over the pipelines: the first holds it
    uint64_t packets = i ? 0 : static_cast<uint64_t>(c.data().packet_count());
    uint64_t bytes = i ? 0 : static_cast<uint64_t>(c.data().byte_count());
    if (b->packets >= 0)
      rte_swx_ctl_pipeline_regarray_write(p, info_.regarrays[b->packets].name, index, packets);
    if (b->bytes >= 0)
      rte_swx_ctl_pipeline_regarray_write(p, info_.regarrays[b->bytes].name, index, bytes);
  }
  return Status::OK;
}

void Program::CounterValue(const CounterBinding& c, uint32_t index, uint64_t* packets,
                           uint64_t* bytes) const {
  *packets = *bytes = 0;
  for (const auto& in : instances_) {
    uint32_t size;
    const volatile uint64_t* a;
    if (c.packets >= 0 && (a = swx_regarray(in.pipeline, static_cast<uint32_t>(c.packets), &size)) &&
        index < size)
      *packets += a[index];
    if (c.bytes >= 0 && (a = swx_regarray(in.pipeline, static_cast<uint32_t>(c.bytes), &size)) &&
        index < size)
      *bytes += a[index];
  }
}

void Program::DirectCounterData(const Table& table, const Stored& s,
                                p4::v1::CounterData* data) const {
  uint64_t packets = 0, bytes = 0;
  if (table.binding->direct_counter != nullptr && s.slot >= 0)
    CounterValue(*table.binding->direct_counter, static_cast<uint32_t>(s.slot + 1), &packets,
                 &bytes);
  data->set_packet_count(static_cast<int64_t>(packets - s.base_packets));
  data->set_byte_count(static_cast<int64_t>(bytes - s.base_bytes));
}

Status Program::ReadCounters(const p4::v1::CounterEntry& query,
                             const std::function<void(p4::v1::Entity&&)>& emit) {
  if (query.counter_id() != 0 && binding_.Counter(query.counter_id()) == nullptr)
    return NotFound("no counter id " + std::to_string(query.counter_id()));
  for (const auto& [id, c] : binding_.Counters()) {
    if (query.counter_id() != 0 && id != query.counter_id()) continue;
    uint32_t first = 0, last = c.size;
    if (query.has_index()) {
      if (query.index().index() < 0 || static_cast<uint32_t>(query.index().index()) >= c.size)
        return Invalid("counter " + c.name + ": index out of range");
      first = static_cast<uint32_t>(query.index().index());
      last = first + 1;
    }
    for (uint32_t i = first; i < last; i++) {
      p4::v1::Entity e;
      auto* entry = e.mutable_counter_entry();
      entry->set_counter_id(id);
      entry->mutable_index()->set_index(i);
      uint64_t packets, bytes;
      CounterValue(c, i, &packets, &bytes);
      entry->mutable_data()->set_packet_count(static_cast<int64_t>(packets));
      entry->mutable_data()->set_byte_count(static_cast<int64_t>(bytes));
      emit(std::move(e));
    }
  }
  return Status::OK;
}

Status Program::ReadMeters(const p4::v1::MeterEntry& query,
                           const std::function<void(p4::v1::Entity&&)>& emit) {
  if (query.meter_id() != 0 && binding_.Meter(query.meter_id()) == nullptr)
    return NotFound("no meter id " + std::to_string(query.meter_id()));
  for (const auto& [id, m] : binding_.Meters()) {
    if (query.meter_id() != 0 && id != query.meter_id()) continue;
    for (uint32_t i = 0; i < m.size; i++) {
      if (query.has_index() && static_cast<uint32_t>(query.index().index()) != i) continue;
      p4::v1::Entity e;
      auto* entry = e.mutable_meter_entry();
      entry->set_meter_id(id);
      entry->mutable_index()->set_index(i);
      auto config = meters_.find({id, i});
      if (config != meters_.end()) *entry->mutable_config() = config->second;
      emit(std::move(e));
    }
  }
  return Status::OK;
}

}  // namespace swx
