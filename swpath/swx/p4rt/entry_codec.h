// SPDX-License-Identifier: Apache-2.0
//
// A P4Runtime TableEntry in the pipeline's terms and back: the key (and
// mask and priority) in the SWX table's layout, the action and its data.
// Every check P4Runtime asks of an entry (sec. 9.1) happens here, so what
// reaches the tables is well formed: known ids, exact fields present,
// values within their bitwidth, an LPM value without bits past its prefix,
// a ternary value within its mask, a priority where (and only where) the
// table needs one, an action the table allows where it is used.
#ifndef SWX_P4RT_ENTRY_CODEC_H
#define SWX_P4RT_ENTRY_CODEC_H

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <string>

#include "binding.h"
#include "p4/v1/p4runtime.pb.h"

namespace swx {

struct EncodedEntry {
  std::string key;   // layout->key_size bytes
  std::string mask;  // the same size; empty for an exact-match table
  uint32_t priority = 0;  // SWX's: 0 is the highest
  uint32_t action = 0;    // pipeline action id
  std::string data;       // the action's data
  // The entry's identity in its table: key, mask and priority.
  std::string Identity() const;
};

// The match part of `entry` (not its action): INVALID_ARGUMENT and why, or OK.
grpc::Status EncodeMatch(const TableBinding& table, const p4::v1::TableEntry& entry,
                         EncodedEntry* out);

// An action and its parameters: `for_default` checks it may be a default
// action, else that it may be an entry's.
grpc::Status EncodeAction(const TableBinding& table, const p4::v1::Action& action,
                          bool for_default, EncodedEntry* out);

// A plain action outside any table (an action profile member).
grpc::Status EncodeMemberAction(const ActionBinding& action, const p4::v1::Action& given,
                                EncodedEntry* out);

// `entry` with its values in canonical form (what Read returns).
void Canonicalize(const TableBinding& table, p4::v1::TableEntry* entry);
// Whether it is already (what a client that follows P4Runtime 1.3 sends:
// then the write path stores it without a copy). Its values were checked
// (none empty).
bool IsCanonical(const p4::v1::TableEntry& entry);

}  // namespace swx

#endif  // SWX_P4RT_ENTRY_CODEC_H
