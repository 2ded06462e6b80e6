// SPDX-License-Identifier: Apache-2.0
//
// A packet the router drops and must answer with an ICMP error (RFC 1812
// sec. 4.3.2): it is dropped and counted under `drop`, and a copy of it as it
// arrived (an I2E clone, made by PacketInIngress, through punt_meter) goes to
// the controller with packet-in reason `reason`; the controller builds the
// error (controller/quicknat/icmp_gen.py) and sends it back with a ROUTE
// packet-out. The clone is the packet before any rewrite, so the error quotes
// what the sender sent, and a packet the controller injected is never copied.
//
// A control rather than an action: an action called with the whole
// local_md copies every field in and out (p4c inlines it with copy-in/out),
// which a target without copy propagation (p4c-dpdk, p4src/Makefile) keeps.

#ifndef __ERROR_COPY__
#define __ERROR_COPY__

#include "../header.p4"

control DropWithIcmpError(inout local_metadata_t local_md,
                          in DropReason_t drop, in PuntReason_t reason) {
    apply {
        local_md.drop_reason = drop;
        local_md.copy_reason = reason;
        local_md.forward = false;
    }
}

#endif // __ERROR_COPY__
