// SPDX-License-Identifier: Apache-2.0
//
// Port classification: every port is inside (private side, traffic that
// SNAT rules apply to) or outside (public side). The zone picks the
// connection table a packet is looked up in and what a miss means.

#ifndef __PORT_ZONE__
#define __PORT_ZONE__

#include "../header.p4"

control PortZoneIngress(inout headers_t hdr,
                        inout local_metadata_t local_md) {

    action set_zone(zone_t zone) {
        local_md.zone = zone;
    }

    // port_zone: exact on the logical ingress port -> set_zone(zone) with
    // zone ZONE_INSIDE (1), ZONE_OUTSIDE (2) or ZONE_SLOW_PATH (3: the port
    // of a slow-path instance, offload mode, slow_path.p4).
    // Miss (or any other zone value): drop, UNKNOWN_PORT. A port the
    // controller has not classified carries nothing, not even ARP.
    table port_zone {
        key = {
            local_md.ingress_port: exact @name("ingress_port");
        }
        actions = {
            set_zone;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = PORT_ZONE_TABLE_SIZE;
    }

    apply {
        if (!port_zone.apply().hit) {
            local_md.drop_reason = DropReason_t.UNKNOWN_PORT;
        } else if (local_md.zone != ZONE_INSIDE
                   && local_md.zone != ZONE_OUTSIDE
                   && local_md.zone != ZONE_SLOW_PATH) {
            local_md.drop_reason = DropReason_t.UNKNOWN_PORT;
        }
    }
}

#endif // __PORT_ZONE__
