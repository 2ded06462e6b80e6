// SPDX-License-Identifier: Apache-2.0
#include "telemetry.h"

#include <cstdio>
#include <mutex>

#include "device.h"

extern "C" {
#include <rte_errno.h>
#include <rte_telemetry.h>
}

namespace swx {

namespace {

constexpr char kPortsHelp[] =
    "Each port: rx/tx_packets, tx_dropped, truncated (guard drops); dropped: by_program, "
    "no_device. Summed";
constexpr char kTablesHelp[] =
    "Each table: hits, misses; learners also learned, learn_failed, rearmed; fastpath: sent, "
    "handed_on. Summed";

std::mutex g_mutex;  // g_device, against DetachTelemetry
Device* g_device = nullptr;

int Ports(const char*, const char*, struct rte_tel_data* d) {
  std::lock_guard<std::mutex> lock(g_mutex);
  rte_tel_data_start_dict(d);
  if (g_device == nullptr) return 0;
  OutputDrops drops;
  g_device->PortStats([d](uint32_t port, const PortStats& s) {
    struct rte_tel_data* p = rte_tel_data_alloc();
    if (p == nullptr) return;
    rte_tel_data_start_dict(p);
    rte_tel_data_add_dict_u64(p, "rx_packets", s.rx_packets);
    rte_tel_data_add_dict_u64(p, "tx_packets", s.tx_packets);
    rte_tel_data_add_dict_u64(p, "tx_dropped", s.tx_dropped);
    rte_tel_data_add_dict_u64(p, "truncated", s.truncated);
    rte_tel_data_add_dict_container(d, std::to_string(port).c_str(), p, 0);
  }, &drops);
  struct rte_tel_data* t = rte_tel_data_alloc();
  if (t == nullptr) return 0;
  rte_tel_data_start_dict(t);
  rte_tel_data_add_dict_u64(t, "by_program", drops.by_program);
  rte_tel_data_add_dict_u64(t, "no_device", drops.no_device);
  rte_tel_data_add_dict_container(d, "dropped", t, 0);
  return 0;
}

int Tables(const char*, const char*, struct rte_tel_data* d) {
  std::lock_guard<std::mutex> lock(g_mutex);
  rte_tel_data_start_dict(d);
  if (g_device == nullptr) return 0;
  g_device->TableStats([d](const std::string& name, uint64_t hits, uint64_t misses) {
    struct rte_tel_data* t = rte_tel_data_alloc();
    if (t == nullptr) return;
    rte_tel_data_start_dict(t);
    rte_tel_data_add_dict_u64(t, "hits", hits);
    rte_tel_data_add_dict_u64(t, "misses", misses);
    rte_tel_data_add_dict_container(d, name.c_str(), t, 0);
  });
  // the learner tables too, with what they learned (DPDK 22.11 has room for
  // 64 telemetry commands, which its own libraries nearly fill)
  g_device->LearnerStats([d](const std::string& name, const LearnerCounts& c) {
    struct rte_tel_data* t = rte_tel_data_alloc();
    if (t == nullptr) return;
    rte_tel_data_start_dict(t);
    rte_tel_data_add_dict_u64(t, "hits", c.hits);
    rte_tel_data_add_dict_u64(t, "misses", c.misses);
    rte_tel_data_add_dict_u64(t, "learned", c.learned);
    rte_tel_data_add_dict_u64(t, "learn_failed", c.learn_failed);
    rte_tel_data_add_dict_u64(t, "rearmed", c.rearmed);
    rte_tel_data_add_dict_container(d, name.c_str(), t, 0);
  });
  // and the fast path in front of the tables (a packet it hands on is
  // looked up again, and counted again, in the tables it had reached)
  FastpathCounts f;
  struct rte_tel_data* t = nullptr;
  if (g_device->FastpathStats(&f) && (t = rte_tel_data_alloc()) != nullptr) {
    rte_tel_data_start_dict(t);
    rte_tel_data_add_dict_u64(t, "sent", f.sent);
    rte_tel_data_add_dict_u64(t, "handed_on", f.handed_on);
    rte_tel_data_add_dict_container(d, "fastpath", t, 0);
  }
  return 0;
}

}  // namespace

void DetachTelemetry() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_device = nullptr;
}

bool RegisterTelemetry(Device* device) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_device = device;
  }
  // DPDK refuses (-EINVAL) a help text of RTE_TEL_MAX_STRING_LEN (128)
  // bytes or more, and the 64 commands of a process fill up: a command
  // that did not register answers null, so say so at start.
  static_assert(sizeof(kPortsHelp) < RTE_TEL_MAX_STRING_LEN, "DPDK refuses a longer help");
  static_assert(sizeof(kTablesHelp) < RTE_TEL_MAX_STRING_LEN, "DPDK refuses a longer help");
  bool ok = true;
  const struct {
    const char* cmd;
    telemetry_cb fn;
    const char* help;
  } commands[] = {{"/quicknat_swx/ports", &Ports, kPortsHelp},
                  {"/quicknat_swx/tables", &Tables, kTablesHelp}};
  for (const auto& c : commands) {
    int rc = rte_telemetry_register_cmd(c.cmd, c.fn, c.help);
    if (rc != 0) {
      fprintf(stderr, "quicknat-swx: telemetry command %s not registered: %s\n", c.cmd,
              rte_strerror(-rc));
      ok = false;
    }
  }
  return ok;
}

}  // namespace swx
