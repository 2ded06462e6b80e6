"""The one counter vocabulary of both data paths (docs/counters.md).

Each thing a data path counts that the other counts too has one canonical name
here, with the name each path keeps it under: on the P4 path the controller's
counter (`refused.*`, `fragment.*`, `icmp_gen.*`, ...) or the switch's drop
counter (`drop.<DropReason>`, p4src/include/define.p4), on swpath its counter
(swpath/src/counters.h). Tests, the PTF harness and the metrics name counters
by these; controller/tests/test_counters.py checks every native name against
the P4 program's drop reasons, the core's refusals and counters.h, and that
docs/counters.md is this table.

A path may keep two canonical counters in one native counter where it does not
tell the cases apart (swpath's `drop_unsolicited`, P4's `drop.parser_error`).
And the P4 path may keep one in two places, joined by `+` and read as their
sum, where the target decides who counts: a datagram with IPv4 options is
checked by BMv2's parser (`drop.ip_options`) but by the controller on SWX,
whose parser does not walk options (`ipv4_options.source_route`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Kind(enum.Enum):
    """What a counter counts; metrics.py puts each kind in its own family."""

    EVENT = "event"  # something that happened: a flow, an expiry
    REFUSED = "refused"  # a new flow refused: no session opened (Refusal)
    DROPPED = "dropped"  # a packet dropped for what it is (the input contract, IN-*)
    SENT = "sent"  # an ICMP error the NAT sent (ICMP-4)


@dataclass(frozen=True, slots=True)
class Counter:
    name: str
    kind: Kind
    p4: str  # the controller's counter, or drop.<reason> of the switch
    swpath: str  # swpath/src/counters.h ("": none, in OFFLOAD)
    help: str


VOCABULARY: tuple[Counter, ...] = (
    # swpath has no punt: a packet that misses its table opens a session (or is
    # refused and counted), so the sessions it opened are its new flows.
    Counter(
        "new_flows",
        Kind.EVENT,
        "packet_in",
        "sessions_created",
        "packets taken as the first of a flow (a punt, or a session opened)",
    ),
    Counter(
        "sessions_expired",
        Kind.EVENT,
        "sessions_expired",
        "sessions_expired",
        "sessions closed by their idle timeout",
    ),
    Counter(
        "sessions_deleted",
        Kind.EVENT,
        "sessions_deleted",
        "sessions_deleted",
        "sessions an operator deleted (quicknat sessions delete, flush)",
    ),
    # swpath keeps one counter for every outside packet without mapping or
    # DNAT rule; P4 drops those to addresses it does not own in the switch.
    Counter(
        "unsolicited_no_mapping",
        Kind.DROPPED,
        "drop.no_mapping",
        "drop_unsolicited",
        "inbound packets to an address the NAT does not own, dropped",
    ),
    Counter(
        "unsolicited",
        Kind.REFUSED,
        "refused.unsolicited",
        "drop_unsolicited",
        "inbound packets to a NAT address without mapping, refused",
    ),
    Counter(
        "filtered",
        Kind.REFUSED,
        "refused.filtered",
        "drop_filtered",
        "inbound packets on a mapping that its filtering mode refused",
    ),
    Counter(
        "rst_no_session",
        Kind.REFUSED,
        "refused.rst_no_session",
        "drop_rst_no_session",
        "TCP RSTs of no session, dropped without opening one",
    ),
    Counter(
        "pool_exhausted",
        Kind.REFUSED,
        "refused.pool_exhausted",
        "drop_pool_exhausted",
        "new flows refused for want of a free port",
    ),
    Counter(
        "quota_exceeded",
        Kind.REFUSED,
        "refused.quota_exceeded",
        "drop_quota_exceeded",
        "new flows refused: the host holds its ports_per_host",
    ),
    Counter(
        "session_limit",
        Kind.REFUSED,
        "refused.session_limit",
        "drop_session_limit",
        "new flows refused: the host holds its sessions_per_host",
    ),
    Counter(
        "table_full",
        Kind.REFUSED,
        "refused.table_full",
        "drop_table_full",
        "new flows refused: the data path's connection table is full",
    ),
    Counter(
        "fragment_held",
        Kind.EVENT,
        "fragment.held",
        "frag_held",
        "fragments held until their datagram's first fragment came",
    ),
    Counter(
        "fragment_over_limit",
        Kind.DROPPED,
        "fragment.over_limit",
        "drop_frag_limit",
        "fragments dropped over the reassembly holding limits",
    ),
    Counter(
        "fragment_overlap",
        Kind.DROPPED,
        "fragment.overlap",
        "drop_frag_overlap",
        "fragments dropped (IN-IP-9): over bytes their datagram had, of a datagram that"
        " overlapped, past 65,535 bytes, or a first too short for its transport header",
    ),
    Counter(
        "source_route_dropped",
        Kind.DROPPED,
        "drop.ip_options+ipv4_options.source_route",
        "drop_ip_options",
        "packets with a loose or strict source route option, dropped",
    ),
    Counter(
        "malformed_dropped",
        Kind.DROPPED,
        "drop.parser_error+ipv4_options.malformed",
        "drop_malformed",
        "packets with malformed headers (e.g. an IPv4 option list), dropped",
    ),
    Counter(
        "ttl_expired",
        Kind.DROPPED,
        "drop.ttl_expired",
        "drop_ttl",
        "packets dropped because their TTL would reach 0",
    ),
    Counter(
        "mtu_exceeded",
        Kind.DROPPED,
        "drop.mtu_exceeded",
        "drop_mtu",
        "packets dropped because they are bigger than the egress MTU",
    ),
    Counter(
        "icmp_time_exceeded_sent",
        Kind.SENT,
        "icmp_gen.sent.time_exceeded",
        "icmp_time_exceeded",
        "ICMP time exceeded the NAT sent (RFC 1812)",
    ),
    Counter(
        "icmp_frag_needed_sent",
        Kind.SENT,
        "icmp_gen.sent.frag_needed",
        "icmp_frag_needed",
        "ICMP fragmentation needed the NAT sent (RFC 1191)",
    ),
    Counter(
        "icmp_prohibited_sent",
        Kind.SENT,
        "icmp_gen.sent.prohibited",
        "icmp_prohibited",
        "ICMP unreachable code 13 the NAT sent (RFC 5508)",
    ),
    Counter(
        "icmp_error_suppressed",
        Kind.EVENT,
        "icmp_gen.suppressed",
        "icmp_error_suppressed",
        "ICMP errors RFC 1812 sec. 4.3.2.7 kept the NAT from sending",
    ),
    Counter(
        "truncated_dropped",
        Kind.DROPPED,
        "drop.parser_error",
        "drop_truncated",
        "packets shorter than their headers say, dropped",
    ),
    Counter(
        "bad_checksum",
        Kind.DROPPED,
        "drop.ipv4_checksum",
        "drop_bad_checksum",
        "packets with a bad IPv4 header checksum, dropped",
    ),
    Counter(
        "bad_tcp_flags",
        Kind.DROPPED,
        "drop.bad_tcp_flags",
        "drop_bad_tcp_flags",
        "TCP segments with a flag combination no peer sends, dropped",
    ),
    Counter(
        "port_zero",
        Kind.DROPPED,
        "drop.port_zero",
        "drop_port_zero",
        "TCP or UDP packets with port 0, dropped",
    ),
    Counter(
        "martian",
        Kind.DROPPED,
        "drop.martian",
        "drop_martian",
        "packets with a martian or NAT-owned source, or a martian destination, dropped",
    ),
    Counter(
        "not_unicast",
        Kind.DROPPED,
        "drop.not_unicast",
        "drop_not_unicast",
        "packets to a multicast or limited broadcast destination, dropped",
    ),
    Counter(
        "no_rule",
        Kind.REFUSED,
        "drop.no_rule",
        "drop_no_rule",
        "inside packets whose source no SNAT rule matches, dropped",
    ),
    Counter(
        "not_ipv4",
        Kind.DROPPED,
        "drop.unsupported_ethertype",
        "drop_not_ipv4",
        "frames neither IPv4 nor ARP (VLAN, IPv6, LLDP, ...), dropped",
    ),
    Counter(
        "slow_path_tag",
        Kind.DROPPED,
        "drop.slow_path_tag",
        "drop_slow_path_tag",
        "frames between the switch and a slow-path instance (offload mode) without the"
        " 802.1Q tag of a zone, dropped",
    ),
    Counter(
        "unsupported",
        Kind.DROPPED,
        "drop.unsupported_l4",
        "drop_unsupported",
        "packets that need NAT but have no mappable ports (GRE, ICMP timestamp, ...)",
    ),
    Counter(
        "icmp_error_dropped",
        Kind.DROPPED,
        "icmp_error.no_session",
        "drop_icmp_error",
        "ICMP errors that quote a packet of no session, dropped",
    ),
)

# Offload mode's own events (docs/offload.md): the controller counts them as
# the offload manager, and where a slow-path instance counts the same thing
# its counter is named here too (swpath/src/counters.h; "" where it keeps
# none). The controller's name is the canonical one where both agree.
OFFLOAD: tuple[Counter, ...] = (
    Counter(
        "sessions_announced",
        Kind.EVENT,
        "sessions_announced",
        "",
        "sessions the instances announced opened on their session streams",
    ),
    # install = "learn": a new pipeline has new learner tables, so no lease of
    # an instance's is left (its quiet period after a start without state ends)
    Counter(
        "learn_fresh_told",
        Kind.EVENT,
        "learn_fresh_told",
        "",
        "pipelines pushed to a learning switch: the instances told it holds no lease of theirs",
    ),
    # the writer's count in either mode; an instance counts the `session
    # offload` lines it is told
    Counter(
        "sessions_offloaded",
        Kind.EVENT,
        "sessions_installed",
        "sessions_offloaded",
        "sessions whose two entries the switch took (their instance is told)",
    ),
    Counter(
        "sessions_closed",
        Kind.EVENT,
        "sessions_closed",
        "",
        "offloaded sessions their instance closed, whose entries were then deleted",
    ),
    Counter(
        "sessions_deferred",
        Kind.EVENT,
        "sessions_deferred",
        "",
        "sessions kept in software past the tables' high-water mark until they"
        " proved long-lived (an established TCP session)",
    ),
    Counter(
        "software_only_hairpin",
        Kind.EVENT,
        "software_only.hairpin",
        "",
        "hairpin sessions, never offloaded (their packets come back in through the switch)",
    ),
    Counter(
        "software_only_table_full",
        Kind.EVENT,
        "software_only.table_full",
        "",
        "sessions kept in software because the switch's tables were full",
    ),
    Counter(
        "entries_rewritten",
        Kind.EVENT,
        "entries_rewritten",
        "",
        "ageing entries rewritten for a TCP phase's idle timeout",
    ),
    Counter(
        "install_failed",
        Kind.EVENT,
        "install_failed",
        "",
        "sessions whose INSERT failed other than for a full table (kept in software)",
    ),
    Counter(
        "delete_failed",
        Kind.EVENT,
        "delete_failed",
        "",
        "entries whose DELETE failed other than with NOT_FOUND",
    ),
    Counter(
        "idle_forwarded",
        Kind.EVENT,
        "idle_forwarded",
        "",
        "the switch's idle notifications passed on to the owning instance (`session idle`)",
    ),
    Counter(
        "sessions_recovered",
        Kind.EVENT,
        "sessions_recovered",
        "",
        "sessions found in the switch after a controller restart, claimed by their instance",
    ),
    Counter(
        "stale_entries_deleted",
        Kind.EVENT,
        "stale_entries_deleted",
        "",
        "entries found in the switch that no instance claimed, or without their other half",
    ),
    Counter(
        "instance_resyncs",
        Kind.EVENT,
        "instance_resyncs",
        "",
        "instance session streams begun (again): their sessions wait for the new snapshot",
    ),
    Counter(
        "sessions_handed_back",
        Kind.EVENT,
        "sessions_handed_back",
        "sessions_handed_back",
        "sessions the switch held that a restarted instance had lost, handed back"
        " (`session adopt`) and taken over",
    ),
    Counter(
        "handback_refused",
        Kind.EVENT,
        "handback_refused",
        "handback_refused",
        "sessions handed back that their instance did not take over (mapped anew,"
        " refused, or not announced in time): their entries are deleted",
    ),
    Counter(
        "instance_stream_reconnects",
        Kind.EVENT,
        "instance_stream_reconnects",
        "",
        "instance session streams that ended and were subscribed to again",
    ),
    Counter(
        "instance_command_errors",
        Kind.EVENT,
        "instance_command_errors",
        "",
        "`session` lines an instance refused or could not be sent",
    ),
)

BY_NAME = {c.name: c for c in VOCABULARY}


def native(counter: str, path: str) -> str:
    """The name `path` ("p4" or "swpath") keeps canonical `counter` under."""
    c = BY_NAME[counter]
    return c.p4 if path == "p4" else c.swpath


def p4_natives(c: Counter) -> tuple[str, ...]:
    """The native counters the P4 path keeps `c` in (summed)."""
    return tuple(c.p4.split("+"))


def refusal_reasons() -> frozenset[str]:
    """The reasons a new flow is refused, as metrics label them."""
    return frozenset(c.name for c in VOCABULARY if c.kind is Kind.REFUSED)


# Learn mode (issue 34; docs/swpath.md, "Learn mode"): what a slow-path
# instance counts of the learn tag it puts on translated packets for the
# switch. The switch's and the controller's side has no counter of these
# yet ("" in p4).
LEARN: tuple[Counter, ...] = (
    Counter(
        "learn_tagged_in2out",
        Kind.EVENT,
        "",
        "learn_tagged_in2out",
        "translated packets (source rewritten) sent to the switch with the learn tag",
    ),
    Counter(
        "learn_tagged_out2in",
        Kind.EVENT,
        "",
        "learn_tagged_out2in",
        "translated packets (destination rewritten) sent to the switch with the learn tag",
    ),
    Counter(
        "learn_not_learnable",
        Kind.EVENT,
        "",
        "learn_not_learnable",
        "translated packets sent without the learn tag: a hairpin, a fragment, a RST,"
        " a peer's, a kind with no lease, or not towards the switch",
    ),
    Counter(
        "learn_no_headroom",
        Kind.EVENT,
        "",
        "learn_no_headroom",
        "translated packets sent without the learn tag for want of mbuf headroom"
        " (the switch learns from the flow's next packet)",
    ),
    Counter(
        "learn_quiet_refused",
        Kind.REFUSED,
        "",
        "learn_quiet_refused",
        "new flows refused in the quiet period after a start without every session"
        " of the state file (the switch may hold the previous run's ports for the"
        " longest lease)",
    ),
)


def learn_markdown() -> str:
    """The learn mode table of docs/counters.md."""
    lines = ["| counter | slow-path instance | counts |", "|---|---|---|"]
    for c in LEARN:
        lines.append(f"| `{c.name}` | `{c.swpath}` | {c.help} |")
    return "\n".join(lines) + "\n"


def offload_markdown() -> str:
    """The offload table of docs/counters.md."""
    lines = ["| counter | controller | slow-path instance | counts |", "|---|---|---|---|"]
    for c in OFFLOAD:
        instance = f"`{c.swpath}`" if c.swpath else "-"
        lines.append(f"| `{c.name}` | `{c.p4}` | {instance} | {c.help} |")
    return "\n".join(lines) + "\n"


def markdown() -> str:
    """The table of docs/counters.md."""
    lines = [
        "| counter | kind | P4 path | swpath | counts |",
        "|---|---|---|---|---|",
    ]
    for c in VOCABULARY:
        lines.append(f"| `{c.name}` | {c.kind.value} | `{c.p4}` | `{c.swpath}` | {c.help} |")
    return "\n".join(lines) + "\n"
