// SPDX-License-Identifier: Apache-2.0
//
// The controller headers of the P4 program (its packet_in and packet_out,
// p4src/include/header.p4) as P4Runtime's PacketIn / PacketOut metadata
// (P4Runtime sec. 16.1): the header is the P4Info's controller_packet_metadata
// fields, in order, packed MSB first, in front of the frame. Fields the
// P4Info marks @padding are zero on the way out and left out on the way in.
#ifndef SWX_P4RT_PACKET_IO_H
#define SWX_P4RT_PACKET_IO_H

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "binding.h"
#include "p4/v1/p4runtime.pb.h"

namespace swx {

// The bytes to send into the pipeline's CPU port for `packet`.
grpc::Status EncodePacketOut(const std::vector<PacketMetadataBinding>& header,
                             const p4::v1::PacketOut& packet, std::string* frame);

// What the pipeline sent to the CPU port, as a PacketIn; false when the
// frame is shorter than the header.
bool DecodePacketIn(const std::vector<PacketMetadataBinding>& header, const uint8_t* frame,
                    size_t len, p4::v1::PacketIn* packet);

}  // namespace swx

#endif  // SWX_P4RT_PACKET_IO_H
