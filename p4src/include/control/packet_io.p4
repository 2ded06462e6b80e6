// SPDX-License-Identifier: Apache-2.0
//
// Packet I/O with the P4Runtime controller.
// - PacketOutIngress: decodes packet_out. DIRECT sends the payload out of
//   egress_port untouched and skips the pipeline; INJECT makes the payload
//   look like it arrived on packet_out.ingress_port, so the first packet of a
//   new flow, sent back after the controller installed its entries, is
//   translated by them exactly like the packets that follow it. ROUTE is
//   INJECT for a packet the controller has translated itself (an ICMP error,
//   whose embedded packet the tables cannot match): it is only routed.
// - PacketInIngress: turns a punt decision into a trip to CPU_PORT, through
//   punt_meter so a flood of new flows cannot swamp the controller (in
//   offload mode: to the slow-path instance, slow_path.p4); and a
//   TCP_STATE decision into a copy to CPU_PORT (clone session
//   CPU_CLONE_SESSION) while the packet itself goes on.
// - PacketInEncap: prepends packet_in to what goes to CPU_PORT.

#ifndef __PACKET_IO__
#define __PACKET_IO__

#include "../header.p4"
#include "slow_path.p4"

control PacketOutIngress(inout headers_t hdr,
                         inout local_metadata_t local_md) {
    apply {
        if (hdr.packet_out.isValid()) {
            if (hdr.packet_out.mode == PacketOutMode_t.DIRECT) {
                local_md.packet_out_direct = true;
                local_md.egress_port = hdr.packet_out.egress_port;
                local_md.forward = true;
            } else if (hdr.packet_out.mode == PacketOutMode_t.INJECT) {
                local_md.ingress_port = hdr.packet_out.ingress_port;
                local_md.injected = true;
            } else if (hdr.packet_out.mode == PacketOutMode_t.ROUTE) {
                local_md.ingress_port = hdr.packet_out.ingress_port;
                local_md.injected = true;
                local_md.skip_nat = true;
            } else {
                local_md.drop_reason = DropReason_t.BAD_PACKET_OUT;
            }
            hdr.packet_out.setInvalid();
        }
    }
}

control PacketInIngress(inout headers_t hdr,
                        inout local_metadata_t local_md) {
    // Indexed by PuntReason_t, so each reason has its own budget (an ARP
    // storm does not starve new flows). The controller configures each index
    // with a P4Runtime MeterEntry (packets per second); BMv2 passes
    // everything (green) on an index never configured. Yellow is punted,
    // red dropped.
    DECLARE_PACKET_METER(punt_meter, PUNT_REASON_SLOTS);
    // Packets actually sent to the controller, by reason.
    DECLARE_COUNTER(punt_counter, PUNT_REASON_SLOTS);
    // Packets sent to a slow-path instance instead (offload mode), by reason.
    DECLARE_COUNTER(slow_path_counter, PUNT_REASON_SLOTS);
    SendToSlowPath() send_to_slow_path;

    apply {
        // (conditions, not boolean assignments: p4c-dpdk has no || to
        // assign, only to branch on)
        bool error_copy = false;
        if (local_md.copy_reason == PuntReason_t.TIME_EXCEEDED
                || local_md.copy_reason == PuntReason_t.FRAG_NEEDED) {
            error_copy = true;
        }
        if (local_md.punt_reason != PuntReason_t.NONE
                && local_md.drop_reason == DropReason_t.NONE) {
            if (local_md.injected) {
                // The controller sent this packet back after installing its
                // entries and it still misses: punting it again would loop.
                local_md.drop_reason = DropReason_t.PUNT_LOOP;
            } else if (local_md.slow_path) {
                // Offload mode: the slow-path instance takes it, unmetered
                // (it runs at line rate; the controller does not see it).
                COUNT(slow_path_counter, (bit<8>)local_md.punt_reason);
                send_to_slow_path.apply(hdr, local_md);
            } else {
                MeterColor_t color;
                EXECUTE_METER(punt_meter, (bit<8>)local_md.punt_reason, color);
                if (color == METER_COLOR_RED) {
                    local_md.drop_reason = DropReason_t.PUNT_RATE_LIMITED;
                } else {
                    COUNT(punt_counter, (bit<8>)local_md.punt_reason);
                    local_md.egress_port = CPU_PORT;
                    local_md.forward = true;
                }
            }
        } else if (local_md.copy_reason != PuntReason_t.NONE
                && ((error_copy && !local_md.skip_nat)
                    || (local_md.drop_reason == DropReason_t.NONE
                        && !error_copy && !local_md.injected))) {
            // A copy of a forwarded packet (TCP_STATE; not of an injected
            // one, whose state the controller took from its punt), or of one
            // dropped for an ICMP error (error_copy.p4), injected ones
            // included: the first packet of a new flow over the MTU gets its
            // fragmentation needed too (the clone is re-parsed from the packet
            // as the host sent it). Never of a ROUTE packet-out: those are the
            // controller's translated ICMP errors (no error about an error,
            // RFC 1812 sec. 4.3.2.7). The copy shares the reason's
            // meter: under a flood of SYNs the controller loses state updates
            // (the session keeps its current timeout), never forwarding; and
            // a red error copy only means no ICMP error (RFC 1812 sec.
            // 4.3.2.8 rate limit).
            MeterColor_t color;
            EXECUTE_METER(punt_meter, (bit<8>)local_md.copy_reason, color);
            if (color != METER_COLOR_RED) {
                COUNT(punt_counter, (bit<8>)local_md.copy_reason);
#if TARGET_CLONES
                CLONE_TO_CPU(CPU_CLONE_SESSION, PUNT_FIELD_LIST);
#else
                // No clone (target.p4): only an error's packet is copied
                // here, and it is dropped anyway, so it goes up itself, as
                // it arrived (the NAT rewrite waits for a packet that
                // leaves: ingress.p4); its drop is counted first.
                local_md.punt_dropped = true;
                local_md.egress_port = CPU_PORT;
#endif
            }
        }
    }
}

// The packet_in header in front of what goes to CPU_PORT: v1model's egress
// applies it, PNA's main control last (target pipeline.p4).
control PacketInEncap(inout headers_t hdr,
                      in local_metadata_t local_md,
                      in port_t egress_port) {
    apply {
        if (egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = local_md.ingress_port;
            PACKET_IN_PADDING_CLEAR(hdr.packet_in)
            // A copy keeps only the PUNT_FIELD_LIST fields: ingress_port,
            // copy_reason, egress_mtu.
            hdr.packet_in.reason = local_md.copy_reason != PuntReason_t.NONE
                ? local_md.copy_reason : local_md.punt_reason;
            hdr.packet_in.mtu = local_md.copy_reason == PuntReason_t.FRAG_NEEDED
                ? local_md.egress_mtu : 0;
        }
    }
}

#endif // __PACKET_IO__
