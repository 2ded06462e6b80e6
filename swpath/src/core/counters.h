/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every counter of the data path, declared once (VPP's error X-macro style).
 * Each worker owns one array of them; readers (control socket, telemetry)
 * sum the arrays without locks and tolerate slightly stale values.
 */
#ifndef SP_COUNTERS_H
#define SP_COUNTERS_H

#include <stdint.h>

#include "util/count.h"	/* how a worker writes them: SP_COUNT_ADD */

#define SP_COUNTERS(X) \
	X(rx, "packets received from a device") \
	X(tx, "packets given to a device") \
	X(drop_tx_full, "packets a device did not take (TX queue full)") \
	X(dispatched, "packets the software dispatcher passed to another worker") \
	X(handoff, "packets passed to the worker that owns their session") \
	X(ring_rx, "packets taken from this worker's dispatch/handoff ring") \
	X(drop_ring_full, "packets dropped: another worker's ring was full") \
	X(in2out, "packets translated inside to outside") \
	X(out2in, "packets translated outside to inside") \
	X(hairpin, "packets translated back inside after in2out (hairpinning)") \
	X(peer_handoff, "packets passed to the slow-path instance that owns them, through the switch (its peer VIDs): hairpins, and ICMP errors and fragments from outside about its ports") \
	X(peer_received, "packets another slow-path instance passed to this one through the switch (the hand-off VID)") \
	X(icmp_error_in2out, "ICMP errors translated inside to outside") \
	X(icmp_error_out2in, "ICMP errors translated outside to inside") \
	X(sessions_created, "sessions opened") \
	X(sessions_expired, "sessions closed by their idle timeout") \
	X(sessions_deleted, "sessions deleted by an operator (sessions delete|flush)") \
	X(sessions_adopted, "sessions taken over from the previous process at start (--state)") \
	X(sessions_discarded, "sessions of the previous process not taken over: torn by a crash or not valid under this configuration (the start-up log says why)") \
	X(sessions_handed_back, "sessions the switch held that this process did not know, handed back by the offload manager and taken over") \
	X(handback_refused, "sessions handed back that this process could not take over (no rule gives them now, port not its own, key taken, table full)") \
	X(sessions_offloaded, "sessions the offload manager installed in the switch (aged by the switch's idle notifications)") \
	X(learn_tagged_in2out, "learn mode: translated packets (source rewritten) sent to the switch with the learn tag") \
	X(learn_tagged_out2in, "learn mode: translated packets (destination rewritten) sent to the switch with the learn tag") \
	X(learn_not_learnable, "learn mode: translated packets sent without the learn tag: a hairpin, a fragment, a RST, a peer's, a kind with no lease, or not towards the switch") \
	X(learn_no_headroom, "learn mode: translated packets sent without the learn tag for want of mbuf headroom (the switch learns from the flow's next packet)") \
	X(learn_quiet_refused, "learn mode: new flows refused in the quiet period after a start without every session of the state file (the switch may hold the previous run's ports for the longest lease)") \
	X(offload_unknown, "offload manager commands about a session that was gone (closed meanwhile)") \
	X(mappings_created, "endpoint-independent mappings created") \
	X(mappings_freed, "mappings freed with their last session") \
	X(events_dropped, "mapping events not logged: the worker's event ring was full") \
	X(stream_dropped, "session events not streamed to subscribers: the worker's stream ring was full") \
	X(arp_replies, "ARP replies sent for our and NAT-owned addresses") \
	X(arp_requests, "ARP requests sent to resolve next hops") \
	X(arp_learned, "ARP packets passed to the neighbour table") \
	X(arp_conflicts, "ARP packets from another MAC claiming one of our addresses, or a NAT-owned one on an outside link: an address conflict, logged (RFC 5227 sec. 2.4)") \
	X(arp_announcements, "ARP announcements sent to defend an address another host claimed, at most one per address per 10 s (RFC 5227 sec. 2.4)") \
	X(neighbor_held, "packets held while their next hop's MAC was asked for (up to 3 per next hop, 16 per worker), sent once it answered") \
	X(icmp_echo_replies, "ICMP echo replies sent for the router's addresses") \
	X(icmp_time_exceeded, "ICMP time exceeded sent: a packet's TTL would reach zero (RFC 1812)") \
	X(icmp_prohibited, "ICMP unreachable code 13 sent: a new flow refused for want of a port or over a per-host limit (RFC 5508)") \
	X(icmp_frag_needed, "ICMP fragmentation needed sent: a DF packet over the egress MTU (RFC 1191)") \
	X(icmp_error_suppressed, "ICMP errors not sent: about an ICMP error, a later fragment, a broadcast or multicast, a non-unicast source, or no interface address (RFC 1812 sec. 4.3.2.7)") \
	X(icmp_error_rate_limited, "ICMP errors not sent: over the [icmp] rate (RFC 1812 sec. 4.3.2.8)") \
	X(drop_l2_other, "dropped: IPv4 frame not sent to our MAC") \
	X(drop_not_ipv4, "dropped: neither IPv4 nor ARP (VLAN, IPv6, ...)") \
	X(drop_slow_path_tag, "dropped: on a port with 802.1Q sub-interfaces, a VID none of them has (or no tag and no untagged interface)") \
	X(drop_arp, "ARP frames consumed without a reply (replies, other targets, malformed)") \
	X(drop_truncated, "dropped: shorter than its headers say") \
	X(drop_malformed, "dropped: bad version, header length or option") \
	X(drop_bad_tcp_flags, "dropped: TCP flag combination no peer sends (SYN+FIN, SYN+RST, none, FIN without ACK, ...)") \
	X(drop_port_zero, "dropped: TCP or UDP port 0") \
	X(drop_martian, "dropped: martian source or destination (0/8, 127/8, class E; multicast or broadcast source) or a NAT-owned source from a link (RFC 1812 sec. 5.3.7)") \
	X(drop_not_unicast, "dropped: multicast or limited broadcast destination (NAT is defined for unicast)") \
	X(drop_bad_checksum, "dropped: bad IPv4 header checksum") \
	X(frag_translated, "IPv4 fragments after the first translated with their datagram's ports (virtual reassembly, RFC 4787 REQ-14)") \
	X(fragmented, "packets over the egress interface's MTU without DF, sent as fragments in order (RFC 4787 REQ-13, RFC 791); each fragment counts in tx") \
	X(frag_held, "fragments held until their datagram's first fragment came") \
	X(drop_frag_timeout, "held fragments dropped: their first fragment did not come in time") \
	X(drop_frag_limit, "fragments dropped: over the reassembly limits (per datagram, per source, per worker)") \
	X(drop_frag_overlap, "dropped: a fragment overlapping bytes its datagram already had (a duplicate, or a partial overlap or a contradicting end, which kills the datagram: its held and later fragments go too), reaching past 65,535 bytes, a first fragment too short for its transport header, or a TCP fragment at offset 8 (RFC 1858, RFC 3128, RFC 5722)") \
	X(drop_fragment, "dropped: a fragment NAT cannot translate (of an ICMP error or a hairpinned flow, or of a refused datagram)") \
	X(drop_ip_options, "dropped: IPv4 source-route option") \
	X(drop_ttl, "dropped: TTL would reach zero") \
	X(drop_mtu, "dropped: larger than the egress interface's MTU with DF set (its sender told: icmp_frag_needed), or not fragmented for want of an mbuf") \
	X(drop_multiseg, "dropped: packet in several buffers") \
	X(drop_local, "dropped: addressed to the router, not an echo request") \
	X(drop_unsupported, "dropped: protocol or ICMP type NAT cannot translate") \
	X(drop_icmp_error, "dropped: ICMP error without a session") \
	X(drop_no_rule, "dropped: new inside flow and no SNAT rule") \
	X(drop_unsolicited, "dropped: outside packet without mapping or DNAT rule") \
	X(drop_filtered, "dropped: refused by the mapping's filtering mode") \
	X(drop_rst_no_session, "dropped: TCP RST of no session (opens none)") \
	X(drop_pool_exhausted, "dropped: new flow and no free port") \
	X(drop_quota_exceeded, "dropped: new flow over the per-host port quota") \
	X(drop_session_limit, "dropped: new flow over the per-host session limit") \
	X(drop_table_full, "dropped: new flow and this worker's table is full") \
	X(drop_no_route, "dropped: no route to the destination") \
	X(drop_no_neighbor, "dropped: next hop's MAC unknown: held a second with no answer, over the packets held for it, or the neighbour table full")

enum sp_counter {
#define SP_X_ENUM(name, help) SP_CNT_##name,
	SP_COUNTERS(SP_X_ENUM)
#undef SP_X_ENUM
	SP_CNT_MAX
};

extern const char *const sp_counter_names[SP_CNT_MAX];
extern const char *const sp_counter_help[SP_CNT_MAX];

#endif /* SP_COUNTERS_H */
