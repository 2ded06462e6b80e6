// SPDX-License-Identifier: Apache-2.0
//
// What the files of swx::Program (program_*.cc, one concern each: build,
// commit, table writes, counters and meters, reads, packet I/O, stats)
// share: the status codes (status.h) and the conversions between
// P4Runtime's entries and the pipeline's.
#ifndef SWX_P4RT_PROGRAM_SHARED_H
#define SWX_P4RT_PROGRAM_SHARED_H

#include <grpcpp/grpcpp.h>

#include <string>

#include "binding.h"
#include "bytestring.h"
#include "entry_codec.h"
#include "status.h"

extern "C" {
#include "tables.h"
}

namespace swx {

inline swx_entry ToSwx(uint32_t table, const EncodedEntry& e) {
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
inline EncodedEntry MemberKey(const ProfileBinding& p, uint32_t member_id) {
  EncodedEntry e;
  const swx_field& f = p.member_table->layout->fields[0];
  e.key.assign(p.member_table->layout->key_size, '\0');
  ToField(FromUint64(member_id, 32), reinterpret_cast<uint8_t*>(&e.key[f.offset]), f.n_bits / 8,
          f.network_order);
  return e;
}

inline std::string Serialized(const google::protobuf::Message& m) {
  std::string out;
  m.SerializeToString(&out);
  return out;
}

// An entry as Read returns it: its values canonical (a copy only when
// they are not: the write path's usual entry is).
inline std::string SerializedCanonical(const TableBinding& table,
                                       const p4::v1::TableEntry& entry) {
  if (IsCanonical(entry)) return Serialized(entry);
  p4::v1::TableEntry canonical = entry;
  Canonicalize(table, &canonical);
  return Serialized(canonical);
}

}  // namespace swx

#endif  // SWX_P4RT_PROGRAM_SHARED_H
