// SPDX-License-Identifier: Apache-2.0
//
// What the data plane counted: idle entries (their direct counters stood
// still for their idle timeout), and the ports', tables' and learners'
// statistics summed over the pipelines.
#include "program.h"

#include <chrono>

#include "program_shared.h"

extern "C" {
#include <rte_swx_ctl.h>

#include "guard.h"
}

namespace swx {

void Program::TakeIdle(std::vector<p4::v1::TableEntry>* out) {
  auto now = std::chrono::steady_clock::now();
  for (auto& [id, table] : tables_) {
    const TableBinding& b = *table.binding;
    if (!b.idle_timeout || b.direct_counter == nullptr) continue;
    for (auto& [identity, s] : table.entries) {
      if (s.idle_timeout_ns == 0 || s.slot < 0) continue;
      uint64_t packets, bytes;
      CounterValue(*b.direct_counter, static_cast<uint32_t>(s.slot + 1), &packets, &bytes);
      if (packets != s.seen_packets) {
        s.seen_packets = packets;
        s.seen_at = now;
        s.reported = false;
        continue;
      }
      if (s.reported ||
          now - s.seen_at < std::chrono::nanoseconds(static_cast<int64_t>(s.idle_timeout_ns)))
        continue;
      s.reported = true;  // once, until a packet hits it again (P4Runtime sec. 9.1.5)
      p4::v1::TableEntry e;
      e.ParseFromString(s.entry);
      out->push_back(std::move(e));
    }
  }
}

void Program::PortStats(const swx_ports& ports,
                        const std::function<void(uint32_t, const swx::PortStats&)>& each,
                        OutputDrops* drops) const {
  bool device[SWX_MAX_PORTS] = {};
  device[SWX_CPU_PORT] = true;
  for (unsigned i = 0; i < ports.n_ports; i++) device[ports.ports[i].number] = true;
  uint32_t n_out = info_.pipeline.n_ports_out;  // the last is DPDK's drop port
  for (const auto& in : instances_)
    for (uint32_t port = 0; port < n_out; port++) {
      if (port + 1 < n_out && port < SWX_MAX_PORTS && device[port]) continue;
      rte_swx_port_out_stats tx{};
      rte_swx_ctl_pipeline_port_out_stats_read(in.pipeline, port, &tx);
      // a sink counts what it takes as dropped
      (port + 1 == n_out ? drops->by_program : drops->no_device) += tx.n_pkts_drop;
    }
  for (uint32_t port = 0; port < SWX_MAX_PORTS; port++) {
    if (!device[port]) continue;
    swx::PortStats sum;
    for (const auto& in : instances_) {
      rte_swx_port_in_stats rx{};
      rte_swx_port_out_stats tx{};
      struct swx_guard_stats guard{};
      if (port < info_.pipeline.n_ports_in)
        rte_swx_ctl_pipeline_port_in_stats_read(in.pipeline, port, &rx);
      if (port + 1 < n_out) rte_swx_ctl_pipeline_port_out_stats_read(in.pipeline, port, &tx);
      swx_guard_stats(in.pipeline, port, &guard);
      sum.rx_packets += rx.n_pkts;
      sum.tx_packets += tx.n_pkts;
      sum.tx_dropped += tx.n_pkts_drop;
      sum.truncated += guard.truncated;
    }
    each(port, sum);
  }
}

// Each packet's lookups once: those the fast path made before handing a
// packet on to the full program, which makes them again, are left out
// (src/fastpath_stats.h).
void Program::TableStats(
    const std::function<void(const std::string&, uint64_t, uint64_t)>& each) const {
  for (uint32_t t = 0; t < info_.pipeline.n_tables; t++) {
    uint64_t hits = 0, misses = 0;
    for (const auto& in : instances_) {
      uint64_t h, m;
      if (swx_table_stats_once(in.pipeline, &fastpath_exits_, info_.tables[t].name, &h, &m) == 0) {
        hits += h;
        misses += m;
      }
    }
    each(info_.tables[t].name, hits, misses);
  }
}

void Program::LearnerStats(
    const std::function<void(const std::string&, const LearnerCounts&)>& each) const {
  for (uint32_t l = 0; l < info_.pipeline.n_learners; l++) {
    LearnerCounts sum;
    std::vector<uint64_t> per_action(info_.pipeline.n_actions + 1, 0);
    for (const auto& in : instances_) {
      rte_swx_learner_stats stats{};
      stats.n_pkts_action = per_action.data();
      if (rte_swx_ctl_pipeline_learner_stats_read(in.pipeline, info_.learners[l], &stats) != 0)
        continue;
      uint64_t hits = stats.n_pkts_hit, misses = stats.n_pkts_miss;
      // the fast path's lookups of learned sessions, once (as TableStats)
      swx_table_stats_once(in.pipeline, &fastpath_exits_, info_.learners[l], &hits, &misses);
      sum.hits += hits;
      sum.misses += misses;
      sum.learned += stats.n_pkts_learn_ok;
      sum.learn_failed += stats.n_pkts_learn_err;
      sum.rearmed += stats.n_pkts_rearm;
    }
    each(info_.learners[l], sum);
  }
}

// The fast path's counter: slot 0 sent, slot 1 handed on (fastpath.spec).
bool Program::FastpathStats(FastpathCounts* counts) const {
  if (swx_info_regarray(&info_, "fastpath_counter") < 0) return false;
  for (const auto& in : instances_) {
    uint64_t sent = 0, handed_on = 0;
    if (rte_swx_ctl_pipeline_regarray_read(in.pipeline, "fastpath_counter", 0, &sent) == 0 &&
        rte_swx_ctl_pipeline_regarray_read(in.pipeline, "fastpath_counter", 1, &handed_on) == 0) {
      counts->sent += sent;
      counts->handed_on += handed_on;
    }
  }
  return true;
}

}  // namespace swx
