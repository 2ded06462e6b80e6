// SPDX-License-Identifier: Apache-2.0
//
// Established-flow translation: the Quick NAT paper's connection records.
// The controller installs two entries per session, one per direction, after
// it has run QNS on the session's first packet (see nat_scope.p4 for the
// miss path). A packet is looked up in the table of the zone it arrives from;
// a hit rewrites addresses and ports and the packet is routed on its new
// destination. Only packets with ports are looked up: TCP and UDP headers,
// and ICMP echo with its identifier standing for both ports.

#ifndef __NAT__
#define __NAT__

#include "../header.p4"
#include "../checksum.p4"
#include "error_copy.p4"

control NatIngress(inout headers_t hdr,
                   inout local_metadata_t local_md) {
    DropWithIcmpError() drop_with_icmp_error;

    // Hits of nat_in2out's entries. On v1model a table counts by itself;
    // PNA counts where an action says so (DIRECT_COUNT: p4c-dpdk wants every
    // action of the table, its default included, to, and only the table's
    // own actions may), and quicknat-swx ages the entries by these counts
    // (P4Runtime idle timeouts). Only the inside-to-outside entry of a
    // session ages (the controller's rule: outbound packets refresh a
    // mapping, RFC 4787 REQ-6), so nat_out2in has no counter, and actions
    // of its own (out2in_*) that count nothing.
    DECLARE_DIRECT_COUNTER(nat_in2out_counter);

    action count_hit() {
        DIRECT_COUNT(nat_in2out_counter);
    }

    action set_src(ipv4_addr_t addr, l4_port_t port) {
        local_md.nat.rewrite_src = true;
        local_md.nat.src_addr = addr;
        local_md.nat.src_port = port;
    }

    action set_dst(ipv4_addr_t addr, l4_port_t port) {
        local_md.nat.rewrite_dst = true;
        local_md.nat.dst_addr = addr;
        local_md.nat.dst_port = port;
    }

    // What a hit decides; NatRewriteIngress applies it once the packet is
    // known to leave (a packet dropped or sent up leaves as it came).
    // SNAT direction (inside to outside) and replies to DNAT sessions. For
    // ICMP echo the port is the new identifier.
    action rewrite_src(ipv4_addr_t addr, l4_port_t port) {
        set_src(addr, port);
        count_hit();
    }

    // Replies to SNAT sessions and the DNAT direction.
    action rewrite_dst(ipv4_addr_t addr, l4_port_t port) {
        set_dst(addr, port);
        count_hit();
    }

    // Both at once: hairpinning (RFC 4787 REQ-9: an inside host reaching
    // another through its public address sees the peer's public source) and
    // twice NAT. For ICMP echo the identifier becomes src_port.
    action rewrite_src_dst(ipv4_addr_t src_addr, l4_port_t src_port,
                           ipv4_addr_t dst_addr, l4_port_t dst_port) {
        set_src(src_addr, src_port);
        set_dst(dst_addr, dst_port);
        count_hit();
    }

    // nat_in2out's miss (PNA counts it too, in the counter's entry-less
    // slot 0).
    action in2out_miss() {
        count_hit();
    }

    // nat_out2in's: the same rewrites, uncounted.
    action out2in_rewrite_src(ipv4_addr_t addr, l4_port_t port) {
        set_src(addr, port);
    }

    action out2in_rewrite_dst(ipv4_addr_t addr, l4_port_t port) {
        set_dst(addr, port);
    }

    action out2in_rewrite_src_dst(ipv4_addr_t src_addr, l4_port_t src_port,
                                  ipv4_addr_t dst_addr, l4_port_t dst_port) {
        set_src(src_addr, src_port);
        set_dst(dst_addr, dst_port);
    }

    // A hairpin session whose second half is not open (the peer's mapping
    // filters it, RFC 4787 REQ-8): its packets go to the controller, which
    // tries the second half again and then rewrites this entry to
    // rewrite_src_dst (swpath retries per packet too). The parameters are the
    // session's external endpoint, unused here: a restarted controller reads
    // them back. The entry ages like any other, refreshed by the retries.
    action hairpin_pending(ipv4_addr_t src_addr, l4_port_t src_port) {
        local_md.nat.pending = true;
        local_md.nat.src_addr = src_addr;
        local_md.nat.src_port = src_port;
        count_hit();
    }

    // nat_in2out: exact on (ipv4_src, ipv4_dst, ip_proto, l4_sport,
    // l4_dport) of packets from the inside zone -> rewrite_src (SNAT
    // session, or reply of a DNAT session), rewrite_src_dst (hairpin: both
    // directions of a hairpinned session arrive from inside), rewrite_dst,
    // or hairpin_pending.
    // Entries idle-time out (P4Runtime idle_timeout_ns); hits are counted.
    // The key is the packet's 5-tuple (flow_key_t).
    // Miss: NatScopeIngress decides (punt NEW_FLOW, route untranslated, drop).
    table nat_in2out {
        key = {
            local_md.flow.src:   exact @name("ipv4_src");
            local_md.flow.dst:   exact @name("ipv4_dst");
            local_md.flow.proto: exact @name("ip_proto");
            local_md.flow.sport: exact @name("l4_sport");
            local_md.flow.dport: exact @name("l4_dport");
        }
        actions = {
            rewrite_src;
            rewrite_dst;
            rewrite_src_dst;
            hairpin_pending;
            @defaultonly in2out_miss;
        }
        const default_action = in2out_miss();
        TABLE_DIRECT_COUNTER = nat_in2out_counter;
        TABLE_IDLE_TIMEOUT;
        size = NAT_IN2OUT_TABLE_SIZE;
    }

    // nat_out2in: the same key, of packets from the outside zone ->
    // out2in_rewrite_dst (reply of an SNAT session, or DNAT session), or
    // the others (out2in_rewrite_src, out2in_rewrite_src_dst).
    // Miss: NatScopeIngress decides (punt NEW_FLOW_DNAT within dnat_scope,
    // otherwise drop: unsolicited inbound traffic never opens the NAT).
    table nat_out2in {
        key = {
            local_md.flow.src:   exact @name("ipv4_src");
            local_md.flow.dst:   exact @name("ipv4_dst");
            local_md.flow.proto: exact @name("ip_proto");
            local_md.flow.sport: exact @name("l4_sport");
            local_md.flow.dport: exact @name("l4_dport");
        }
        actions = {
            out2in_rewrite_src;
            out2in_rewrite_dst;
            out2in_rewrite_src_dst;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = NAT_OUT2IN_TABLE_SIZE;
    }

#if TARGET_LEARNS
    // Sessions the switch learned by itself (offload mode with
    // `install = "learn"`, docs/offload.md): the same translations as
    // nat_in2out's and nat_out2in's, in learner tables (PNA add_on_miss)
    // that a slow-path instance's learn tag fills, no table write per flow.
    // Their entries are leases of a fixed length (target.p4): a hit by
    // traffic keeps nothing alive, so the instance that owns the session
    // knows they are gone by its last tag plus the lease; a tagged packet
    // that finds its entry renews the lease (set_entry_expire_time), as the
    // instance assumes of every tag. Looked up after the written tables
    // miss. Counted in learn_counter (LEARN_* slots, define.p4).
    DECLARE_COUNTER(learn_counter, LEARN_COUNTER_SLOTS);

    action learned_in2out(ipv4_addr_t addr, l4_port_t port) {
        set_src(addr, port);
        if (local_md.learning) {
            set_entry_expire_time((ExpireTimeProfileId_t)local_md.learn_lease);
        }
    }

    action learned_out2in(ipv4_addr_t addr, l4_port_t port) {
        set_dst(addr, port);
        if (local_md.learning) {
            set_entry_expire_time((ExpireTimeProfileId_t)local_md.learn_lease);
        }
    }

    action learn_in2out() {
        if (local_md.learning) {
            add_entry(action_name = "learned_in2out",
                action_params = (learned_params_t){
                    addr = local_md.nat.src_addr, port = local_md.nat.src_port },
                expire_time_profile_id = (ExpireTimeProfileId_t)local_md.learn_lease);
        }
    }

    action learn_out2in() {
        if (local_md.learning) {
            add_entry(action_name = "learned_out2in",
                action_params = (learned_params_t){
                    addr = local_md.nat.src_addr, port = local_md.nat.src_port },
                expire_time_profile_id = (ExpireTimeProfileId_t)local_md.learn_lease);
        }
    }

    // The learned entry's key is the tag's tuple (the packet before its
    // translation), its translation (addr, port) the packet's side after.
    // (In nat.src_*: a learn tag's packet is routed, never rewritten, and
    // SWX's metadata has no byte to spare.)
    action learn_from_tag(ipv4_addr_t addr, l4_port_t port) {
        local_md.flow.src = hdr.learn.orig_src_addr;
        local_md.flow.dst = hdr.learn.orig_dst_addr;
        local_md.flow.sport = hdr.learn.orig_sport;
        local_md.flow.dport = hdr.learn.orig_dport;
        local_md.learn_lease = hdr.learn.lease;
        local_md.nat.src_addr = addr;
        local_md.nat.src_port = port;
    }

    // The other direction's: the reverse of the translated packet's tuple
    // (its reply), translated back to the tag's side (addr, port).
    action learn_from_reverse(ipv4_addr_t addr, l4_port_t port) {
        local_md.flow.src = hdr.ipv4.dst_addr;
        local_md.flow.dst = hdr.ipv4.src_addr;
        local_md.flow.sport = local_md.l4_dport;
        local_md.flow.dport = local_md.l4_sport;
        local_md.learn_lease = hdr.learn.lease;
        local_md.nat.src_addr = addr;
        local_md.nat.src_port = port;
    }

// A learned table's outcome: a hit by traffic, or for a learn tag a lease
// renewed or an entry added. (p4c-dpdk 1.2.4.17 takes add_entry only as a
// statement, so an add that found its bucket full is counted by the SWX
// pipeline's learner statistics instead: quicknat-swx's learn_failed.)
// The slot goes through metadata: DPDK 22.11 adds a regadd whose index and
// value are both constants to the pipeline's first register array, not its
// own (swx_slots.py refuses such a spec).
#define COUNT_LEARNED(learned_hit, hit_slot, added_slot) \
    if (!local_md.learning) { \
        if (learned_hit) { \
            local_md.learn_slot = hit_slot; \
            COUNT(learn_counter, local_md.learn_slot); \
        } \
    } else { \
        if (learned_hit) { \
            local_md.learn_slot = LEARN_RENEWED; \
        } else { \
            local_md.learn_slot = added_slot; \
        } \
        COUNT(learn_counter, local_md.learn_slot); \
    }

    table nat_in2out_learned {
        key = {
            local_md.flow.src:   exact @name("ipv4_src");
            local_md.flow.dst:   exact @name("ipv4_dst");
            local_md.flow.proto: exact @name("ip_proto");
            local_md.flow.sport: exact @name("l4_sport");
            local_md.flow.dport: exact @name("l4_dport");
        }
        actions = {
            @tableonly learned_in2out;
            @defaultonly learn_in2out;
        }
        add_on_miss = true;
        idle_timeout_with_auto_delete = true;
        const default_action = learn_in2out;
        size = NAT_IN2OUT_TABLE_SIZE;
    }

    table nat_out2in_learned {
        key = {
            local_md.flow.src:   exact @name("ipv4_src");
            local_md.flow.dst:   exact @name("ipv4_dst");
            local_md.flow.proto: exact @name("ip_proto");
            local_md.flow.sport: exact @name("l4_sport");
            local_md.flow.dport: exact @name("l4_dport");
        }
        actions = {
            @tableonly learned_out2in;
            @defaultonly learn_out2in;
        }
        add_on_miss = true;
        idle_timeout_with_auto_delete = true;
        const default_action = learn_out2in;
        size = NAT_OUT2IN_TABLE_SIZE;
    }
#endif

    apply {
        bool hit = false;
        bool outbound_rst = false;
        bool look_in2out_learned = false;
        bool look_out2in_learned = false;
        if (local_md.learning) {
            look_in2out_learned = true;
            look_out2in_learned = true;
        } else if (local_md.l4_ports_valid) {
            if (local_md.zone == ZONE_INSIDE) {
                // RFC 7857 sec. 2.2: an outbound RST must not refresh the
                // session, and any hit restarts an entry's idle timer
                // (P4Runtime idle timeout). So an inside RST skips the table:
                // the controller translates it and routes it (punt TCP_RST,
                // packet-out ROUTE) and cuts the timeout to the transitory one.
                // One it injected (the first packet of a flow) goes through.
                if (hdr.tcp.isValid() && hdr.tcp.flags & TCP_FLAG_RST != 0
                        && !local_md.injected) {
                    outbound_rst = true;
                } else {
                    hit = nat_in2out.apply().hit;
                    look_in2out_learned = !hit;
                }
            } else if (local_md.zone == ZONE_OUTSIDE) {
                hit = nat_out2in.apply().hit;
                look_out2in_learned = !hit;
            }
        }
#if TARGET_LEARNS
        // A learn tag's keys: the session's two directions, from the tag
        // (the 5-tuple before the slow path translated the packet) and the
        // packet (after). Its direction's entry maps the tag's tuple to
        // the packet's translated side; the other maps the reverse of the
        // packet's tuple back to the tag's.
        bool tag_out2in = local_md.learning
                          && hdr.learn.flags & LEARN_FLAG_OUT2IN != 0;
        if (look_in2out_learned) {
            if (tag_out2in) {
                learn_from_reverse(hdr.learn.orig_dst_addr, hdr.learn.orig_dport);
            } else if (local_md.learning) {
                learn_from_tag(hdr.ipv4.src_addr, local_md.l4_sport);
            }
            bool in2out_hit = nat_in2out_learned.apply().hit;
            COUNT_LEARNED(in2out_hit, LEARN_IN2OUT_HIT, LEARN_IN2OUT_ADDED)
            hit = hit || in2out_hit;
        }
        if (look_out2in_learned) {
            if (tag_out2in) {
                learn_from_tag(hdr.ipv4.dst_addr, local_md.l4_dport);
            } else if (local_md.learning) {
                learn_from_reverse(hdr.learn.orig_src_addr, hdr.learn.orig_sport);
            }
            bool out2in_hit = nat_out2in_learned.apply().hit;
            COUNT_LEARNED(out2in_hit, LEARN_OUT2IN_HIT, LEARN_OUT2IN_ADDED)
            hit = hit || out2in_hit;
        }
        if (local_md.learning) {
            hit = false;  // learned; the packet is routed as it is
        }
#endif
        if (outbound_rst) {
            if (hdr.ipv4.ttl <= 1) {
                drop_with_icmp_error.apply(local_md, DropReason_t.TTL_EXPIRED,
                                     PuntReason_t.TIME_EXCEEDED);
            } else {
                local_md.punt_reason = PuntReason_t.TCP_RST;
            }
            local_md.nat.hit = true;
        } else if (hit && local_md.nat.pending) {
            // Untranslated, as a new flow would be (nat_scope.p4's rules).
            if (hdr.ipv4.ttl <= 1) {
                drop_with_icmp_error.apply(local_md, DropReason_t.TTL_EXPIRED,
                                     PuntReason_t.TIME_EXCEEDED);
            } else {
                local_md.punt_reason = PuntReason_t.NEW_FLOW;
            }
            local_md.nat.hit = true;
        } else if (hit && local_md.slow_path && hdr.tcp.isValid()
                   && hdr.tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_FIN | TCP_FLAG_RST) != 0) {
            // Offload mode: the slow-path instance owns the session's TCP
            // state (RFC 7857 sec. 2.2), so the segments that change it go
            // there untranslated, as the controller's TCP_STATE copies would.
            if (hdr.ipv4.ttl <= 1) {
                drop_with_icmp_error.apply(local_md, DropReason_t.TTL_EXPIRED,
                                     PuntReason_t.TIME_EXCEEDED);
            } else {
                local_md.punt_reason = PuntReason_t.TCP_STATE;
            }
            local_md.nat.hit = true;
        } else if (hit && hdr.tcp.isValid() && TARGET_CLONES == 0 && !local_md.injected
                   && hdr.tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_FIN | TCP_FLAG_RST) != 0) {
            // RFC 7857 sec. 2.2: SYN, FIN and RST move the session between
            // transitory and established timeouts, and the controller keeps
            // that state. A target that cannot copy the segment (target.p4)
            // sends it up instead; the controller forwards it. Not one the
            // controller injected: it took that one's state from its punt.
            if (hdr.ipv4.ttl <= 1) {
                drop_with_icmp_error.apply(local_md, DropReason_t.TTL_EXPIRED,
                                     PuntReason_t.TIME_EXCEEDED);
            } else {
                local_md.punt_reason = PuntReason_t.TCP_SEGMENT;
            }
            local_md.nat.hit = true;
        } else if (hit) {
            if (hdr.tcp.isValid()
                    && hdr.tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_FIN | TCP_FLAG_RST) != 0) {
                // A copy to the controller (TARGET_CLONES), which keeps the
                // state and the entries' timeouts (RFC 7857 sec. 2.2).
                local_md.copy_reason = PuntReason_t.TCP_STATE;
            }
            if (local_md.nat.rewrite_dst) {
                local_md.route_dst = local_md.nat.dst_addr;
            }
            local_md.nat.hit = true;
            local_md.route_ipv4 = true;
        }
    }
}

// The rewrite a NatIngress hit decided, applied to a packet that leaves
// (not one dropped or sent to the controller): addresses and ports, and the
// checksums they are in, incrementally (RFC 1624), which stays right for any
// payload length and for first fragments and keeps a wrong checksum wrong.
control NatRewriteIngress(inout headers_t hdr,
                          inout local_metadata_t local_md) {
    apply {
        ipv4_addr_t new_src = hdr.ipv4.src_addr;
        ipv4_addr_t new_dst = hdr.ipv4.dst_addr;
        l4_port_t new_sport = local_md.l4_sport;
        l4_port_t new_dport = local_md.l4_dport;
        if (local_md.nat.rewrite_src) {
            new_src = local_md.nat.src_addr;
            new_sport = local_md.nat.src_port;
        }
        if (local_md.nat.rewrite_dst) {
            new_dst = local_md.nat.dst_addr;
            new_dport = local_md.nat.dst_port;
        }

        // The IPv4 header checksum covers the addresses; TCP and UDP
        // checksums cover them (pseudo-header) and the ports: RFC 1624 over
        // all the changed words at once.
        bit<32> address_delta = csum16_delta32(hdr.ipv4.src_addr, new_src)
                              + csum16_delta32(hdr.ipv4.dst_addr, new_dst);
        bit<32> tcp_udp_delta = address_delta
                              + csum16_delta16(local_md.l4_sport, new_sport)
                              + csum16_delta16(local_md.l4_dport, new_dport);
        if (hdr.tcp.isValid()) {
            hdr.tcp.checksum = csum16_update(hdr.tcp.checksum, tcp_udp_delta);
            hdr.tcp.sport = new_sport;
            hdr.tcp.dport = new_dport;
        } else if (hdr.udp.isValid()) {
            // RFC 768: 0 means "no checksum" and must stay 0; a computed
            // 0 is sent as 0xffff, its one's-complement equivalent.
            if (hdr.udp.checksum != 0) {
                bit<16> udp_checksum = csum16_update(hdr.udp.checksum,
                                                     tcp_udp_delta);
                if (udp_checksum == 0) {
                    udp_checksum = 0xffff;
                }
                hdr.udp.checksum = udp_checksum;
            }
            hdr.udp.sport = new_sport;
            hdr.udp.dport = new_dport;
        } else if (hdr.icmp_echo.isValid()) {
            // The ICMP checksum covers no pseudo-header: only the
            // identifier changes.
            l4_port_t new_identifier = new_dport;
            if (local_md.nat.rewrite_src) {
                new_identifier = new_sport;
            }
            hdr.icmp.checksum = csum16_update(hdr.icmp.checksum,
                csum16_delta16(hdr.icmp_echo.identifier, new_identifier));
            hdr.icmp_echo.identifier = new_identifier;
        }
        hdr.ipv4.hdr_checksum = csum16_update(hdr.ipv4.hdr_checksum, address_delta);
        hdr.ipv4.src_addr = new_src;
        hdr.ipv4.dst_addr = new_dst;
    }
}

#endif // __NAT__
