// SPDX-License-Identifier: Apache-2.0
//
// Target bindings: the ONE place where QuickNAT depends on the v1model
// architecture (BMv2 simple_switch_grpc). Feature controls under control/
// never name standard_metadata_t, v1model externs or v1model table
// properties; they use the types and macros below. Moving to PNA (or a
// SmartNIC architecture) means rewriting this file, the parser's start state,
// checksum.p4 and control/pipeline.p4, and nothing else. (fabric-tna keeps
// copied v1model/tna controls, and those drifted: STYLE.md.)

#ifndef __TARGET__
#define __TARGET__

#include <core.p4>
#include <v1model.p4>

// v1model ports are 9 bits wide (standard_metadata_t.ingress_port).
typedef bit<9> PortId_t;

// Port on which BMv2 exchanges packets with the P4Runtime server. Must match
// `simple_switch_grpc --cpu-port 255`.
#define CPU_PORT 255

// Meter colours as v1model's execute_meter() writes them (BMv2:
// 0 green, 1 yellow, 2 red). An unconfigured BMv2 meter always says green.
typedef bit<2> MeterColor_t;
#define METER_COLOR_GREEN 0
#define METER_COLOR_YELLOW 1
#define METER_COLOR_RED 2

// Indexed packet meter (PNA: Meter<bit<32>>(size, PNA_MeterType_t.PACKETS)).
#define DECLARE_PACKET_METER(name, size) \
    meter((bit<32>)(size), MeterType.packets) name
#define EXECUTE_METER(name, index, color) \
    name.execute_meter((bit<32>)(index), color)

// Indexed packets-and-bytes counter (PNA: Counter<bit<32>, bit<32>>).
#define DECLARE_COUNTER(name, size) \
    counter((bit<32>)(size), CounterType.packets_and_bytes) name
#define COUNT(name, index) name.count((bit<32>)(index))

// Direct counter: counts every hit of the table it is attached to, without
// an explicit count() call in the actions (v1model semantics), so actions
// can be shared by several tables.
#define DECLARE_DIRECT_COUNTER(name) \
    direct_counter(CounterType.packets_and_bytes) name
// Table properties (PNA: pna_direct_counter, pna_idle_timeout =
// PNA_IdleTimeout_t.NOTIFY_CONTROL).
#define TABLE_DIRECT_COUNTER counters
#define TABLE_IDLE_TIMEOUT support_timeout = true

// An ingress-to-egress copy of the packet as it arrived, with the metadata
// fields annotated @field_list(field_list), to the session's ports.
#define CLONE_TO_CPU(session, field_list) \
    clone_preserving_field_list(CloneType.I2E, session, field_list)

#endif // __TARGET__
