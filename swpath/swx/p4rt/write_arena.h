// SPDX-License-Identifier: Apache-2.0
//
// Where a WriteRequest is parsed: a protobuf arena per request. Parsed on
// the heap, a batch of 256 table entries is some 5,000 small allocations
// (an Update, its Entity, TableEntry, each FieldMatch and value, the
// action and each parameter) freed one by one afterwards; glibc then
// consolidates them at the next large allocation (gRPC's per-call arena).
// In perf over make bench-swx's write phase, parsing, freeing and that
// consolidation were a third of the gRPC thread's CPU (issue #33). In an
// arena they are a few blocks, freed at once when the call ends.
#ifndef SWX_P4RT_WRITE_ARENA_H
#define SWX_P4RT_WRITE_ARENA_H

#include <google/protobuf/arena.h>
#include <grpcpp/support/message_allocator.h>

#include "p4/v1/p4runtime.pb.h"

namespace swx {

class WriteArenas final
    : public grpc::MessageAllocator<p4::v1::WriteRequest, p4::v1::WriteResponse> {
 public:
  grpc::MessageHolder<p4::v1::WriteRequest, p4::v1::WriteResponse>* AllocateMessages() override {
    return new Holder;
  }

 private:
  class Holder final : public grpc::MessageHolder<p4::v1::WriteRequest, p4::v1::WriteResponse> {
   public:
    Holder() : arena_(Options()) {
      set_request(google::protobuf::Arena::CreateMessage<p4::v1::WriteRequest>(&arena_));
      set_response(google::protobuf::Arena::CreateMessage<p4::v1::WriteResponse>(&arena_));
    }
    void Release() override { delete this; }

   private:
    // A 256-entry batch parses into about 200 kB: blocks of up to 64 kB
    // (below glibc's mmap threshold, so they are reused, not mapped anew)
    static google::protobuf::ArenaOptions Options() {
      google::protobuf::ArenaOptions o;
      o.start_block_size = 16 << 10;
      o.max_block_size = 64 << 10;
      return o;
    }
    google::protobuf::Arena arena_;
  };
};

}  // namespace swx

#endif  // SWX_P4RT_WRITE_ARENA_H
