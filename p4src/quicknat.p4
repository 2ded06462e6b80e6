// SPDX-License-Identifier: Apache-2.0
//
// QuickNAT data plane: the Quick NAT paper's connection tables (both
// directions of every session) offloaded to a P4 switch, with ARP, routing
// and packet I/O to the P4Runtime controller that runs QNS on table misses.
// This build: v1model (BMv2 simple_switch_grpc); quicknat_pna.p4 is the
// same program for PNA (DPDK's SWX pipeline). Pipeline and controller
// contract: p4src/README.md.

#include "include/v1model/target.p4"
#include "include/define.p4"
#include "include/size.p4"
#include "include/header.p4"
#include "include/parser.p4"
#include "include/v1model/checksum.p4"
#include "include/v1model/pipeline.p4"

V1Switch(
    QuickNatParser(),
    QuickNatVerifyChecksum(),
    QuickNatIngress(),
    QuickNatEgress(),
    QuickNatComputeChecksum(),
    QuickNatDeparser()
) main;
