// SPDX-License-Identifier: Apache-2.0
#include "program.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "bytestring.h"
#include "packet_io.h"

extern "C" {
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_swx_ctl.h>
#include <rte_swx_pipeline.h>

#include "arrays.h"
#include "guard.h"
#include "contract/p4_constants.h"
}

namespace swx {

using grpc::Status;
using grpc::StatusCode;
using p4::v1::Update;

namespace {

Status NotFound(const std::string& what) { return Status(StatusCode::NOT_FOUND, what); }
Status Invalid(const std::string& what) { return Status(StatusCode::INVALID_ARGUMENT, what); }

swx_entry ToSwx(uint32_t table, const EncodedEntry& e) {
  swx_entry s{};
  s.table = table;
  s.key = reinterpret_cast<const uint8_t*>(e.key.data());
  s.mask = e.mask.empty() ? nullptr : reinterpret_cast<const uint8_t*>(e.mask.data());
  s.priority = e.priority;
  s.action = e.action;
  s.data = reinterpret_cast<const uint8_t*>(e.data.data());
  return s;
}

// The member table's key: the member id, as the pipeline lays it out.
EncodedEntry MemberKey(const ProfileBinding& p, uint32_t member_id) {
  EncodedEntry e;
  const swx_field& f = p.member_table->layout->fields[0];
  e.key.assign(p.member_table->layout->key_size, '\0');
  ToField(FromUint64(member_id, 32), reinterpret_cast<uint8_t*>(&e.key[f.offset]), f.n_bits / 8,
          f.network_order);
  return e;
}

std::string Serialized(const google::protobuf::Message& m) {
  std::string out;
  m.SerializeToString(&out);
  return out;
}

}  // namespace

// "S0,S1,...": up to 8 classes (p4c-dpdk's), each a whole second or more.
bool ParseLearnTimeouts(const char* text, std::vector<uint32_t>* out) {
  out->clear();
  const char* p = text;
  while (*p != '\0') {
    char* end = nullptr;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p || v == 0 || v > 86400 * 7 || out->size() == 8) return false;
    out->push_back(static_cast<uint32_t>(v));
    if (*end == ',') end++;
    else if (*end != '\0') return false;
    p = end;
  }
  return !out->empty();
}

// "; quicknat learn_timeouts S0,S1,..." as the device config's first line
// (controller/quicknat/controller/program.py's LEARN_TIMEOUTS_LINE): the
// classes in *out. true without such a line (out untouched), false for a
// malformed one.
static bool LearnTimeouts(const std::string& spec, std::vector<uint32_t>* out) {
  static const std::string kLine = "; quicknat learn_timeouts ";
  if (spec.compare(0, kLine.size(), kLine) != 0) return true;
  size_t end = spec.find('\n');
  std::string list = spec.substr(kLine.size(), end == std::string::npos ? end : end - kLine.size());
  return ParseLearnTimeouts(list.c_str(), out);
}

std::unique_ptr<Program> Program::Build(const Device::Options& options,
                                        const p4::v1::ForwardingPipelineConfig& config,
                                        uint64_t generation, Status* status) {
  // the device config is the pipeline's spec, as p4c-dpdk wrote it
  const std::string& spec = config.p4_device_config();
  char so[4096], err[1024];
  if (swx_build_lib(&options.build, spec.data(), spec.size(), so, sizeof(so), err,
                    sizeof(err)) != 0) {
    *status = Invalid(err);
    return nullptr;
  }
  std::unique_ptr<Program> program(new Program());
  program->config_ = config;
  for (size_t i = 0; i < options.lcores.size(); i++) {
    Instance in;
    char* iospec = swx_ports_iospec(options.ports, static_cast<unsigned>(i));
    std::string name = "qn" + std::to_string(generation) + "_" + std::to_string(i);
    int built = iospec == nullptr ? -1
                                  : swx_build_pipeline(&in.pipeline, name.c_str(), so, iospec, 0,
                                                       err, sizeof(err));
    free(iospec);
    if (built != 0 || swx_guard_install(in.pipeline) != 0 ||
        (in.tables = swx_tables_create(in.pipeline)) == nullptr) {
      if (built == 0) {
        swx_guard_free(in.pipeline);
        rte_swx_pipeline_free(in.pipeline);
      }
      *status = Status(StatusCode::INTERNAL, built ? err : "no memory for the tables");
      return nullptr;
    }
    program->instances_.push_back(in);
  }
  if (swx_info_read(program->instances_[0].pipeline, &program->info_) != 0) {
    *status = Status(StatusCode::INTERNAL, "cannot read the pipeline's objects");
    return nullptr;
  }
  // The learners' timeout classes as the deployment sets them (the
  // slow-path instances are told the same: their leases, docs/offload.md):
  // the device config's own line (the controller's [offload]
  // learn_timeouts), else --learn-timeouts, else as compiled.
  std::vector<uint32_t> timeouts = options.learn_timeouts;
  if (!LearnTimeouts(spec, &timeouts)) {
    *status = Invalid("the device config's learn_timeouts line: 1 to 8 seconds, each at least 1");
    return nullptr;
  }
  for (auto& in : program->instances_)
    for (uint32_t l = 0; l < program->info_.pipeline.n_learners; l++)
      for (size_t c = 0; c < timeouts.size(); c++)
        if (rte_swx_ctl_pipeline_learner_timeout_set(in.pipeline, l, static_cast<uint32_t>(c),
                                                     timeouts[c]) != 0) {
          *status = Invalid("learner " + std::string(program->info_.learners[l]) +
                            " refuses timeout class " + std::to_string(c) + " of " +
                            std::to_string(timeouts[c]) + " s");
          return nullptr;
        }
  if (!timeouts.empty() && program->info_.pipeline.n_learners > 0) {
    // what the learners run with, as DPDK reads them back: the leases the
    // instances count on (their `offload lease` lines must say the same)
    std::string classes;
    for (uint32_t c = 0; c < timeouts.size(); c++) {
      uint32_t seconds = 0;
      rte_swx_ctl_pipeline_learner_timeout_get(program->instances_[0].pipeline, 0, c, &seconds);
      classes += (c ? "," : "") + std::to_string(seconds);
    }
    fprintf(stderr, "quicknat-swx: learner timeout classes %s s\n", classes.c_str());
  }
  // PNA's direction: p4c-dpdk reads it from its `direction` register by
  // input port; the CPU port is the host's (HOST_TO_NET, 1), the others the
  // network's (0, as the register starts).
  if (swx_info_regarray(&program->info_, "direction") >= 0)
    for (auto& in : program->instances_)
      rte_swx_ctl_pipeline_regarray_write(in.pipeline, "direction", SWX_CPU_PORT, 1);
  std::string why = program->binding_.Bind(config.p4info(), &program->info_);
  if (!why.empty()) {
    *status = Invalid("the P4Info does not match the pipeline: " + why);
    return nullptr;
  }
  // The input guard (src/guard.h) is this target's length check of the
  // parser: the frames it drops count where the program counts its
  // parser's drops, drop_counter[PARSER_ERROR] (the generated contract).
  for (const auto& c : config.p4info().counters()) {
    const CounterBinding* b = program->binding_.Counter(c.preamble().id());
    if (c.preamble().alias() != "drop_counter" || b == nullptr || b->packets < 0) continue;
    for (auto& in : program->instances_)
      if (swx_guard_count_into(in.pipeline, static_cast<uint32_t>(b->packets),
                               P4_DROP_REASON_PARSER_ERROR) != 0) {
        *status = Invalid("drop_counter has no PARSER_ERROR element");
        return nullptr;
      }
  }
  for (const auto& [id, t] : program->binding_.Tables()) program->tables_[id].binding = &t;
  for (const auto& [id, p] : program->binding_.Profiles()) program->profiles_[id].binding = &p;
  *status = Status::OK;
  return program;
}

Program::~Program() {
  Stop();
  for (auto& in : instances_) {
    swx_tables_free(in.tables);
    swx_guard_free(in.pipeline);
    rte_swx_pipeline_free(in.pipeline);
  }
  swx_info_free(&info_);
}

Status Program::Start(const Device::Options& options) {
  for (size_t i = 0; i < instances_.size(); i++) {
    Instance& in = instances_[i];
    in.runner.p = in.pipeline;
    in.runner.lcore = options.lcores[i];
    in.runner.idle_sleep_us = options.idle_sleep_us;
    swx_tables_watch(in.tables, &in.runner.running);
    if (swx_runner_start(&in.runner) != 0)
      return Status(StatusCode::INTERNAL,
                    "lcore " + std::to_string(in.runner.lcore) + " does not take the pipeline");
    in.started = true;
  }
  return Status::OK;
}

void Program::Stop() {
  for (auto& in : instances_)
    if (in.started) {
      swx_runner_stop(&in.runner);
      in.started = false;
    }
}

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
    Stored old = std::move(found->second);
    table.entries.erase(found);
    StageDelete(b.swx_id, old.encoded);
    undo->revert = [&table, identity, old]() { table.entries[identity] = old; };
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
  p4::v1::TableEntry canonical = given;
  Canonicalize(b, &canonical);
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
  next.entry = Serialized(canonical);
  next.encoded = enc;
  next.idle_timeout_ns = static_cast<uint64_t>(given.idle_timeout_ns());
  next.reported = false;
  next.seen_at = std::chrono::steady_clock::now();
  table.entries[identity] = std::move(next);
  StageAdd(b.swx_id, enc);
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
  p4::v1::TableEntry canonical = given;
  Canonicalize(b, &canonical);
  table.default_entry = Serialized(canonical);
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
  for (const auto& m : g.members())
    if (!p.members.count(m.member_id()))
      return NotFound("group " + std::to_string(id) + ": no member " +
                      std::to_string(m.member_id()));
  p.groups[id] = g;
  StageGroup(b, g);
  return Status::OK;
}

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

// -- reads ------------------------------------------------------------------

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

// -- packet I/O -------------------------------------------------------------

Status Program::PacketOut(const p4::v1::PacketOut& packet, swx_ports* ports) {
  std::string frame;
  if (Status s = EncodePacketOut(binding_.PacketOut(), packet, &frame); !s.ok()) return s;
  rte_mbuf* m = rte_pktmbuf_alloc(ports->pool);
  if (m == nullptr) return Status(StatusCode::RESOURCE_EXHAUSTED, "no packet buffer free");
  char* data = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
  if (data == nullptr || frame.size() > UINT16_MAX) {
    rte_pktmbuf_free(m);
    return Invalid("packet-out longer than a packet buffer");
  }
  memcpy(data, frame.data(), frame.size());
  // pipeline 0 takes every packet-out: the tables are the same in all
  if (rte_ring_enqueue(ports->from_cpu[0], m) != 0) {
    rte_pktmbuf_free(m);
    return Status(StatusCode::RESOURCE_EXHAUSTED, "the CPU port's queue is full");
  }
  return Status::OK;
}

size_t Program::TakePacketIns(swx_ports* ports, std::vector<p4::v1::PacketIn>* out, size_t max) {
  static thread_local std::string buffer(65536, '\0');
  size_t taken = 0;
  for (unsigned q = 0; q < ports->n_queues && taken < max; q++) {
    while (taken < max) {
      ssize_t n = recv(ports->to_cpu[q][1], &buffer[0], buffer.size(), MSG_DONTWAIT);
      if (n <= 0) break;
      p4::v1::PacketIn p;
      if (DecodePacketIn(binding_.PacketIn(), reinterpret_cast<const uint8_t*>(buffer.data()),
                         static_cast<size_t>(n), &p)) {
        out->push_back(std::move(p));
        taken++;
      }
    }
  }
  return taken;
}

void Program::TakeIdle(std::vector<p4::v1::TableEntry>* out) {
  auto now = std::chrono::steady_clock::now();
  for (auto& [id, table] : tables_) {
    const TableBinding& b = *table.binding;
    if (!b.idle_timeout || b.direct_counter == nullptr) continue;
    for (auto& [identity, s] : table.entries) {
      if (s.idle_timeout_ns == 0 || s.slot < 0) continue;
      uint64_t packets, bytes;
      CounterValue(*b.direct_counter, static_cast<uint32_t>(s.slot + 1), &packets, &bytes);
      if (packets != s.seen_packets) {
        s.seen_packets = packets;
        s.seen_at = now;
        s.reported = false;
        continue;
      }
      if (s.reported ||
          now - s.seen_at < std::chrono::nanoseconds(static_cast<int64_t>(s.idle_timeout_ns)))
        continue;
      s.reported = true;  // once, until a packet hits it again (P4Runtime sec. 9.1.5)
      p4::v1::TableEntry e;
      e.ParseFromString(s.entry);
      out->push_back(std::move(e));
    }
  }
}

// -- stats ------------------------------------------------------------------

void Program::PortStats(const std::function<void(uint32_t, const swx::PortStats&)>& each) const {
  for (uint32_t port = 0; port < info_.pipeline.n_ports_in; port++) {
    swx::PortStats sum;
    for (const auto& in : instances_) {
      rte_swx_port_in_stats rx{};
      rte_swx_port_out_stats tx{};
      struct swx_guard_stats guard{};
      rte_swx_ctl_pipeline_port_in_stats_read(in.pipeline, port, &rx);
      if (port < info_.pipeline.n_ports_out)
        rte_swx_ctl_pipeline_port_out_stats_read(in.pipeline, port, &tx);
      swx_guard_stats(in.pipeline, port, &guard);
      sum.rx_packets += rx.n_pkts;
      sum.tx_packets += tx.n_pkts;
      sum.truncated += guard.truncated;
    }
    each(port, sum);
  }
}

void Program::TableStats(
    const std::function<void(const std::string&, uint64_t, uint64_t)>& each) const {
  for (uint32_t t = 0; t < info_.pipeline.n_tables; t++) {
    uint64_t hits = 0, misses = 0;
    std::vector<uint64_t> per_action(info_.pipeline.n_actions + 1, 0);
    for (const auto& in : instances_) {
      rte_swx_table_stats stats{};
      stats.n_pkts_action = per_action.data();
      if (rte_swx_ctl_pipeline_table_stats_read(in.pipeline, info_.tables[t].name, &stats) == 0) {
        hits += stats.n_pkts_hit;
        misses += stats.n_pkts_miss;
      }
    }
    each(info_.tables[t].name, hits, misses);
  }
}

void Program::LearnerStats(
    const std::function<void(const std::string&, const LearnerCounts&)>& each) const {
  for (uint32_t l = 0; l < info_.pipeline.n_learners; l++) {
    LearnerCounts sum;
    std::vector<uint64_t> per_action(info_.pipeline.n_actions + 1, 0);
    for (const auto& in : instances_) {
      rte_swx_learner_stats stats{};
      stats.n_pkts_action = per_action.data();
      if (rte_swx_ctl_pipeline_learner_stats_read(in.pipeline, info_.learners[l], &stats) != 0)
        continue;
      sum.hits += stats.n_pkts_hit;
      sum.misses += stats.n_pkts_miss;
      sum.learned += stats.n_pkts_learn_ok;
      sum.learn_failed += stats.n_pkts_learn_err;
      sum.rearmed += stats.n_pkts_rearm;
    }
    each(info_.learners[l], sum);
  }
}

}  // namespace swx
