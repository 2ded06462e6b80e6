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

namespace {

// The cells of an array a request names: the one its index gives, or every
// cell when it gives none; a negative index is malformed, one past the end
// out of range (P4Runtime spec, "CounterEntry" and "MeterEntry").
template <typename Request>
Status Cells(const std::string& array, const Request& r, uint32_t size, uint32_t* first,
             uint32_t* last) {
  *first = 0;
  *last = size;
  if (!r.has_index()) return Status::OK;
  int64_t index = r.index().index();
  if (index < 0) return Invalid(array + ": a negative index");
  if (static_cast<uint64_t>(index) >= size)
    return OutOfRange(array + ": index " + std::to_string(index) + " past its " +
                      std::to_string(size) + " cells");
  *first = static_cast<uint32_t>(index);
  *last = *first + 1;
  return Status::OK;
}

std::string MeterProfileKey(const p4::v1::MeterConfig& c) {
  return std::to_string(c.cir()) + "_" + std::to_string(c.cburst()) + "_" +
         std::to_string(c.pir()) + "_" + std::to_string(c.pburst());
}

}  // namespace

// One cell fewer on the profile of configuration `key`; with none left it
// goes from every pipeline (DPDK refuses, EBUSY, while a cell uses it).
void Program::ReleaseMeterProfile(const std::string& key) {
  auto it = meter_profiles_.find(key);
  if (it == meter_profiles_.end()) return;
  if (it->second.cells > 0) it->second.cells--;
  if (it->second.cells > 0) return;
  for (auto& in : instances_) rte_swx_ctl_meter_profile_delete(in.pipeline, it->second.name.c_str());
  meter_profiles_.erase(it);
}

Status Program::WriteMeter(const p4::v1::MeterEntry& m) {
  const MeterBinding* b = binding_.Meter(m.meter_id());
  if (b == nullptr) return NotFound("no meter id " + std::to_string(m.meter_id()));
  uint32_t first, last;
  if (Status s = Cells("meter " + b->name, m, b->size, &first, &last); !s.ok()) return s;
  const auto& c = m.config();
  bool reset = !m.has_config() || (c.cir() == 0 && c.pir() == 0 && c.cburst() == 0 && c.pburst() == 0);
  std::string key;
  MeterProfile* profile = nullptr;
  if (!reset) {
    if (c.cir() <= 0 || c.pir() < c.cir() || c.cburst() <= 0 || c.pburst() <= 0)
      return Invalid("meter " + b->name + ": a config needs 0 < cir <= pir and bursts above 0");
    key = MeterProfileKey(c);
    auto known = meter_profiles_.find(key);
    if (known == meter_profiles_.end()) {
      std::string name = "p" + std::to_string(meter_profiles_added_++);
      // a packets meter counts length 1 per packet (the program's
      // METER_PACKETS_LENGTH): its rates are in packets
      rte_meter_trtcm_params params{};
      params.cir = static_cast<uint64_t>(c.cir());
      params.pir = static_cast<uint64_t>(c.pir());
      params.cbs = static_cast<uint64_t>(c.cburst());
      params.pbs = static_cast<uint64_t>(c.pburst());
      for (auto& in : instances_)
        if (rte_swx_ctl_meter_profile_add(in.pipeline, name.c_str(), &params) != 0) {
          for (auto& added : instances_) rte_swx_ctl_meter_profile_delete(added.pipeline, name.c_str());
          return Status(StatusCode::INTERNAL, "meter profile refused");
        }
      known = meter_profiles_.emplace(key, MeterProfile{name, 0}).first;
    }
    profile = &known->second;
    profile->cells++;  // held while the cells move to it, so never deleted under them
  }
  Status status = Status::OK;
  for (uint32_t cell = first; cell < last && status.ok(); cell++) {
    for (auto& in : instances_) {
      int r = reset ? rte_swx_ctl_meter_reset(in.pipeline, b->metarray.c_str(), cell)
                    : rte_swx_ctl_meter_set(in.pipeline, b->metarray.c_str(), cell,
                                            profile->name.c_str());
      if (r != 0) status = Status(StatusCode::INTERNAL, "meter " + b->name + ": the pipeline refused it");
    }
    if (!status.ok()) break;
    auto old = meters_.find({m.meter_id(), cell});
    if (old != meters_.end()) {
      ReleaseMeterProfile(MeterProfileKey(old->second));
      if (reset) meters_.erase(old);
    }
    if (!reset) {
      profile->cells++;
      meters_[{m.meter_id(), cell}] = c;
    }
  }
  if (!reset) ReleaseMeterProfile(key);  // the hold above
  return status;
}

Status Program::WriteCounter(const p4::v1::CounterEntry& c) {
  const CounterBinding* b = binding_.Counter(c.counter_id());
  if (b == nullptr) return NotFound("no counter id " + std::to_string(c.counter_id()));
  uint32_t first, last;
  if (Status s = Cells("counter " + b->name, c, b->size, &first, &last); !s.ok()) return s;
  // no data: the value is left as it is
  if (!c.has_data()) return Status::OK;
  for (size_t i = 0; i < instances_.size(); i++) {
    rte_swx_pipeline* p = instances_[i].pipeline;
    // the value is the sum over the pipelines: the first holds it
    uint64_t packets = i ? 0 : static_cast<uint64_t>(c.data().packet_count());
    uint64_t bytes = i ? 0 : static_cast<uint64_t>(c.data().byte_count());
    for (uint32_t index = first; index < last; index++) {
      if (b->packets >= 0)
        rte_swx_ctl_pipeline_regarray_write(p, info_.regarrays[b->packets].name, index, packets);
      if (b->bytes >= 0)
        rte_swx_ctl_pipeline_regarray_write(p, info_.regarrays[b->bytes].name, index, bytes);
    }
  }
  return Status::OK;
}

void Program::CounterValue(const CounterBinding& c, uint32_t index, uint64_t* packets,
                           uint64_t* bytes) const {
  *packets = *bytes = 0;
  for (const auto& in : instances_) {
    uint32_t size;
    const volatile uint64_t* a;
    // the pipeline threads count into them as they go: relaxed loads
    if (c.packets >= 0 && (a = swx_regarray(in.pipeline, static_cast<uint32_t>(c.packets), &size)) &&
        index < size)
      *packets += __atomic_load_n(&a[index], __ATOMIC_RELAXED);
    if (c.bytes >= 0 && (a = swx_regarray(in.pipeline, static_cast<uint32_t>(c.bytes), &size)) &&
        index < size)
      *bytes += __atomic_load_n(&a[index], __ATOMIC_RELAXED);
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
    uint32_t first, last;
    if (Status s = Cells("counter " + c.name, query, c.size, &first, &last); !s.ok()) return s;
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
    uint32_t first, last;
    if (Status s = Cells("meter " + m.name, query, m.size, &first, &last); !s.ok()) return s;
    for (uint32_t i = first; i < last; i++) {
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
