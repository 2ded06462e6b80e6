// SPDX-License-Identifier: Apache-2.0
//
// Every table, counter and meter size of the program. BMv2 allocates tables
// dynamically, so these are limits the P4Runtime server enforces (a write
// past them fails with RESOURCE_EXHAUSTED), not memory reservations.

#ifndef __SIZE__
#define __SIZE__

// One entry per front-panel port.
#define PORT_ZONE_TABLE_SIZE 512

// One entry per (port, owned address): router addresses and public pool
// addresses (proxy ARP).
#define ARP_REPLY_TABLE_SIZE 1024

// The router's own IPv4 addresses.
#define LOCAL_ADDRESS_TABLE_SIZE 256

// Connection records, one per direction of each session (Quick NAT paper:
// two records per flow). 64k sessions per direction. The PTF suite's full-
// table scenario runs a build with -DNAT_TABLE_SIZE=64 (make -C p4src:
// build/small/).
#ifndef NAT_TABLE_SIZE
#define NAT_TABLE_SIZE 65536
#endif
#define NAT_IN2OUT_TABLE_SIZE NAT_TABLE_SIZE
#define NAT_OUT2IN_TABLE_SIZE NAT_TABLE_SIZE

// One entry per SNAT / DNAT rule prefix (not per rule: rules sharing a prefix
// share the entry).
#define SNAT_SCOPE_TABLE_SIZE 1024
#define DNAT_SCOPE_TABLE_SIZE 1024

// One entry per NAT-owned prefix (pools, SNAT `to` and DNAT addresses).
#define OWNED_SOURCE_TABLE_SIZE 1024

#define ROUTING_V4_TABLE_SIZE 1024

// Offload mode: instances behind one switch, port blocks of the pool.
#define SLOW_PATH_MEMBERS 64
#define SLOW_PATH_IN2OUT_TABLE_SIZE 16
#define SLOW_PATH_OUT2IN_TABLE_SIZE 1024
#define SLOW_PATH_PIN_TABLE_SIZE 256
#define SLOW_PATH_PEER_TABLE_SIZE 128

// One entry per front-panel port with an MTU.
#define EGRESS_MTU_TABLE_SIZE 512

// Indexed by PuntReason_t / DropReason_t (define.p4): must stay larger than
// the largest enum value.
#define PUNT_REASON_SLOTS 16
#define DROP_REASON_SLOTS 32

#endif // __SIZE__
