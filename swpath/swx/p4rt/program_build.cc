// SPDX-License-Identifier: Apache-2.0
//
// A Program's pipelines: built from the device config (p4c-dpdk's spec),
// their learners' timeout classes set, the P4Info bound to them; started
// and stopped on their lcores.
#include "program.h"

#include <cstdio>
#include <cstdlib>

#include "program_shared.h"

extern "C" {
#include <rte_swx_ctl.h>
#include <rte_swx_pipeline.h>

#include "guard.h"
#include "contract/p4_constants.h"
}

namespace swx {

using grpc::Status;
using grpc::StatusCode;

// "; quicknat learn_timeouts S0,S1,..." as the device config's first line
// (controller/quicknat/controller/program.py's LEARN_TIMEOUTS_LINE): the
// classes in *out. true without such a line (out untouched), false for a
// malformed one.
static bool LearnTimeouts(const std::string& spec, std::vector<uint32_t>* out) {
  static const std::string kLine = "; quicknat learn_timeouts ";
  if (spec.compare(0, kLine.size(), kLine) != 0) return true;
  size_t end = spec.find('\n');
  std::string list = spec.substr(kLine.size(), end == std::string::npos ? end : end - kLine.size());
  return ParseLearnTimeouts(list.c_str(), out);
}

std::unique_ptr<Program> Program::Build(const DeviceOptions& options,
                                        const p4::v1::ForwardingPipelineConfig& config,
                                        uint64_t generation, Status* status) {
  std::unique_ptr<Program> program(new Program());
  program->config_ = config;
  // a step that fails leaves what it built to ~Program
  *status = program->BuildPipelines(options, generation);
  if (status->ok()) *status = program->SetLearnTimeouts(options.learn_timeouts);
  if (status->ok()) *status = program->BindP4Info();
  if (!status->ok()) return nullptr;
  return program;
}

// One pipeline per lcore from the device config (the pipeline's spec, as
// p4c-dpdk wrote it), compiled once, each with its input guard and its
// tables' shadow (src/tables.h); then the objects they have.
Status Program::BuildPipelines(const DeviceOptions& options, uint64_t generation) {
  const std::string& spec = config_.p4_device_config();
  char so[4096], err[1024];
  if (swx_build_lib(&options.build, spec.data(), spec.size(), so, sizeof(so), err,
                    sizeof(err)) != 0)
    return Invalid(err);
  for (size_t i = 0; i < options.lcores.size(); i++) {
    Instance in;
    char* iospec = swx_ports_iospec(options.ports, static_cast<unsigned>(i));
    std::string name = "qn" + std::to_string(generation) + "_" + std::to_string(i);
    int built = iospec == nullptr ? -1
                                  : swx_build_pipeline(&in.pipeline, name.c_str(), so, iospec, 0,
                                                       err, sizeof(err));
    free(iospec);
    if (built != 0 || swx_guard_install(in.pipeline) != 0 ||
        (in.tables = swx_tables_create(in.pipeline)) == nullptr) {
      if (built == 0) {
        swx_guard_free(in.pipeline);
        rte_swx_pipeline_free(in.pipeline);
      }
      return Status(StatusCode::INTERNAL, built ? err : "no memory for the tables");
    }
    instances_.push_back(in);
  }
  if (swx_info_read(instances_[0].pipeline, &info_) != 0)
    return Status(StatusCode::INTERNAL, "cannot read the pipeline's objects");
  if (swx_fastpath_exits_parse(spec.data(), spec.size(), &fastpath_exits_, err, sizeof(err)) < 0)
    return Invalid(err);
  return Status::OK;
}

// The learners' timeout classes as the deployment sets them (the slow-path
// instances are told the same: their leases, docs/offload.md): the device
// config's own line (the controller's [offload] learn_timeouts), else
// --learn-timeouts (`given`), else as compiled.
Status Program::SetLearnTimeouts(const std::vector<uint32_t>& given) {
  std::vector<uint32_t> timeouts = given;
  if (!LearnTimeouts(config_.p4_device_config(), &timeouts))
    return Invalid("the device config's learn_timeouts line: 1 to 8 seconds, each at least 1");
  for (auto& in : instances_)
    for (uint32_t l = 0; l < info_.pipeline.n_learners; l++)
      for (size_t c = 0; c < timeouts.size(); c++)
        if (rte_swx_ctl_pipeline_learner_timeout_set(in.pipeline, l, static_cast<uint32_t>(c),
                                                     timeouts[c]) != 0)
          return Invalid("learner " + std::string(info_.learners[l]) + " refuses timeout class " +
                         std::to_string(c) + " of " + std::to_string(timeouts[c]) + " s");
  if (!timeouts.empty() && info_.pipeline.n_learners > 0) {
    // what the learners run with, as DPDK reads them back: the leases the
    // instances count on (their `offload lease` lines must say the same)
    std::string classes;
    for (uint32_t c = 0; c < timeouts.size(); c++) {
      uint32_t seconds = 0;
      rte_swx_ctl_pipeline_learner_timeout_get(instances_[0].pipeline, 0, c, &seconds);
      classes += (c ? "," : "") + std::to_string(seconds);
    }
    fprintf(stderr, "quicknat-swx: learner timeout classes %s s\n", classes.c_str());
  }
  return Status::OK;
}

// The P4Info bound to the pipelines' objects, and what the program's
// registers and counters need from this target.
Status Program::BindP4Info() {
  // PNA's direction: p4c-dpdk reads it from its `direction` register by
  // input port; the CPU port is the host's (HOST_TO_NET, 1), the others the
  // network's (0, as the register starts).
  if (swx_info_regarray(&info_, "direction") >= 0)
    for (auto& in : instances_)
      rte_swx_ctl_pipeline_regarray_write(in.pipeline, "direction", SWX_CPU_PORT, 1);
  std::string why = binding_.Bind(config_.p4info(), &info_, config_.p4_device_config());
  if (!why.empty()) return Invalid("the P4Info does not match the pipeline: " + why);
  // The input guard (src/guard.h) is this target's length check of the
  // parser: the frames it drops count where the program counts its
  // parser's drops, drop_counter[PARSER_ERROR] (the generated contract).
  for (const auto& c : config_.p4info().counters()) {
    const CounterBinding* b = binding_.Counter(c.preamble().id());
    if (c.preamble().alias() != "drop_counter" || b == nullptr || b->packets < 0) continue;
    for (auto& in : instances_)
      if (swx_guard_count_into(in.pipeline, static_cast<uint32_t>(b->packets),
                               P4_DROP_REASON_PARSER_ERROR) != 0)
        return Invalid("drop_counter has no PARSER_ERROR element");
  }
  for (const auto& [id, t] : binding_.Tables()) tables_[id].binding = &t;
  for (const auto& [id, p] : binding_.Profiles()) profiles_[id].binding = &p;
  return Status::OK;
}

Program::~Program() {
  Stop();
  for (auto& in : instances_) {
    swx_tables_free(in.tables);
    swx_guard_free(in.pipeline);
    rte_swx_pipeline_free(in.pipeline);
  }
  swx_info_free(&info_);
}

Status Program::Start(const DeviceOptions& options) {
  for (size_t i = 0; i < instances_.size(); i++) {
    Instance& in = instances_[i];
    in.runner.p = in.pipeline;
    in.runner.lcore = options.lcores[i];
    in.runner.idle_sleep_us = options.idle_sleep_us;
    swx_tables_watch(in.tables, &in.runner.running);
    if (swx_runner_start(&in.runner) != 0)
      return Status(StatusCode::INTERNAL,
                    "lcore " + std::to_string(in.runner.lcore) + " does not take the pipeline");
    in.started = true;
  }
  return Status::OK;
}

void Program::Stop() {
  for (auto& in : instances_)
    if (in.started) {
      swx_runner_stop(&in.runner);
      in.started = false;
    }
}

}  // namespace swx
