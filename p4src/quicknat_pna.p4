// SPDX-License-Identifier: Apache-2.0
//
// QuickNAT data plane for PNA, as p4c-dpdk compiles it for DPDK's SWX
// pipeline (quicknat-swx): the program of quicknat.p4, built from the same
// feature controls with include/pna/'s target bindings. What differs, and
// why: p4src/README.md, "The PNA build".

#include "include/pna/target.p4"
#include "include/define.p4"
#include "include/size.p4"
#include "include/header.p4"
#include "include/parser.p4"
#include "include/pna/pipeline.p4"

PNA_NIC(
    QuickNatParser(),
    QuickNatPreControl(),
    QuickNatMainControl(),
    QuickNatDeparser()
) main;
