// SPDX-License-Identifier: Apache-2.0
#include "binding.h"

#include <jansson.h>

#include <memory>
#include <set>

namespace swx {

using p4::config::v1::MatchField;
using p4::config::v1::P4Info;

namespace {

using Json = std::unique_ptr<json_t, decltype(&json_decref)>;

std::string Str(json_t* obj, const char* key) {
  json_t* v = json_object_get(obj, key);
  return json_is_string(v) ? std::string(json_string_value(v)) : std::string();
}

std::string LastPart(const std::string& name) {
  size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

std::string Underscored(std::string name) {
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
}

// The context's tables and externs by their P4 (external) name.
struct Context {
  std::map<std::string, json_t*> tables;   // also hidden ones, by their name
  std::map<std::string, json_t*> externs;
};

std::string ReadContext(json_t* root, Context* ctx) {
  json_t *tables = json_object_get(root, "tables"), *externs = json_object_get(root, "externs");
  if (!json_is_array(tables)) return "the context JSON has no \"tables\"";
  size_t i;
  json_t* t;
  json_array_foreach(tables, i, t) ctx->tables[Str(t, "name")] = t;
  if (json_is_array(externs)) json_array_foreach(externs, i, t) ctx->externs[Str(t, "name")] = t;
  return "";
}

// The pipeline action of table `layout` that the context names: p4c-dpdk
// gives it the P4 action's name, or that name with the control's prefix
// made an underscore, or with a suffix _N where names clash; only the
// table's own actions are candidates, so the first that fits is the one.
int FindAction(const swx_info* info, const swx_table_layout* layout, const std::string& target,
               const std::string& external) {
  std::vector<std::string> names = {target, Underscored(target), LastPart(target),
                                    LastPart(external)};
  for (const auto& want : names) {
    for (uint32_t i = 0; i < layout->n_actions; i++) {
      const std::string have = info->actions[layout->actions[i]].name;
      if (have == want) return static_cast<int>(layout->actions[i]);
    }
  }
  for (const auto& want : names) {  // a clash suffix: NAME_0, NAME_1, ...
    for (uint32_t i = 0; i < layout->n_actions; i++) {
      const std::string have = info->actions[layout->actions[i]].name;
      if (have.size() > want.size() + 1 && have.compare(0, want.size(), want) == 0 &&
          have[want.size()] == '_' &&
          have.find_first_not_of("0123456789", want.size() + 1) == std::string::npos)
        return static_cast<int>(layout->actions[i]);
    }
  }
  return -1;
}

int FindTable(const swx_info* info, const std::string& target, const std::string& external) {
  for (const std::string& name : {target, Underscored(target), LastPart(external)}) {
    int id = swx_info_table(info, name.c_str());
    if (id >= 0) return id;
  }
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

std::string Binding::Bind(const P4Info& p4info, const std::string& context_text,
                          const swx_info* info) {
  json_error_t error;
  Json root(json_loads(context_text.c_str(), 0, &error), json_decref);
  if (!root) return std::string("the context is not JSON: ") + error.text;
  Context ctx;
  if (std::string why = ReadContext(root.get(), &ctx); !why.empty()) return why;

  std::map<uint32_t, const p4::config::v1::Action*> p4_actions;
  for (const auto& a : p4info.actions()) p4_actions[a.preamble().id()] = &a;

  for (const auto& t : p4info.tables()) {
    const std::string& name = t.preamble().name();
    auto c = ctx.tables.find(name);
    if (c == ctx.tables.end()) return "table " + name + " is not in the context";
    int swx_id = FindTable(info, Str(c->second, "target_name"), name);
    if (swx_id < 0) return "table " + name + " is not in the pipeline";
    TableBinding& b = tables_[t.preamble().id()];
    b.id = t.preamble().id();
    b.name = name;
    b.swx_id = static_cast<uint32_t>(swx_id);
    b.layout = &info->tables[swx_id];
    b.size = static_cast<uint32_t>(t.size());
    if (b.size == 0 || b.size > b.layout->size) b.size = b.layout->size;
    b.idle_timeout = t.idle_timeout_behavior() == p4::config::v1::Table::NOTIFY_CONTROL;
    b.const_default_action = t.const_default_action_id();
    if (static_cast<uint32_t>(t.match_fields_size()) != b.layout->n_fields)
      return "table " + name + ": " + std::to_string(t.match_fields_size()) +
             " match fields in the P4Info, " + std::to_string(b.layout->n_fields) +
             " in the pipeline";
    for (int i = 0; i < t.match_fields_size(); i++) {
      const auto& mf = t.match_fields(i);
      FieldBinding f;
      f.id = mf.id();
      f.name = mf.name();
      f.bitwidth = static_cast<uint32_t>(mf.bitwidth());
      f.match = mf.match_type();
      f.field = &b.layout->fields[i];
      if (f.field->n_bits < f.bitwidth || f.field->n_bits % 8)
        return "table " + name + ": match field " + f.name + " has " +
               std::to_string(f.field->n_bits) + " bits in the pipeline";
      b.lpm |= f.match == MatchField::LPM;
      b.ternary |= f.match == MatchField::TERNARY || f.match == MatchField::OPTIONAL ||
                   f.match == MatchField::RANGE;
      b.fields.push_back(f);
    }
  }

  // Actions, bound per table: the same P4 action may be two pipeline
  // actions in two tables (p4c-dpdk copies what two controls share).
  for (const auto& t : p4info.tables()) {
    TableBinding& b = tables_[t.preamble().id()];
    json_t* c = ctx.tables[b.name];
    TableBinding* holder = &b;  // whose actions these are
    if (t.implementation_id() != 0) {
      // a profile's actions live in its member table (p4c-dpdk's hidden table)
      json_t* refs = json_object_get(c, "action_data_table_refs");
      std::string member_name = json_is_array(refs) && json_array_size(refs) > 0
                                    ? Str(json_array_get(refs, 0), "name")
                                    : std::string();
      auto m = ctx.tables.find(member_name);
      int member_id = m == ctx.tables.end()
                          ? -1
                          : FindTable(info, Str(m->second, "target_name"), member_name);
      if (member_id < 0) return "table " + b.name + ": its action profile's table is not bound";
      holder = &hidden_[static_cast<uint32_t>(member_id)];
      holder->name = member_name;
      holder->swx_id = static_cast<uint32_t>(member_id);
      holder->layout = &info->tables[member_id];
      holder->size = holder->layout->size;
      c = m->second;
    }
    json_t* ctx_actions = json_object_get(c, "actions");
    for (const auto& ref : t.action_refs()) {
      const auto* a = p4_actions[ref.id()];
      if (a == nullptr) return "table " + b.name + ": action id " + std::to_string(ref.id()) + " unknown";
      std::string target;
      size_t i;
      json_t* ca;
      json_array_foreach(ctx_actions, i, ca) {
        if (Str(ca, "name") == a->preamble().name()) target = Str(ca, "target_name");
      }
      int swx_action = FindAction(info, holder->layout, target, a->preamble().name());
      if (swx_action < 0)
        return "table " + b.name + ": action " + a->preamble().name() + " is not in the pipeline";
      const ActionBinding* binding = nullptr;
      for (const auto& ab : action_storage_)
        if (ab->id == a->preamble().id() && ab->swx_id == static_cast<uint32_t>(swx_action))
          binding = ab.get();
      if (binding == nullptr) {
        auto made = std::make_unique<ActionBinding>();
        made->id = a->preamble().id();
        made->name = a->preamble().name();
        made->swx_id = static_cast<uint32_t>(swx_action);
        made->layout = &info->actions[swx_action];
        if (static_cast<uint32_t>(a->params_size()) != made->layout->n_args)
          return "action " + made->name + ": " + std::to_string(a->params_size()) +
                 " parameters in the P4Info, " + std::to_string(made->layout->n_args) +
                 " in the pipeline";
        for (int p = 0; p < a->params_size(); p++) {
          ParamBinding pb;
          pb.id = a->params(p).id();
          pb.name = a->params(p).name();
          pb.bitwidth = static_cast<uint32_t>(a->params(p).bitwidth());
          pb.arg = &made->layout->args[p];
          if (pb.arg->n_bits < pb.bitwidth || pb.arg->n_bits % 8)
            return "action " + made->name + ": parameter " + pb.name + " does not fit the pipeline's";
          made->params.push_back(pb);
        }
        binding = made.get();
        action_storage_.push_back(std::move(made));
      }
      ActionRef r;
      r.action = binding;
      r.table_only = ref.scope() == p4::config::v1::ActionRef::TABLE_ONLY;
      r.default_only = ref.scope() == p4::config::v1::ActionRef::DEFAULT_ONLY;
      holder->actions[a->preamble().id()] = r;
    }
    if (holder != &b) b.actions = holder->actions;  // what the profile's members may be
  }

  // Action profiles and selectors.
  for (const auto& ap : p4info.action_profiles()) {
    ProfileBinding& p = profiles_[ap.preamble().id()];
    p.id = ap.preamble().id();
    p.name = ap.preamble().name();
    p.size = static_cast<uint32_t>(ap.size());
    p.max_group_size = static_cast<uint32_t>(ap.max_group_size());
    if (ap.table_ids_size() == 0) return "action profile " + p.name + " has no table";
    TableBinding& owner = tables_[ap.table_ids(0)];
    json_t* oc = ctx.tables[owner.name];
    json_t* mrefs = json_object_get(oc, "action_data_table_refs");
    std::string member_name = json_is_array(mrefs) && json_array_size(mrefs) > 0
                                  ? Str(json_array_get(mrefs, 0), "name")
                                  : std::string();
    for (auto& [hid, h] : hidden_)
      if (h.name == member_name) p.member_table = &h;
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
      json_t* c = ctx.tables[owner.name];
      json_t* refs = json_object_get(c, "selection_table_refs");
      std::string sel_name = json_is_array(refs) && json_array_size(refs) > 0
                                 ? Str(json_array_get(refs, 0), "name")
                                 : std::string();
      auto s = ctx.tables.find(sel_name);
      std::string target = s == ctx.tables.end() ? LastPart(sel_name) : Str(s->second, "target_name");
      for (const std::string& n : {target, Underscored(target), LastPart(sel_name)}) {
        p.selector = swx_info_selector(info, n.c_str());
        if (p.selector >= 0) break;
      }
      if (p.selector < 0) return "action selector " + p.name + " is not in the pipeline";
      if (p.set_group_action < 0)
        return "table " + owner.name + " has no set_group_id action in the pipeline";
    }
    if (p.set_member_action < 0)
      return "table " + owner.name + " has no set_member_id action in the pipeline";
    owner.profile = &p;
  }

  // Counters, direct counters, meters.
  for (const auto& c : p4info.counters()) {
    CounterBinding& b = counters_[c.preamble().id()];
    b.id = c.preamble().id();
    b.name = c.preamble().name();
    b.unit = c.spec().unit();
    auto e = ctx.externs.find(b.name);
    std::string target = e == ctx.externs.end() ? LastPart(b.name) : Str(e->second, "target_name");
    FindCounterArrays(info, target, &b);
    if (b.packets < 0 && b.bytes < 0) return "counter " + b.name + " is not in the pipeline";
    if (b.size > static_cast<uint32_t>(c.size())) b.size = static_cast<uint32_t>(c.size());
  }
  for (const auto& c : p4info.direct_counters()) {
    CounterBinding& b = direct_counters_[c.preamble().id()];
    b.id = c.preamble().id();
    b.name = c.preamble().name();
    b.unit = c.spec().unit();
    b.table_id = c.direct_table_id();
    auto e = ctx.externs.find(b.name);
    std::string target = e == ctx.externs.end() ? LastPart(b.name) : Str(e->second, "target_name");
    FindCounterArrays(info, target, &b);
    if (b.packets < 0 && b.bytes < 0) return "direct counter " + b.name + " is not in the pipeline";
    auto t = tables_.find(b.table_id);
    if (t != tables_.end()) t->second.direct_counter = &b;
  }
  for (const auto& m : p4info.meters()) {
    MeterBinding& b = meters_[m.preamble().id()];
    b.id = m.preamble().id();
    b.name = m.preamble().name();
    b.unit = m.spec().unit();
    auto e = ctx.externs.find(b.name);
    std::string target = e == ctx.externs.end() ? LastPart(b.name) : Str(e->second, "target_name");
    int id = swx_info_metarray(info, target.c_str());
    if (id < 0) return "meter " + b.name + " is not in the pipeline";
    b.metarray = info->metarrays[id].name;
    b.size = info->metarrays[id].size;
    if (b.size > static_cast<uint32_t>(m.size())) b.size = static_cast<uint32_t>(m.size());
  }
  for (const auto& t : tables_)
    if (t.second.idle_timeout && t.second.direct_counter == nullptr)
      return "table " + t.second.name +
             " has an idle timeout but no direct counter: this target sees a hit by its counter";

  for (const auto& cpm : p4info.controller_packet_metadata()) {
    std::vector<PacketMetadataBinding>* out = nullptr;
    if (cpm.preamble().name() == "packet_in") out = &packet_in_;
    if (cpm.preamble().name() == "packet_out") out = &packet_out_;
    if (out == nullptr) continue;
    for (const auto& m : cpm.metadata()) {
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
