// SPDX-License-Identifier: Apache-2.0
#include "binding.h"

#include <cstdlib>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace swx {

using p4::config::v1::MatchField;
using p4::config::v1::P4Info;

namespace {

// The pipeline's name of a P4 object: p4c-dpdk drops the top control's
// name and joins the rest with underscores
// (QuickNatMainControl.core.nat.nat_in2out -> core_nat_nat_in2out).
std::string SpecName(const std::string& p4_name) {
  size_t dot = p4_name.find('.');
  std::string name = dot == std::string::npos ? p4_name : p4_name.substr(dot + 1);
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
}

std::string LastPart(const std::string& name) {
  size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

// Whether `have` is `base`, or `base` with a copy's suffix _N: p4c-dpdk
// makes a copy of an action per table that uses it.
bool SameOrCopy(const std::string& have, const std::string& base) {
  if (have == base) return true;
  return have.size() > base.size() + 1 && have.compare(0, base.size(), base) == 0 &&
         have[base.size()] == '_' &&
         have.find_first_not_of("0123456789", base.size() + 1) == std::string::npos;
}

// The pipeline action of table `layout` that P4 action `p4_name` became.
int FindAction(const swx_info* info, const swx_table_layout* layout, const std::string& p4_name) {
  const std::string base = p4_name == "NoAction" ? p4_name : SpecName(p4_name);
  for (uint32_t i = 0; i < layout->n_actions; i++)
    if (SameOrCopy(info->actions[layout->actions[i]].name, base))
      return static_cast<int>(layout->actions[i]);
  return -1;
}

// A counter's register arrays: NAME for one unit, NAME_packets and
// NAME_bytes for both (p4c-dpdk's names).
void FindCounterArrays(const swx_info* info, const std::string& target, CounterBinding* c) {
  using Spec = p4::config::v1::CounterSpec;
  if (c->unit == Spec::BOTH) {
    c->packets = swx_info_regarray(info, (target + "_packets").c_str());
    c->bytes = swx_info_regarray(info, (target + "_bytes").c_str());
  } else if (c->unit == Spec::BYTES) {
    c->bytes = swx_info_regarray(info, target.c_str());
  } else {
    c->packets = swx_info_regarray(info, target.c_str());
  }
  int any = c->packets >= 0 ? c->packets : c->bytes;
  if (any >= 0) c->size = info->regarrays[any].size;
}

// Whether a P4Info match kind is what the pipeline's field matches by:
// p4c-dpdk writes exact as exact, lpm as lpm, ternary and optional as
// wildcard (and has no range).
bool SameMatch(MatchField::MatchType p4, rte_swx_table_match_type swx) {
  switch (p4) {
    case MatchField::EXACT:
      return swx == RTE_SWX_TABLE_MATCH_EXACT;
    case MatchField::LPM:
      return swx == RTE_SWX_TABLE_MATCH_LPM;
    case MatchField::TERNARY:
    case MatchField::OPTIONAL:
      return swx == RTE_SWX_TABLE_MATCH_WILDCARD;
    default:
      return false;
  }
}

// The fields of header instance `instance` in the spec, in order, with
// their widths: from `header INSTANCE instanceof TYPE` and `struct TYPE {
// bit<N> NAME ... }`, as p4c-dpdk writes them. Empty: no such header.
std::vector<std::pair<std::string, uint32_t>> HeaderFields(const std::string& spec,
                                                           const std::string& instance) {
  std::vector<std::pair<std::string, uint32_t>> fields;
  const std::string decl = "header " + instance + " instanceof ";
  size_t at = spec.find(decl);
  if (at == std::string::npos || (at > 0 && spec[at - 1] != '\n')) return fields;
  size_t type_end = spec.find('\n', at);
  std::string type = spec.substr(at + decl.size(), type_end - at - decl.size());
  size_t body = spec.find("struct " + type + " {\n");
  if (body == std::string::npos) return fields;
  size_t line = spec.find('\n', body) + 1;
  while (line < spec.size() && spec.compare(line, 1, "}") != 0) {
    size_t end = spec.find('\n', line);
    if (end == std::string::npos) end = spec.size();
    // "\tbit<32> egress_port"
    size_t open = spec.find("bit<", line), close = spec.find("> ", line);
    if (open >= end || close >= end || close <= open + 4) return {};
    // (no std::stoul: a spec is outside input, and its throw would end the
    // switch)
    std::string digits = spec.substr(open + 4, close - open - 4);
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
      return {};
    fields.emplace_back(spec.substr(close + 2, end - close - 2),
                        static_cast<uint32_t>(std::strtoul(digits.c_str(), nullptr, 10)));
    line = end + 1;
  }
  return fields;
}

// The first id given twice among `ids`, or 0.
template <typename Ids>
uint32_t Twice(const Ids& ids) {
  std::set<uint32_t> seen;
  for (uint32_t id : ids)
    if (!seen.insert(id).second) return id;
  return 0;
}

}  // namespace

const ParamBinding* ActionBinding::Param(uint32_t id) const {
  for (const auto& p : params)
    if (p.id == id) return &p;
  return nullptr;
}

const FieldBinding* TableBinding::Field(uint32_t id) const {
  for (const auto& f : fields)
    if (f.id == id) return &f;
  return nullptr;
}

const TableBinding* Binding::Table(uint32_t id) const {
  auto it = tables_.find(id);
  return it == tables_.end() ? nullptr : &it->second;
}
const CounterBinding* Binding::Counter(uint32_t id) const {
  auto it = counters_.find(id);
  return it == counters_.end() ? nullptr : &it->second;
}
const CounterBinding* Binding::DirectCounter(uint32_t id) const {
  auto it = direct_counters_.find(id);
  return it == direct_counters_.end() ? nullptr : &it->second;
}
const MeterBinding* Binding::Meter(uint32_t id) const {
  auto it = meters_.find(id);
  return it == meters_.end() ? nullptr : &it->second;
}
const ProfileBinding* Binding::Profile(uint32_t id) const {
  auto it = profiles_.find(id);
  return it == profiles_.end() ? nullptr : &it->second;
}

std::string Binding::Bind(const P4Info& p4info, const swx_info* info, const std::string& spec) {
  // P4Info ids name one object each, across every kind (P4Runtime spec,
  // "Preamble" message: "ids share the same number-space")
  std::vector<uint32_t> ids;
  for (const auto& t : p4info.tables()) ids.push_back(t.preamble().id());
  for (const auto& a : p4info.actions()) ids.push_back(a.preamble().id());
  for (const auto& a : p4info.action_profiles()) ids.push_back(a.preamble().id());
  for (const auto& c : p4info.counters()) ids.push_back(c.preamble().id());
  for (const auto& c : p4info.direct_counters()) ids.push_back(c.preamble().id());
  for (const auto& m : p4info.meters()) ids.push_back(m.preamble().id());
  for (const auto& c : p4info.controller_packet_metadata()) ids.push_back(c.preamble().id());
  if (uint32_t id = Twice(ids)) return "id " + std::to_string(id) + " names two objects";
  // In this order: actions bind per table (and a profile's in its member
  // table), profiles to the member tables the actions found, direct
  // counters to the tables, and an aging table needs its direct counter.
  using Step = std::string (Binding::*)(const P4Info&, const swx_info*);
  static constexpr Step kSteps[] = {
      &Binding::BindTables,         &Binding::BindActions, &Binding::BindProfiles,
      &Binding::BindCounters,       &Binding::BindDirectCounters,
      &Binding::BindMeters,         &Binding::CheckIdleTimeouts,
  };
  for (Step step : kSteps)
    if (std::string why = (this->*step)(p4info, info); !why.empty()) return why;
  return BindPacketMetadata(p4info, spec);
}

// Tables, their match fields checked against the pipeline's key; a P4Info
// table that is a learner in the pipeline is the data plane's.
std::string Binding::BindTables(const P4Info& p4info, const swx_info* info) {
  for (const auto& t : p4info.tables()) {
    const std::string& name = t.preamble().name();
    int swx_id = swx_info_table(info, SpecName(name).c_str());
    if (swx_id < 0 && swx_info_learner(info, SpecName(name).c_str()) >= 0) {
      learners_[t.preamble().id()] = SpecName(name);
      continue;
    }
    if (swx_id < 0) return "table " + name + " is not in the pipeline (" + SpecName(name) + ")";
    TableBinding& b = tables_[t.preamble().id()];
    b.id = t.preamble().id();
    b.name = name;
    b.swx_id = static_cast<uint32_t>(swx_id);
    b.layout = &info->tables[swx_id];
    b.size = static_cast<uint32_t>(t.size());
    if (b.size == 0 || b.size > b.layout->size) b.size = b.layout->size;
    // (p4c-dpdk leaves pna_idle_timeout out of the P4Info: a table whose
    // entries are counted ages them too, below)
    b.idle_timeout = t.idle_timeout_behavior() == p4::config::v1::Table::NOTIFY_CONTROL;
    b.const_default_action = t.const_default_action_id();
    if (static_cast<uint32_t>(t.match_fields_size()) != b.layout->n_fields)
      return "table " + name + ": " + std::to_string(t.match_fields_size()) +
             " match fields in the P4Info, " + std::to_string(b.layout->n_fields) +
             " in the pipeline";
    std::vector<uint32_t> field_ids;
    for (const auto& mf : t.match_fields()) field_ids.push_back(mf.id());
    if (uint32_t id = Twice(field_ids))
      return "table " + name + ": match field id " + std::to_string(id) + " twice";
    for (int i = 0; i < t.match_fields_size(); i++) {
      const auto& mf = t.match_fields(i);
      FieldBinding f;
      f.id = mf.id();
      f.name = mf.name();
      f.bitwidth = static_cast<uint32_t>(mf.bitwidth());
      f.match = mf.match_type();
      f.field = &b.layout->fields[i];
      if (f.bitwidth == 0 || f.field->n_bits < f.bitwidth || f.field->n_bits % 8)
        return "table " + name + ": match field " + f.name + " of " +
               std::to_string(f.bitwidth) + " bits has " + std::to_string(f.field->n_bits) +
               " in the pipeline";
      if (!SameMatch(f.match, f.field->match))
        return "table " + name + ": match field " + f.name + " is " +
               MatchField::MatchType_Name(f.match) + " in the P4Info, not in the pipeline";
      b.lpm |= f.match == MatchField::LPM;
      b.ternary |= f.match == MatchField::TERNARY || f.match == MatchField::OPTIONAL ||
                   f.match == MatchField::RANGE;
      b.fields.push_back(f);
    }
  }
  return "";
}

// Actions, bound per table: the same P4 action may be two pipeline
// actions in two tables (p4c-dpdk copies what two controls share).
std::string Binding::BindActions(const P4Info& p4info, const swx_info* info) {
  std::map<uint32_t, const p4::config::v1::Action*> p4_actions;
  for (const auto& a : p4info.actions()) p4_actions[a.preamble().id()] = &a;
  for (const auto& t : p4info.tables()) {
    if (learners_.count(t.preamble().id())) continue;  // the data plane's
    TableBinding& b = tables_[t.preamble().id()];
    TableBinding* holder = &b;  // whose actions these are
    if (t.implementation_id() != 0) {
      // a profile's actions live in its member table, which p4c-dpdk names
      // after the profile (and its selector NAME_sel)
      const p4::config::v1::ActionProfile* profile = nullptr;
      for (const auto& ap : p4info.action_profiles())
        if (ap.preamble().id() == t.implementation_id()) profile = &ap;
      if (profile == nullptr) return "table " + b.name + ": its action profile is not in the P4Info";
      std::string member_name = LastPart(profile->preamble().name());
      int member_id = swx_info_table(info, member_name.c_str());
      if (member_id < 0) return "action profile " + member_name + " has no table in the pipeline";
      holder = &hidden_[static_cast<uint32_t>(member_id)];
      holder->name = member_name;
      holder->swx_id = static_cast<uint32_t>(member_id);
      holder->layout = &info->tables[member_id];
      holder->size = holder->layout->size;
    }
    for (const auto& ref : t.action_refs()) {
      const auto* a = p4_actions[ref.id()];
      if (a == nullptr) return "table " + b.name + ": action id " + std::to_string(ref.id()) + " unknown";
      int swx_action = FindAction(info, holder->layout, a->preamble().name());
      if (swx_action < 0)
        return "table " + b.name + ": action " + a->preamble().name() + " is not in the pipeline";
      const ActionBinding* binding = nullptr;
      for (const auto& ab : action_storage_)
        if (ab->id == a->preamble().id() && ab->swx_id == static_cast<uint32_t>(swx_action))
          binding = ab.get();
      if (binding == nullptr) {
        std::string why = BindAction(*a, swx_action, info, &binding);
        if (!why.empty()) return why;
      }
      ActionRef r;
      r.action = binding;
      r.table_only = ref.scope() == p4::config::v1::ActionRef::TABLE_ONLY;
      r.default_only = ref.scope() == p4::config::v1::ActionRef::DEFAULT_ONLY;
      holder->actions[a->preamble().id()] = r;
    }
    if (holder != &b) b.actions = holder->actions;  // what the profile's members may be
  }
  return "";
}

// The pipeline action `swx_action` bound to P4 action `a`, its parameters
// checked against the pipeline's arguments, in *out (owned here).
std::string Binding::BindAction(const p4::config::v1::Action& a, int swx_action,
                                const swx_info* info, const ActionBinding** out) {
  auto made = std::make_unique<ActionBinding>();
  made->id = a.preamble().id();
  made->name = a.preamble().name();
  made->swx_id = static_cast<uint32_t>(swx_action);
  made->layout = &info->actions[swx_action];
  if (static_cast<uint32_t>(a.params_size()) != made->layout->n_args)
    return "action " + made->name + ": " + std::to_string(a.params_size()) +
           " parameters in the P4Info, " + std::to_string(made->layout->n_args) +
           " in the pipeline";
  std::vector<uint32_t> param_ids;
  for (const auto& p : a.params()) param_ids.push_back(p.id());
  if (uint32_t id = Twice(param_ids))
    return "action " + made->name + ": parameter id " + std::to_string(id) + " twice";
  for (int p = 0; p < a.params_size(); p++) {
    ParamBinding pb;
    pb.id = a.params(p).id();
    pb.name = a.params(p).name();
    pb.bitwidth = static_cast<uint32_t>(a.params(p).bitwidth());
    pb.arg = &made->layout->args[p];
    if (pb.bitwidth == 0 || pb.arg->n_bits < pb.bitwidth || pb.arg->n_bits % 8)
      return "action " + made->name + ": parameter " + pb.name + " does not fit the pipeline's";
    // by position, so by name too: p4c-dpdk keeps the P4 parameters' names
    if (pb.name != pb.arg->name)
      return "action " + made->name + ": parameter " + std::to_string(p + 1) + " is " + pb.name +
             " in the P4Info, " + pb.arg->name + " in the pipeline";
    made->params.push_back(pb);
  }
  *out = made.get();
  action_storage_.push_back(std::move(made));
  return "";
}

// Action profiles and selectors: their member tables, and the
// set_member_id / set_group_id actions of the table that uses them.
std::string Binding::BindProfiles(const P4Info& p4info, const swx_info* info) {
  for (const auto& ap : p4info.action_profiles()) {
    ProfileBinding& p = profiles_[ap.preamble().id()];
    p.id = ap.preamble().id();
    p.name = ap.preamble().name();
    p.size = static_cast<uint32_t>(ap.size());
    p.max_group_size = static_cast<uint32_t>(ap.max_group_size());
    if (ap.table_ids_size() == 0) return "action profile " + p.name + " has no table";
    auto found = tables_.find(ap.table_ids(0));
    if (found == tables_.end())
      return "action profile " + p.name + ": table id " + std::to_string(ap.table_ids(0)) +
             " is not a table of the pipeline";
    TableBinding& owner = found->second;
    for (auto& [hid, h] : hidden_)
      if (h.name == LastPart(p.name)) p.member_table = &h;
    if (p.member_table == nullptr) return "action profile " + p.name + ": no member table";
    if (p.size == 0 || p.size > p.member_table->size) p.size = p.member_table->size;
    for (uint32_t i = 0; i < owner.layout->n_actions; i++) {
      std::string n = info->actions[owner.layout->actions[i]].name;
      if (n.size() > 14 && n.compare(n.size() - 14, 14, "_set_member_id") == 0)
        p.set_member_action = static_cast<int>(owner.layout->actions[i]);
      if (n.size() > 13 && n.compare(n.size() - 13, 13, "_set_group_id") == 0)
        p.set_group_action = static_cast<int>(owner.layout->actions[i]);
    }
    if (ap.with_selector()) {
      p.selector = swx_info_selector(info, (LastPart(p.name) + "_sel").c_str());
      if (p.selector < 0) return "action selector " + p.name + " is not in the pipeline";
      if (p.set_group_action < 0)
        return "table " + owner.name + " has no set_group_id action in the pipeline";
    }
    if (p.set_member_action < 0)
      return "table " + owner.name + " has no set_member_id action in the pipeline";
    owner.profile = &p;
  }
  return "";
}

// Indirect counters: their register arrays.
std::string Binding::BindCounters(const P4Info& p4info, const swx_info* info) {
  for (const auto& c : p4info.counters()) {
    CounterBinding& b = counters_[c.preamble().id()];
    b.id = c.preamble().id();
    b.name = c.preamble().name();
    b.unit = c.spec().unit();
    FindCounterArrays(info, SpecName(b.name), &b);
    if (b.packets < 0 && b.bytes < 0) return "counter " + b.name + " is not in the pipeline";
    if (b.size > static_cast<uint32_t>(c.size())) b.size = static_cast<uint32_t>(c.size());
  }
  return "";
}

// Direct counters: their register arrays, and their tables'.
std::string Binding::BindDirectCounters(const P4Info& p4info, const swx_info* info) {
  for (const auto& c : p4info.direct_counters()) {
    CounterBinding& b = direct_counters_[c.preamble().id()];
    b.id = c.preamble().id();
    b.name = c.preamble().name();
    b.unit = c.spec().unit();
    b.table_id = c.direct_table_id();
    FindCounterArrays(info, SpecName(b.name), &b);
    if (b.packets < 0 && b.bytes < 0) return "direct counter " + b.name + " is not in the pipeline";
    auto t = tables_.find(b.table_id);
    if (t != tables_.end()) {
      t->second.direct_counter = &b;
      // this target sees a hit by the entry's counter: a counted table ages
      t->second.idle_timeout = true;
    }
  }
  return "";
}

// Meters: their meter arrays.
std::string Binding::BindMeters(const P4Info& p4info, const swx_info* info) {
  for (const auto& m : p4info.meters()) {
    MeterBinding& b = meters_[m.preamble().id()];
    b.id = m.preamble().id();
    b.name = m.preamble().name();
    b.unit = m.spec().unit();
    int id = swx_info_metarray(info, SpecName(b.name).c_str());
    if (id < 0) return "meter " + b.name + " is not in the pipeline";
    b.metarray = info->metarrays[id].name;
    b.size = info->metarrays[id].size;
    if (b.size > static_cast<uint32_t>(m.size())) b.size = static_cast<uint32_t>(m.size());
  }
  return "";
}

// This target sees a hit by the entry's direct counter: a table that ages
// its entries needs one.
std::string Binding::CheckIdleTimeouts(const P4Info& p4info, const swx_info* info) {
  for (const auto& t : tables_)
    if (t.second.idle_timeout && t.second.direct_counter == nullptr)
      return "table " + t.second.name +
             " has an idle timeout but no direct counter: this target sees a hit by its counter";
  return "";
}

// controller_packet_metadata: packet_in's and packet_out's fields, in
// header order, each the field of the pipeline's header of that name (the
// spec's; the frames the CPU port carries are laid out by it).
std::string Binding::BindPacketMetadata(const P4Info& p4info, const std::string& spec) {
  for (const auto& cpm : p4info.controller_packet_metadata()) {
    const std::string& header = cpm.preamble().name();
    std::vector<PacketMetadataBinding>* out = nullptr;
    if (header == "packet_in") out = &packet_in_;
    if (header == "packet_out") out = &packet_out_;
    if (out == nullptr) continue;
    auto fields = HeaderFields(spec, header);
    if (static_cast<size_t>(cpm.metadata_size()) != fields.size())
      return header + ": " + std::to_string(cpm.metadata_size()) + " fields in the P4Info, " +
             std::to_string(fields.size()) + " in the pipeline's header";
    std::vector<uint32_t> ids;
    for (const auto& m : cpm.metadata()) ids.push_back(m.id());
    if (uint32_t id = Twice(ids)) return header + ": metadata id " + std::to_string(id) + " twice";
    for (int i = 0; i < cpm.metadata_size(); i++) {
      const auto& m = cpm.metadata(i);
      if (m.name() != fields[i].first || static_cast<uint32_t>(m.bitwidth()) != fields[i].second)
        return header + ": field " + std::to_string(i + 1) + " is " + m.name() + " of " +
               std::to_string(m.bitwidth()) + " bits in the P4Info, " + fields[i].first +
               " of " + std::to_string(fields[i].second) + " in the pipeline";
      PacketMetadataBinding pm;
      pm.id = m.id();
      pm.name = m.name();
      pm.bitwidth = static_cast<uint32_t>(m.bitwidth());
      for (const auto& a : m.annotations()) pm.padding |= a == "@padding";
      out->push_back(pm);
    }
  }
  return "";
}

}  // namespace swx
