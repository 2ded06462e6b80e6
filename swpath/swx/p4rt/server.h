// SPDX-License-Identifier: Apache-2.0
//
// The P4Runtime service (p4runtime.proto, spec version 1.3) of one device:
// arbitration of the default role among the clients' streams (sec. 5), the
// pipeline (SetForwardingPipelineConfig / GetForwardingPipelineConfig),
// Write and Read, and the stream's packet I/O and idle-timeout
// notifications, which go to the primary only. What the device cannot do
// is answered UNIMPLEMENTED with a message, never ignored: roles other than
// the default one, atomicity other than CONTINUE_ON_ERROR, RECONCILE_AND_COMMIT,
// digests.
#ifndef SWX_P4RT_SERVER_H
#define SWX_P4RT_SERVER_H

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "device.h"
#include "p4/v1/p4runtime.grpc.pb.h"
#include "write_arena.h"

namespace swx {

// Write is served by gRPC's callback API, the rest by its synchronous one
// (WithCallbackMethod_Write): only the callback API lets a request be
// parsed into a protobuf arena (write_arena.h), which the write path needs.
class Server final
    : public p4::v1::P4Runtime::WithCallbackMethod_Write<p4::v1::P4Runtime::Service> {
 public:
  Server(Device* device, uint64_t device_id);
  ~Server() override;

  // The threads that carry packet-ins and idle-timeout notifications from
  // the device to the primary's stream.
  void Start();
  void Stop();

  grpc::ServerUnaryReactor* Write(grpc::CallbackServerContext* context,
                                  const p4::v1::WriteRequest* request,
                                  p4::v1::WriteResponse* response) override;
  grpc::Status Read(grpc::ServerContext* context, const p4::v1::ReadRequest* request,
                    grpc::ServerWriter<p4::v1::ReadResponse>* writer) override;
  grpc::Status SetForwardingPipelineConfig(
      grpc::ServerContext* context, const p4::v1::SetForwardingPipelineConfigRequest* request,
      p4::v1::SetForwardingPipelineConfigResponse* response) override;
  grpc::Status GetForwardingPipelineConfig(
      grpc::ServerContext* context, const p4::v1::GetForwardingPipelineConfigRequest* request,
      p4::v1::GetForwardingPipelineConfigResponse* response) override;
  grpc::Status StreamChannel(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<p4::v1::StreamMessageResponse, p4::v1::StreamMessageRequest>*
          stream) override;
  grpc::Status Capabilities(grpc::ServerContext* context,
                            const p4::v1::CapabilitiesRequest* request,
                            p4::v1::CapabilitiesResponse* response) override;

 private:
  struct Client;
  using Uint128 = unsigned __int128;

  grpc::Status DoWrite(const p4::v1::WriteRequest& request);
  grpc::Status Arbitrate(Client* client, const p4::v1::MasterArbitrationUpdate& update);
  // Under mutex_: the primary, or nullptr.
  Client* PrimaryLocked() const;
  // Under mutex_: every client learns who is primary now (sec. 5.3).
  void AnnounceLocked();
  bool IsPrimary(const p4::v1::Uint128& election_id);
  // Sends to the primary's stream; false when there is none.
  bool ToPrimary(const p4::v1::StreamMessageResponse& message);
  void PumpPackets();
  void PumpIdle();

  Device* device_;
  uint64_t device_id_;
  std::mutex mutex_;  // clients_, and each client's election id
  std::set<Client*> clients_;
  std::atomic<bool> stop_{false};
  std::thread packets_, idle_;
  WriteArenas write_arenas_;
};

}  // namespace swx

#endif  // SWX_P4RT_SERVER_H
