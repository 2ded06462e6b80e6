// SPDX-License-Identifier: Apache-2.0
//
// Target bindings for PNA as p4c-dpdk compiles it for DPDK's SWX pipeline
// (quicknat-swx, docs/p4-targets.md): the same macros and types as
// v1model/target.p4, bound to PNA. What SWX cannot do the way v1model does
// is said where it is bound (p4src/README.md, "The PNA build").

#ifndef __TARGET__
#define __TARGET__

#include <core.p4>
#include <dpdk/pna.p4>  // p4c-dpdk's PNA (dpdk_execute, its meters and counters)

// PNA's PortId_t is 32 bits (and a type of its own): the program keeps
// ports as plain bits and converts at the architecture's edge.
typedef bit<32> port_t;

// The SWX pipeline's port 0 (quicknat-swx: a ring in, a socket out to its
// P4Runtime server); front-panel ports are 1 and up, as on BMv2.
#define CPU_PORT 0

// The controller headers with 32-bit ports are whole bytes without
// padding (32 + 8 + 16 and 32 + 32 + 8 bits).
#define PACKET_IN_PADDING
#define PACKET_IN_PADDING_CLEAR(header)
#define PACKET_OUT_PADDING
#define PACKET_OUT_HDR_BYTES 9

// Meter colours, as the SWX pipeline numbers them. p4c-dpdk numbers PNA's
// `enum PNA_MeterColor_t { RED, GREEN, YELLOW }` in declaration order (RED
// 0, GREEN 1, YELLOW 2) and passes the numbers through, while DPDK's meter
// instruction takes and gives rte_color's (GREEN 0, YELLOW 1, RED 2). With
// the names as they read, a meter would drop what it lets through and pass
// what it limits. So each colour is the enum member that p4c-dpdk encodes
// as DPDK's number for it (PTF's punt rate test holds the switch to it).
typedef PNA_MeterColor_t MeterColor_t;
#define METER_COLOR_GREEN PNA_MeterColor_t.RED     // 0: rte_color GREEN
#define METER_COLOR_YELLOW PNA_MeterColor_t.GREEN  // 1: rte_color YELLOW
#define METER_COLOR_RED PNA_MeterColor_t.YELLOW    // 2: rte_color RED

// p4c-dpdk's meters take the packet's length (it meters bytes, whatever
// the type says); fed 1 per packet, a meter's rates (set by P4Runtime,
// quicknat-swx) are packets. The 1 comes from metadata the parser sets: DPDK
// 22.11 refuses a meter instruction with a constant length.
#define DECLARE_PACKET_METER(name, size) \
    Meter<bit<32>>((bit<32>)(size), PNA_MeterType_t.PACKETS) name
// Colour-aware with a green packet in: colour-blind (RFC 2698). (The
// colour-blind form passes p4c-dpdk's GREEN, which DPDK reads as yellow.)
#define EXECUTE_METER(name, index, color) \
    color = name.dpdk_execute((bit<32>)(index), METER_COLOR_GREEN, local_md.meter_len)

// Packets only: PNA gives the program no packet length to count bytes by.
#define DECLARE_COUNTER(name, size) \
    Counter<bit<32>, bit<32>>((bit<32>)(size), PNA_CounterType_t.PACKETS) name
#define COUNT(name, index) name.count((bit<32>)(index))

// A direct counter counts where an action says so: p4c-dpdk wants every
// action of the table, its default included, to call it (DIRECT_COUNT).
// quicknat-swx reads it for the table's idle timeouts.
#define DECLARE_DIRECT_COUNTER(name) \
    DirectCounter<bit<32>>(PNA_CounterType_t.PACKETS) name
#define DIRECT_COUNT(name) name.count()
#define TABLE_DIRECT_COUNTER pna_direct_counter
#define TABLE_IDLE_TIMEOUT pna_idle_timeout = PNA_IdleTimeout_t.NOTIFY_CONTROL

#define DECLARE_ACTION_SELECTOR(name, size, width) \
    ActionSelector(PNA_HashAlgorithm_t.TARGET_DEFAULT, size, width) name
#define TABLE_IMPLEMENTATION pna_implementation

// No clone on this target (p4c-dpdk: PNA mirroring copies the packet as it
// leaves, rewritten): the packet itself goes to the controller instead of
// a copy. A packet dropped for an ICMP error is sent up untranslated (the
// rewrite is deferred until the packet is known to leave, ingress.p4); a
// TCP segment that changes its session's state is punted (TCP_SEGMENT)
// and forwarded by the controller.
#define TARGET_CLONES 0

// Learner tables (PNA add_on_miss; DPDK's rte_swx_table_learner): the
// switch learns sessions from a slow-path instance's learn tag (nat.p4).
// The entries are leases: a hit does not restart their timer (no
// restart_expire_timer), so an entry learned at t is gone by t + its
// class's timeout, which quicknat-swx may set at start-up
// (--learn-timeouts); DPDK expires one up to 2^32 TSC cycles early, never
// late (docs/offload.md, "Learning").
#define TARGET_LEARNS 1

// PNA has no packet length: quicknat-swx's input guard drops an IPv4 frame
// shorter than its total length (IN-IP-2) before the pipeline sees it.
// A packet from the CPU port is a host's (PNA's direction HOST_TO_NET):
// p4c-dpdk reads the direction from its `direction` register by input
// port, which quicknat-swx sets for port 0. The parser reads no port
// itself: p4c-dpdk 1.2.4.17 gives the parser's istd.input_port a field
// that rx never writes (its DirectionToRegRead maps the wrong names), so
// the main control takes the port from its own istd (pna/pipeline.p4).
#define PARSER_TARGET_PARAMS in pna_main_parser_input_metadata_t istd
#define TARGET_INGRESS_PORT 0
#define TARGET_FROM_CPU istd.direction
#define TARGET_FROM_CPU_VALUE PNA_Direction_t.HOST_TO_NET
#define TARGET_FRAME_LEN 32w0xffffffff
#define TARGET_IPV4_OPTIONS "pna/ipv4_options.p4"
#define TARGET_PARSER_METADATA bit<32> meter_len;
#define TARGET_PARSER_INIT local_md.meter_len = 1;
#define DEPARSER_TARGET_PARAMS \
    , in local_metadata_t local_md, in pna_main_output_metadata_t ostd

#endif // __TARGET__
