// SPDX-License-Identifier: Apache-2.0
//
// Packet-out into the pipeline's CPU port, packet-ins from its queues.
#include "program.h"

#include <sys/socket.h>

#include <cstring>

#include "packet_io.h"
#include "program_shared.h"

extern "C" {
#include <rte_mbuf.h>
#include <rte_ring.h>
}

namespace swx {

using grpc::Status;
using grpc::StatusCode;

Status Program::PacketOut(const p4::v1::PacketOut& packet, swx_ports* ports) {
  std::string frame;
  if (Status s = EncodePacketOut(binding_.PacketOut(), packet, &frame); !s.ok()) return s;
  rte_mbuf* m = rte_pktmbuf_alloc(ports->pool);
  if (m == nullptr) return Status(StatusCode::RESOURCE_EXHAUSTED, "no packet buffer free");
  char* data = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
  if (data == nullptr || frame.size() > UINT16_MAX) {
    rte_pktmbuf_free(m);
    return Invalid("packet-out longer than a packet buffer");
  }
  memcpy(data, frame.data(), frame.size());
  // pipeline 0 takes every packet-out: the tables are the same in all
  if (rte_ring_enqueue(ports->from_cpu[0], m) != 0) {
    rte_pktmbuf_free(m);
    return Status(StatusCode::RESOURCE_EXHAUSTED, "the CPU port's queue is full");
  }
  return Status::OK;
}

size_t Program::TakePacketIns(swx_ports* ports, std::vector<p4::v1::PacketIn>* out, size_t max) {
  static thread_local std::string buffer(65536, '\0');
  size_t taken = 0;
  for (unsigned q = 0; q < ports->n_queues && taken < max; q++) {
    while (taken < max) {
      ssize_t n = recv(ports->to_cpu[q][1], &buffer[0], buffer.size(), MSG_DONTWAIT);
      if (n <= 0) break;
      p4::v1::PacketIn p;
      if (DecodePacketIn(binding_.PacketIn(), reinterpret_cast<const uint8_t*>(buffer.data()),
                         static_cast<size_t>(n), &p)) {
        out->push_back(std::move(p));
        taken++;
      }
    }
  }
  return taken;
}

}  // namespace swx
