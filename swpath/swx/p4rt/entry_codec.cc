// SPDX-License-Identifier: Apache-2.0
#include "entry_codec.h"

#include <set>

#include "bytestring.h"
#include "status.h"

namespace swx {

using grpc::Status;
using grpc::StatusCode;
using p4::config::v1::MatchField;

namespace {

// The match fields (or action parameters) an entry gave, by their position
// in the binding: a bit each for the first 64, a set beyond (no table or
// action has that many), so the write path allocates nothing for it.
class Given {
 public:
  // false when this position was given already
  bool Insert(size_t position) {
    count_++;
    if (position < 64) {
      uint64_t bit = uint64_t{1} << position;
      bool fresh = !(bits_ & bit);
      bits_ |= bit;
      return fresh;
    }
    return more_.insert(position).second;
  }
  bool Has(size_t position) const {
    return position < 64 ? (bits_ >> position) & 1 : more_.count(position) > 0;
  }
  size_t size() const { return count_; }

 private:
  uint64_t bits_ = 0;
  std::set<size_t> more_;
  size_t count_ = 0;
};

uint32_t Bytes(const swx_field* f) { return f->n_bits / 8; }

void PutField(const FieldBinding& f, const std::string& value, std::string* buf) {
  ToField(value, reinterpret_cast<uint8_t*>(&(*buf)[f.field->offset]), Bytes(f.field),
          f.field->network_order);
}

// Every bit of the field's bytes: what an exact match compares.
void PutFullMask(const FieldBinding& f, std::string* mask) {
  for (uint32_t i = 0; i < Bytes(f.field); i++) (*mask)[f.field->offset + i] = '\xff';
}

Status CheckValue(const FieldBinding& f, const std::string& value) {
  if (!FitsBitwidth(value, f.bitwidth))
    return OutOfRange("match field " + f.name + ": the value is empty or wider than its " +
                      std::to_string(f.bitwidth) + " bits");
  return Status::OK;
}

// One match field into key (and mask); lpm gets the prefix length.
Status EncodeField(const FieldBinding& f, const p4::v1::FieldMatch& m, EncodedEntry* out,
                   int* lpm) {
  switch (f.match) {
    case MatchField::EXACT:
      if (!m.has_exact()) return Invalid("match field " + f.name + " is exact");
      if (Status s = CheckValue(f, m.exact().value()); !s.ok()) return s;
      PutField(f, m.exact().value(), &out->key);
      if (!out->mask.empty()) PutFullMask(f, &out->mask);
      return Status::OK;
    case MatchField::LPM: {
      if (!m.has_lpm()) return Invalid("match field " + f.name + " is LPM");
      const auto& v = m.lpm();
      if (Status s = CheckValue(f, v.value()); !s.ok()) return s;
      if (v.prefix_len() < 1 || static_cast<uint32_t>(v.prefix_len()) > f.bitwidth)
        return Invalid("match field " + f.name + ": prefix length " +
                       std::to_string(v.prefix_len()) + " (1.." + std::to_string(f.bitwidth) +
                       "; a /0 is the field left out)");
      std::string mask = PrefixMask(static_cast<uint32_t>(v.prefix_len()), f.bitwidth);
      if (!WithinMask(v.value(), mask))
        return Invalid("match field " + f.name + ": bits set past the prefix length");
      PutField(f, v.value(), &out->key);
      PutField(f, mask, &out->mask);
      *lpm = v.prefix_len();
      return Status::OK;
    }
    case MatchField::TERNARY: {
      if (!m.has_ternary()) return Invalid("match field " + f.name + " is ternary");
      const auto& v = m.ternary();
      if (Status s = CheckValue(f, v.value()); !s.ok()) return s;
      if (!FitsBitwidth(v.mask(), f.bitwidth))
        return OutOfRange("match field " + f.name + ": the mask is empty or wider than its " +
                          std::to_string(f.bitwidth) + " bits");
      if (Canonical(v.mask()) == std::string(1, '\0'))
        return Invalid("match field " + f.name + ": a zero mask (leave the field out instead)");
      if (!WithinMask(v.value(), v.mask()))
        return Invalid("match field " + f.name + ": value bits outside the mask");
      PutField(f, v.value(), &out->key);
      PutField(f, v.mask(), &out->mask);
      return Status::OK;
    }
    case MatchField::OPTIONAL:
      if (!m.has_optional()) return Invalid("match field " + f.name + " is optional");
      if (Status s = CheckValue(f, m.optional().value()); !s.ok()) return s;
      PutField(f, m.optional().value(), &out->key);
      PutFullMask(f, &out->mask);
      return Status::OK;
    default:
      return Status(StatusCode::UNIMPLEMENTED,
                    "match field " + f.name + ": this match kind is not implemented");
  }
}

Status EncodeParams(const ActionBinding& a, const p4::v1::Action& given, EncodedEntry* out) {
  out->action = a.swx_id;
  out->data.assign(a.layout->data_size, '\0');
  Given seen;
  for (const auto& p : given.params()) {
    const ParamBinding* b = a.Param(p.param_id());
    if (b == nullptr)
      return Invalid("action " + a.name + " has no parameter id " + std::to_string(p.param_id()));
    if (!seen.Insert(static_cast<size_t>(b - a.params.data())))
      return Invalid("action " + a.name + ": parameter " + b->name + " given twice");
    if (!FitsBitwidth(p.value(), b->bitwidth))
      return OutOfRange("action " + a.name + ": parameter " + b->name +
                        " is empty or wider than its " + std::to_string(b->bitwidth) + " bits");
    ToField(p.value(), reinterpret_cast<uint8_t*>(&out->data[b->arg->offset]), b->arg->n_bits / 8,
            b->arg->network_order);
  }
  if (seen.size() != a.params.size())
    return Invalid("action " + a.name + " takes " + std::to_string(a.params.size()) +
                   " parameters, " + std::to_string(seen.size()) + " given");
  return Status::OK;
}

}  // namespace

std::string EncodedEntry::Identity() const {
  std::string id = key;
  id += mask;
  id.append(reinterpret_cast<const char*>(&priority), sizeof(priority));
  return id;
}

// The highest P4Runtime priority a ternary entry may have here: DPDK's
// RTE_ACL_MAX_PRIORITY (rte_acl.h), what a wildcard table's ACL accepts.
constexpr uint32_t kMaxPriority = (1u << 29) - 1;

Status EncodeMatch(const TableBinding& t, const p4::v1::TableEntry& entry, EncodedEntry* out) {
  const uint32_t size = t.layout->key_size;
  out->key.assign(size, '\0');
  bool wildcard = t.layout->match != RTE_SWX_TABLE_MATCH_EXACT;
  out->mask.assign(wildcard ? size : 0, '\0');
  Given seen;
  int lpm = -1;
  for (const auto& m : entry.match()) {
    const FieldBinding* f = t.Field(m.field_id());
    if (f == nullptr)
      return Invalid("table " + t.name + " has no match field id " + std::to_string(m.field_id()));
    if (!seen.Insert(static_cast<size_t>(f - t.fields.data())))
      return Invalid("table " + t.name + ": match field " + f->name + " given twice");
    if (Status s = EncodeField(*f, m, out, &lpm); !s.ok()) return s;
  }
  for (size_t i = 0; i < t.fields.size(); i++)
    if (t.fields[i].match == MatchField::EXACT && !seen.Has(i))
      return Invalid("table " + t.name + ": exact match field " + t.fields[i].name + " missing");
  if (t.ternary) {
    if (entry.priority() <= 0)
      return Invalid("table " + t.name + " needs a priority above 0 (ternary or optional match)");
    // SWX takes the lowest value first and hands a wildcard table's
    // entries to DPDK's ACL as priority RTE_ACL_MAX_PRIORITY - value,
    // which must be 1..RTE_ACL_MAX_PRIORITY (2^29 - 1): so a P4Runtime
    // priority is the ACL's own, and one above that range is refused.
    if (static_cast<uint32_t>(entry.priority()) > kMaxPriority)
      return Status(StatusCode::OUT_OF_RANGE,
                    "table " + t.name + ": priority " + std::to_string(entry.priority()) +
                        " is above this target's " + std::to_string(kMaxPriority));
    out->priority = kMaxPriority - static_cast<uint32_t>(entry.priority());
  } else {
    if (entry.priority() != 0)
      return Invalid("table " + t.name + " takes no priority (no ternary match)");
    if (t.lpm) {
      uint32_t width = 0;
      for (const auto& f : t.fields)
        if (f.match == MatchField::LPM) width = f.bitwidth;
      // the longest prefix first: SWX takes the lowest priority value
      // (32 at most: well inside the ACL's range, above)
      out->priority = width - static_cast<uint32_t>(lpm < 0 ? 0 : lpm);
    }
  }
  return Status::OK;
}

Status EncodeAction(const TableBinding& t, const p4::v1::Action& given, bool for_default,
                    EncodedEntry* out) {
  auto it = t.actions.find(given.action_id());
  if (it == t.actions.end())
    return Invalid("table " + t.name + " has no action id " + std::to_string(given.action_id()));
  const ActionRef& ref = it->second;
  if (for_default && ref.table_only)
    return Invalid("table " + t.name + ": " + ref.action->name + " cannot be the default");
  if (!for_default && ref.default_only)
    return Invalid("table " + t.name + ": " + ref.action->name + " is the default's only");
  return EncodeParams(*ref.action, given, out);
}

Status EncodeMemberAction(const ActionBinding& action, const p4::v1::Action& given,
                          EncodedEntry* out) {
  return EncodeParams(action, given, out);
}

namespace {

bool IsCanonical(const std::string& value) { return value.size() == 1 || value[0] != '\0'; }

}  // namespace

bool IsCanonical(const p4::v1::TableEntry& entry) {
  for (const auto& m : entry.match()) {
    if (m.has_exact() && !IsCanonical(m.exact().value())) return false;
    if (m.has_lpm() && !IsCanonical(m.lpm().value())) return false;
    if (m.has_ternary() &&
        (!IsCanonical(m.ternary().value()) || !IsCanonical(m.ternary().mask())))
      return false;
    if (m.has_optional() && !IsCanonical(m.optional().value())) return false;
  }
  if (entry.action().has_action())
    for (const auto& p : entry.action().action().params())
      if (!IsCanonical(p.value())) return false;
  return true;
}

void Canonicalize(const TableBinding&, p4::v1::TableEntry* entry) {
  for (auto& m : *entry->mutable_match()) {
    if (m.has_exact()) m.mutable_exact()->set_value(Canonical(m.exact().value()));
    if (m.has_lpm()) m.mutable_lpm()->set_value(Canonical(m.lpm().value()));
    if (m.has_ternary()) {
      m.mutable_ternary()->set_value(Canonical(m.ternary().value()));
      m.mutable_ternary()->set_mask(Canonical(m.ternary().mask()));
    }
    if (m.has_optional()) m.mutable_optional()->set_value(Canonical(m.optional().value()));
  }
  if (entry->action().has_action())
    for (auto& p : *entry->mutable_action()->mutable_action()->mutable_params())
      p.set_value(Canonical(p.value()));
}

}  // namespace swx
