// SPDX-License-Identifier: Apache-2.0
//
// Target bindings for v1model (BMv2 simple_switch_grpc): with pna/target.p4
// one of the two places that know an architecture. The feature controls
// (control/) and the shared parser never name standard_metadata_t, v1model
// externs or table properties; they use the types and macros below. A
// target is this file, its checksum.p4 (verification), its ipv4_options.p4
// (the parser's options states) and its pipeline.p4 (the architecture's
// blocks around control/ingress.p4). (fabric-tna keeps copied v1model/tna
// controls, and those drifted: STYLE.md.)

#ifndef __TARGET__
#define __TARGET__

#include <core.p4>
#include <v1model.p4>

// v1model ports are 9 bits wide (standard_metadata_t.ingress_port).
typedef bit<9> port_t;

// Port on which BMv2 exchanges packets with the P4Runtime server. Must match
// `simple_switch_grpc --cpu-port 255`.
#define CPU_PORT 255

// The controller headers (header.p4) with 9-bit ports: padding to whole
// bytes, and the packet_out header's length (9 + 9 + 8 + 6 bits).
#define PACKET_IN_PADDING @padding bit<7> _pad0;
#define PACKET_IN_PADDING_CLEAR(header) header._pad0 = 0;
#define PACKET_OUT_PADDING @padding bit<6> _pad0;
#define PACKET_OUT_HDR_BYTES 4

// Meter colours as v1model's execute_meter() writes them (BMv2:
// 0 green, 1 yellow, 2 red). An unconfigured BMv2 meter always says green.
typedef bit<2> MeterColor_t;
#define METER_COLOR_GREEN 0
#define METER_COLOR_YELLOW 1
#define METER_COLOR_RED 2

// Indexed packet meter.
#define DECLARE_PACKET_METER(name, size) \
    meter((bit<32>)(size), MeterType.packets) name
#define EXECUTE_METER(name, index, color) \
    name.execute_meter((bit<32>)(index), color)

// Indexed packets-and-bytes counter.
#define DECLARE_COUNTER(name, size) \
    counter((bit<32>)(size), CounterType.packets_and_bytes) name
#define COUNT(name, index) name.count((bit<32>)(index))

// Direct counter: counts every hit of the table it is attached to by
// itself (v1model semantics), so DIRECT_COUNT in an action is nothing.
#define DECLARE_DIRECT_COUNTER(name) \
    direct_counter(CounterType.packets_and_bytes) name
#define DIRECT_COUNT(name)
#define TABLE_DIRECT_COUNTER counters
#define TABLE_IDLE_TIMEOUT support_timeout = true

// Action selector (crc16 over the selector fields) and the table property
// that attaches it.
#define DECLARE_ACTION_SELECTOR(name, size, width) \
    action_selector(HashAlgorithm.crc16, size, width) name
#define TABLE_IMPLEMENTATION implementation

// v1model clones: a copy of the packet as it arrived goes to the controller
// while the packet itself is forwarded (TCP_STATE) or dropped (an ICMP
// error's copy), keeping the metadata fields annotated
// @field_list(field_list).
#define TARGET_CLONES 1

// No table the data plane adds to (v1model has none): a learn tag is
// stripped and nothing learned; the controller writes sessions instead.
#define TARGET_LEARNS 0
#define CLONE_TO_CPU(session, field_list) \
    clone_preserving_field_list(CloneType.I2E, session, field_list)

// The parser (parser.p4): its architecture parameter, where the ingress
// port and the frame's length come from, the states that walk IPv4
// options, and the metadata that walk needs.
#define PARSER_TARGET_PARAMS inout standard_metadata_t standard_md
#define TARGET_INGRESS_PORT standard_md.ingress_port
// What the parser selects on to tell a packet-out, and the value it has.
#define TARGET_FROM_CPU standard_md.ingress_port
#define TARGET_FROM_CPU_VALUE CPU_PORT
#define TARGET_FRAME_LEN standard_md.packet_length
#define TARGET_IPV4_OPTIONS "v1model/ipv4_options.p4"
#define TARGET_PARSER_METADATA \
    bit<320> opt_scan;         \
    bit<8>   opt_left;
#define TARGET_PARSER_INIT
// The deparser takes nothing more than the headers.
#define DEPARSER_TARGET_PARAMS

#endif // __TARGET__
