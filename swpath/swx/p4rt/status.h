// SPDX-License-Identifier: Apache-2.0
//
// The status codes quicknat-swx answers bad input with, each where the
// P4Runtime spec (1.3) names it: INVALID_ARGUMENT for a malformed entity
// ("Write RPC": "usually"), OUT_OF_RANGE for a binary string that is empty
// or wider than its bitwidth ("Bytestrings") and for an index past the end
// of an array ("CounterEntry", "MeterEntry"), NOT_FOUND for an entry, a
// device or an id that is not there.
#ifndef SWX_P4RT_STATUS_H
#define SWX_P4RT_STATUS_H

#include <grpcpp/grpcpp.h>

#include <string>

namespace swx {

inline grpc::Status NotFound(const std::string& what) {
  return grpc::Status(grpc::StatusCode::NOT_FOUND, what);
}
inline grpc::Status Invalid(const std::string& what) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, what);
}
inline grpc::Status OutOfRange(const std::string& what) {
  return grpc::Status(grpc::StatusCode::OUT_OF_RANGE, what);
}

}  // namespace swx

#endif  // SWX_P4RT_STATUS_H
