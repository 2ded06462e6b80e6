// SPDX-License-Identifier: Apache-2.0
#include "packet_io.h"

#include <map>

#include "bytestring.h"
#include "status.h"

namespace swx {

using grpc::Status;
using grpc::StatusCode;

namespace {

uint32_t HeaderBits(const std::vector<PacketMetadataBinding>& header) {
  uint32_t bits = 0;
  for (const auto& f : header) bits += f.bitwidth;
  return bits;
}

void PutBits(std::string* out, uint32_t at, uint32_t width, const std::string& value) {
  std::string v = Canonical(value);
  for (uint32_t i = 0; i < width; i++) {
    // bit i of the field counted from its most significant end
    uint32_t from_lsb = width - 1 - i;
    size_t byte = v.size() - 1 - from_lsb / 8;
    bool set = from_lsb / 8 < v.size() && ((static_cast<uint8_t>(v[byte]) >> (from_lsb % 8)) & 1);
    if (set) (*out)[(at + i) / 8] = static_cast<char>((*out)[(at + i) / 8] | (0x80 >> ((at + i) % 8)));
  }
}

std::string GetBits(const uint8_t* in, uint32_t at, uint32_t width) {
  uint32_t n = (width + 7) / 8;
  std::string v(n, '\0');
  for (uint32_t i = 0; i < width; i++) {
    bool set = (in[(at + i) / 8] >> (7 - (at + i) % 8)) & 1;
    uint32_t from_lsb = width - 1 - i;
    if (set) v[n - 1 - from_lsb / 8] = static_cast<char>(v[n - 1 - from_lsb / 8] | (1 << (from_lsb % 8)));
  }
  return Canonical(v);
}

}  // namespace

Status EncodePacketOut(const std::vector<PacketMetadataBinding>& header,
                       const p4::v1::PacketOut& packet, std::string* frame) {
  uint32_t bits = HeaderBits(header);
  if (bits % 8)
    return Status(StatusCode::INTERNAL, "the packet_out header is not a whole number of bytes");
  std::map<uint32_t, const std::string*> given;
  for (const auto& m : packet.metadata()) {
    // an id the header has not, first: what the client got wrong, where a
    // field of the header then missing would be only its consequence
    bool known = false;
    for (const auto& f : header) known = known || f.id == m.metadata_id();
    if (!known)
      return Status(StatusCode::INVALID_ARGUMENT,
                    "no packet-out metadata id " + std::to_string(m.metadata_id()));
    if (!given.emplace(m.metadata_id(), &m.value()).second)
      return Status(StatusCode::INVALID_ARGUMENT,
                    "packet-out metadata id " + std::to_string(m.metadata_id()) + " given twice");
  }
  frame->assign(bits / 8, '\0');
  uint32_t at = 0;
  for (const auto& f : header) {
    auto it = given.find(f.id);
    if (it != given.end()) {
      if (!FitsBitwidth(*it->second, f.bitwidth))
        return OutOfRange("packet-out metadata " + f.name + " is empty or wider than its " +
                          std::to_string(f.bitwidth) + " bits");
      PutBits(frame, at, f.bitwidth, *it->second);
    } else if (!f.padding) {
      return Status(StatusCode::INVALID_ARGUMENT, "packet-out metadata " + f.name + " missing");
    }
    at += f.bitwidth;
  }
  frame->append(packet.payload());
  return Status::OK;
}

bool DecodePacketIn(const std::vector<PacketMetadataBinding>& header, const uint8_t* frame,
                    size_t len, p4::v1::PacketIn* packet) {
  uint32_t bits = HeaderBits(header);
  if (len < bits / 8) return false;
  uint32_t at = 0;
  packet->Clear();
  for (const auto& f : header) {
    if (!f.padding) {
      auto* m = packet->add_metadata();
      m->set_metadata_id(f.id);
      m->set_value(GetBits(frame, at, f.bitwidth));
    }
    at += f.bitwidth;
  }
  packet->set_payload(reinterpret_cast<const char*>(frame) + bits / 8, len - bits / 8);
  return true;
}

}  // namespace swx
