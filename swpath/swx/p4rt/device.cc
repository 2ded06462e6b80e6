// SPDX-License-Identifier: Apache-2.0
#include "device.h"

#include <poll.h>
#include <sys/socket.h>

#include <google/protobuf/util/message_differencer.h>

#include "program.h"

namespace swx {

using grpc::Status;
using grpc::StatusCode;

namespace {

Status NoPipeline() {
  return Status(StatusCode::FAILED_PRECONDITION,
                "no forwarding pipeline config set for this device");
}

}  // namespace

Device::Device(Options options) : options_(std::move(options)) {}

Device::~Device() {
  std::lock_guard<std::mutex> lock(mutex_);
  program_.reset();
}

std::shared_ptr<Program> Device::Running() {
  std::lock_guard<std::mutex> lock(mutex_);
  return program_;
}

std::unique_ptr<Program> Device::Build(const p4::v1::ForwardingPipelineConfig& config,
                                       Status* status) {
  if (!config.has_p4info() || config.p4_device_config().empty()) {
    *status = Status(StatusCode::INVALID_ARGUMENT, "the config needs a P4Info and a device config");
    return nullptr;
  }
  return Program::Build(options_, config, ++generation_, status);
}

Status Device::Verify(const p4::v1::ForwardingPipelineConfig& config) {
  std::lock_guard<std::mutex> lock(mutex_);
  Status status;
  // built (and bound) then dropped: what would run is checked in full
  std::unique_ptr<Program> program = Build(config, &status);
  return status;
}

Status Device::Save(const p4::v1::ForwardingPipelineConfig& config) {
  if (Status s = Verify(config); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mutex_);
  saved_ = std::make_unique<p4::v1::ForwardingPipelineConfig>(config);
  return Status::OK;
}

Status Device::Install(std::unique_ptr<Program> program) {
  // The old pipelines stop before the new ones start: they share the
  // ports' queues, which have one reader and one writer each.
  if (program_) program_->Stop();
  program_.reset();
  Status s = program->Start(options_);
  if (!s.ok()) return s;
  program_ = std::move(program);
  return Status::OK;
}

Status Device::Commit(const p4::v1::ForwardingPipelineConfig& config) {
  std::lock_guard<std::mutex> lock(mutex_);
  Status status;
  std::unique_ptr<Program> program = Build(config, &status);
  if (!program) return status;
  return Install(std::move(program));
}

Status Device::CommitSaved() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!saved_) return Status(StatusCode::FAILED_PRECONDITION, "no config was saved");
  Status status;
  std::unique_ptr<Program> program = Build(*saved_, &status);
  if (!program) return status;
  saved_.reset();
  return Install(std::move(program));
}

// RECONCILE_AND_COMMIT (P4Runtime sec. 9.2): the forwarding state kept
// across the change. The running program's own P4Info and device config
// change nothing but the cookie: its entries, counters, meters and learned
// sessions stay, and no packet is dropped (a controller that reconnects
// and pushes what runs loses nothing). Carrying the state into another
// program is not done: that is refused, and the running one kept.
Status Device::Reconcile(const p4::v1::ForwardingPipelineConfig& config) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (program_) {
      const auto& running = program_->config();
      if (!google::protobuf::util::MessageDifferencer::Equals(running.p4info(), config.p4info()) ||
          running.p4_device_config() != config.p4_device_config())
        return Status(StatusCode::UNIMPLEMENTED,
                      "RECONCILE_AND_COMMIT to another program is not implemented (its "
                      "tables' state would have to be carried over); the running one is "
                      "kept: use VERIFY_AND_COMMIT, which starts the new pipeline with "
                      "empty tables");
      program_->TakeCookie(config);
      return Status::OK;
    }
  }
  return Commit(config);  // nothing runs: nothing to keep
}

Status Device::GetConfig(p4::v1::GetForwardingPipelineConfigRequest::ResponseType type,
                         p4::v1::ForwardingPipelineConfig* config) {
  using Req = p4::v1::GetForwardingPipelineConfigRequest;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!program_) return NoPipeline();
  const auto& running = program_->config();
  if (running.has_cookie()) *config->mutable_cookie() = running.cookie();
  if (type == Req::ALL || type == Req::P4INFO_AND_COOKIE)
    *config->mutable_p4info() = running.p4info();
  if (type == Req::ALL || type == Req::DEVICE_CONFIG_AND_COOKIE)
    config->set_p4_device_config(running.p4_device_config());
  return Status::OK;
}

Status Device::Write(const p4::v1::WriteRequest& request, std::vector<p4::v1::Error>* errors) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!program_) return NoPipeline();
  return program_->Write(request, errors);
}

Status Device::Read(const p4::v1::ReadRequest& request,
                    const std::function<void(const p4::v1::ReadResponse&)>& send) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!program_) return NoPipeline();
  return program_->Read(request, send);
}

Status Device::PacketOut(const p4::v1::PacketOut& packet) {
  std::shared_ptr<Program> program = Running();
  if (!program) return NoPipeline();
  return program->PacketOut(packet, options_.ports);
}

size_t Device::TakePacketIns(std::vector<p4::v1::PacketIn>* out, size_t max,
                             std::chrono::milliseconds wait) {
  struct pollfd fds[8];
  unsigned n = options_.ports->n_queues;
  for (unsigned q = 0; q < n; q++) fds[q] = {options_.ports->to_cpu[q][1], POLLIN, 0};
  if (poll(fds, n, static_cast<int>(wait.count())) <= 0) return 0;
  std::shared_ptr<Program> program = Running();
  if (!program) {  // no program to read the header: what came is dropped
    char drop[16];
    for (unsigned q = 0; q < n; q++)
      while (recv(fds[q].fd, drop, sizeof(drop), MSG_DONTWAIT) > 0) {
      }
    return 0;
  }
  return program->TakePacketIns(options_.ports, out, max);
}

void Device::TakeIdle(std::vector<p4::v1::TableEntry>* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (program_) program_->TakeIdle(out);
}

void Device::LearnerStats(
    const std::function<void(const std::string&, const LearnerCounts&)>& each) {
  std::shared_ptr<Program> program = Running();
  if (program) program->LearnerStats(each);
}

bool Device::FastpathStats(FastpathCounts* counts) {
  std::shared_ptr<Program> program = Running();
  return program && program->FastpathStats(counts);
}

}  // namespace swx

namespace swx {

void Device::PortStats(const std::function<void(uint32_t, const swx::PortStats&)>& each,
                       OutputDrops* drops) {
  std::shared_ptr<Program> program = Running();
  if (program) program->PortStats(*options_.ports, each, drops);
}

void Device::TableStats(
    const std::function<void(const std::string&, uint64_t, uint64_t)>& each) {
  std::shared_ptr<Program> program = Running();
  if (program) program->TableStats(each);
}

}  // namespace swx
