// SPDX-License-Identifier: Apache-2.0
#include "server.h"

#include <google/protobuf/any.pb.h>

#include <chrono>
#include <vector>

#include "google/rpc/code.pb.h"
#include "google/rpc/status.pb.h"

namespace swx {

using grpc::Status;
using grpc::StatusCode;
using p4::v1::StreamMessageRequest;
using p4::v1::StreamMessageResponse;

struct Server::Client {
  grpc::ServerReaderWriter<StreamMessageResponse, StreamMessageRequest>* stream;
  std::mutex write_mutex;  // one writer at a time on a gRPC stream
  bool arbitrated = false;
  bool has_election_id = false;
  Uint128 election_id = 0;

  bool Send(const StreamMessageResponse& message) {
    std::lock_guard<std::mutex> lock(write_mutex);
    return stream->Write(message);
  }
};

namespace {

unsigned __int128 ToUint128(const p4::v1::Uint128& id) {
  return (static_cast<unsigned __int128>(id.high()) << 64) | id.low();
}

void SetUint128(unsigned __int128 value, p4::v1::Uint128* id) {
  id->set_high(static_cast<uint64_t>(value >> 64));
  id->set_low(static_cast<uint64_t>(value));
}

// A Write's outcome as P4Runtime sec. 12.3 asks: OK, or UNKNOWN with one
// p4.v1.Error per update (OK for those that took) in the status details.
// The details are packed only when something failed: on the write path a
// batch that took whole is the common case.
Status WriteStatus(const std::vector<p4::v1::Error>& errors) {
  const p4::v1::Error* first = nullptr;
  for (const auto& e : errors)
    if (e.canonical_code() != google::rpc::OK) {
      first = &e;
      break;
    }
  if (first == nullptr) return Status::OK;
  std::string message = first->message();
  google::rpc::Status details;
  details.set_code(google::rpc::UNKNOWN);
  for (const auto& e : errors) details.add_details()->PackFrom(e);
  details.set_message(message);
  return Status(StatusCode::UNKNOWN, message, details.SerializeAsString());
}

}  // namespace

Server::Server(Device* device, uint64_t device_id) : device_(device), device_id_(device_id) {
  SetMessageAllocatorFor_Write(&write_arenas_);
}

Server::~Server() { Stop(); }

void Server::Start() {
  stop_ = false;
  packets_ = std::thread([this] { PumpPackets(); });
  idle_ = std::thread([this] { PumpIdle(); });
}

void Server::Stop() {
  stop_ = true;
  if (packets_.joinable()) packets_.join();
  if (idle_.joinable()) idle_.join();
}

Server::Client* Server::PrimaryLocked() const {
  Client* primary = nullptr;
  for (Client* c : clients_)
    if (c->arbitrated && c->has_election_id &&
        (primary == nullptr || c->election_id > primary->election_id))
      primary = c;
  return primary;
}

void Server::AnnounceLocked() {
  Client* primary = PrimaryLocked();
  for (Client* c : clients_) {
    if (!c->arbitrated) continue;
    StreamMessageResponse response;
    auto* a = response.mutable_arbitration();
    a->set_device_id(device_id_);
    if (primary != nullptr) SetUint128(primary->election_id, a->mutable_election_id());
    if (c == primary) {
      a->mutable_status()->set_code(google::rpc::OK);
      a->mutable_status()->set_message("primary");
    } else if (primary != nullptr) {
      a->mutable_status()->set_code(google::rpc::ALREADY_EXISTS);
      a->mutable_status()->set_message("a primary is connected");
    } else {
      a->mutable_status()->set_code(google::rpc::NOT_FOUND);
      a->mutable_status()->set_message("no primary is connected");
    }
    c->Send(response);
  }
}

Status Server::Arbitrate(Client* client, const p4::v1::MasterArbitrationUpdate& update) {
  // a live stream keeps its device (P4Runtime sec. 5.3); a new one must
  // name this device
  if (update.device_id() != device_id_ && client->arbitrated)
    return Status(StatusCode::FAILED_PRECONDITION,
                  "this stream is device " + std::to_string(device_id_) + "'s");
  if (update.device_id() != device_id_)
    return Status(StatusCode::NOT_FOUND,
                  "no device " + std::to_string(update.device_id()) + " (this is device " +
                      std::to_string(device_id_) + ")");
  if (update.has_role() && !update.role().name().empty())
    return Status(StatusCode::UNIMPLEMENTED, "only the default role is implemented");
  std::lock_guard<std::mutex> lock(mutex_);
  Uint128 id = ToUint128(update.election_id());
  bool has_id = update.has_election_id();
  for (Client* c : clients_)
    if (c != client && c->arbitrated && has_id && c->has_election_id && c->election_id == id)
      return Status(StatusCode::INVALID_ARGUMENT,
                    "another client has this election id (P4Runtime sec. 5.2)");
  client->arbitrated = true;
  client->has_election_id = has_id;
  client->election_id = id;
  AnnounceLocked();
  return Status::OK;
}

bool Server::IsPrimary(const p4::v1::Uint128& election_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  Client* primary = PrimaryLocked();
  return primary != nullptr && primary->election_id == ToUint128(election_id);
}

bool Server::ToPrimary(const StreamMessageResponse& message) {
  Client* primary;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    primary = PrimaryLocked();
    if (primary == nullptr) return false;
    // Send under the client's own lock: the stream outlives this call
    // because StreamChannel removes a client under mutex_ and then takes
    // its write_mutex before it returns.
    primary->write_mutex.lock();
  }
  bool sent = primary->stream->Write(message);
  primary->write_mutex.unlock();
  return sent;
}

Status Server::StreamChannel(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<StreamMessageResponse, StreamMessageRequest>* stream) {
  Client client;
  client.stream = stream;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    clients_.insert(&client);
  }
  Status status = Status::OK;
  StreamMessageRequest request;
  while (!context->IsCancelled() && stream->Read(&request)) {
    if (request.has_arbitration()) {
      status = Arbitrate(&client, request.arbitration());
      if (!status.ok()) break;
    } else if (!client.arbitrated) {
      status = Status(StatusCode::FAILED_PRECONDITION,
                      "the first message on the stream must be an arbitration update");
      break;
    } else if (request.has_packet()) {
      bool primary;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        primary = PrimaryLocked() == &client;
      }
      Status sent = primary ? device_->PacketOut(request.packet())
                            : Status(StatusCode::PERMISSION_DENIED,
                                     "packet-out from a client that is not primary");
      if (!sent.ok()) {
        StreamMessageResponse error;
        error.mutable_error()->set_canonical_code(sent.error_code());
        error.mutable_error()->set_message(sent.error_message());
        *error.mutable_error()->mutable_packet_out()->mutable_packet_out() = request.packet();
        client.Send(error);
      }
    } else {
      StreamMessageResponse error;
      error.mutable_error()->set_canonical_code(google::rpc::UNIMPLEMENTED);
      error.mutable_error()->set_message("only arbitration and packet-out are implemented");
      client.Send(error);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    clients_.erase(&client);
    // a send to this client in progress holds its write_mutex: wait for it
    std::lock_guard<std::mutex> wait(client.write_mutex);
    AnnounceLocked();  // the primary may have changed
  }
  return status;
}

grpc::ServerUnaryReactor* Server::Write(grpc::CallbackServerContext* context,
                                        const p4::v1::WriteRequest* request,
                                        p4::v1::WriteResponse*) {
  // answered at once, on the thread gRPC called it on: the device's mutex
  // is all a Write waits for
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(DoWrite(*request));
  return reactor;
}

Status Server::DoWrite(const p4::v1::WriteRequest& request) {
  if (request.device_id() != device_id_)
    return Status(StatusCode::NOT_FOUND, "no device " + std::to_string(request.device_id()));
  if (!IsPrimary(request.election_id()))
    return Status(StatusCode::PERMISSION_DENIED,
                  "the election id is not the primary's (P4Runtime sec. 5.2)");
  if (request.atomicity() != p4::v1::WriteRequest::CONTINUE_ON_ERROR)
    return Status(StatusCode::UNIMPLEMENTED, "only CONTINUE_ON_ERROR atomicity is implemented");
  std::vector<p4::v1::Error> errors;
  Status status = device_->Write(request, &errors);
  if (!status.ok()) return status;
  return WriteStatus(errors);
}

Status Server::Read(grpc::ServerContext*, const p4::v1::ReadRequest* request,
                    grpc::ServerWriter<p4::v1::ReadResponse>* writer) {
  if (request->device_id() != device_id_)
    return Status(StatusCode::NOT_FOUND, "no device " + std::to_string(request->device_id()));
  return device_->Read(*request, [writer](const p4::v1::ReadResponse& r) { writer->Write(r); });
}

Status Server::SetForwardingPipelineConfig(
    grpc::ServerContext*, const p4::v1::SetForwardingPipelineConfigRequest* request,
    p4::v1::SetForwardingPipelineConfigResponse*) {
  using Req = p4::v1::SetForwardingPipelineConfigRequest;
  if (request->device_id() != device_id_)
    return Status(StatusCode::NOT_FOUND, "no device " + std::to_string(request->device_id()));
  if (request->action() != Req::VERIFY && !IsPrimary(request->election_id()))
    return Status(StatusCode::PERMISSION_DENIED,
                  "the election id is not the primary's (P4Runtime sec. 5.2)");
  switch (request->action()) {
    case Req::VERIFY:
      return device_->Verify(request->config());
    case Req::VERIFY_AND_SAVE:
      return device_->Save(request->config());
    case Req::VERIFY_AND_COMMIT:
      return device_->Commit(request->config());
    case Req::COMMIT:
      return device_->CommitSaved();
    case Req::RECONCILE_AND_COMMIT:
      return device_->Reconcile(request->config());
    default:
      return Status(StatusCode::INVALID_ARGUMENT, "no such action");
  }
}

Status Server::GetForwardingPipelineConfig(
    grpc::ServerContext*, const p4::v1::GetForwardingPipelineConfigRequest* request,
    p4::v1::GetForwardingPipelineConfigResponse* response) {
  if (request->device_id() != device_id_)
    return Status(StatusCode::NOT_FOUND, "no device " + std::to_string(request->device_id()));
  return device_->GetConfig(request->response_type(), response->mutable_config());
}

Status Server::Capabilities(grpc::ServerContext*, const p4::v1::CapabilitiesRequest*,
                            p4::v1::CapabilitiesResponse* response) {
  response->set_p4runtime_api_version("1.3.0");
  return Status::OK;
}

void Server::PumpPackets() {
  std::vector<p4::v1::PacketIn> packets;
  StreamMessageResponse message;
  while (!stop_) {
    packets.clear();
    if (device_->TakePacketIns(&packets, 64, std::chrono::milliseconds(20)) == 0) continue;
    for (auto& p : packets) {
      *message.mutable_packet() = std::move(p);
      ToPrimary(message);  // none: the packet is lost, as on a switch with no controller
    }
  }
}

// How often idle entries are looked for: P4Runtime's idle_timeout_ns (the
// controller's are seconds) is honoured to within this.
constexpr std::chrono::milliseconds kIdleScan{100};

void Server::PumpIdle() {
  std::vector<p4::v1::TableEntry> idle;
  while (!stop_) {
    std::this_thread::sleep_for(kIdleScan);
    idle.clear();
    device_->TakeIdle(&idle);
    if (idle.empty()) continue;
    StreamMessageResponse message;
    auto* note = message.mutable_idle_timeout_notification();
    for (auto& e : idle) *note->add_table_entry() = std::move(e);
    note->set_timestamp(std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
    ToPrimary(message);
  }
}

}  // namespace swx
