"""The Prometheus family of every counter of both data paths (docs/counters.md,
"Metrics"), beside the vocabulary of counters.py (which it extends: kept apart
only so that neither file passes 800 lines).

Every native counter of either path belongs to one family, named as
https://prometheus.io/docs/practices/naming/ asks: base units, `_total` on
counters, and a label only where its values are parts of one whole, so that a
sum over the label means something (all refused flows, all closed sessions).
Natives that map to the same family and label value are summed.
controller/tests/test_metric_families.py fails for a counter of either path
that has no family, and for a family name Prometheus' rules refuse.
"""

from __future__ import annotations

from dataclasses import dataclass

from quicknat.counters import LEARN, OFFLOAD, VOCABULARY, Counter, Kind, p4_natives


@dataclass(frozen=True, slots=True)
class Family:
    name: str  # as exposed: a counter's ends in _total
    label: str  # the label whose values partition it ("": none)
    help: str


FAMILIES: tuple[Family, ...] = (
    Family("quicknat_new_flows_total", "", "packets taken as the first of a flow"
           " (P4: every packet-in; swpath: sessions opened)"),
    Family("quicknat_flows_refused_total", "reason", "new flows refused: no session opened"),
    Family("quicknat_hairpin_flows_refused_total", "reason",
           "hairpinned flows whose second half was refused (P4)"),
    Family("quicknat_hairpin_flows_opened_total", "", "hairpinned flows opened (RFC 4787 REQ-9)"),
    Family("quicknat_packets_dropped_total", "reason", "packets dropped for what they are"),
    Family("quicknat_packets_received_total", "", "packets received from a device (swpath)"),
    Family("quicknat_packets_sent_total", "", "packets given to a device (swpath)"),
    Family("quicknat_packets_translated_total", "direction",
           "packets translated by the data path (swpath)"),
    Family("quicknat_worker_handoffs_total", "reason",
           "packets passed to another worker (swpath)"),
    Family("quicknat_worker_ring_packets_total", "",
           "packets taken from a worker's dispatch/handoff ring (swpath)"),
    Family("quicknat_peer_packets_sent_total", "",
           "packets passed to the slow-path instance that owns them (swpath, offload)"),
    Family("quicknat_peer_packets_received_total", "",
           "packets another slow-path instance passed to this one (swpath, offload)"),
    Family("quicknat_packet_out_messages_total", "", "P4Runtime packet-outs sent"),
    Family("quicknat_packet_ins_discarded_total", "reason",
           "packet-ins the controller could not use"),
    Family("quicknat_packet_ins_for_known_session_total", "outcome",
           "packet-ins of a session already installed or being installed"),
    Family("quicknat_packets_routed_by_controller_total", "kind",
           "punted packets the controller translated and sent itself"),
    Family("quicknat_tcp_segment_copies_total", "outcome",
           "copies of translated SYN/FIN/RST segments the controller tracks"),
    Family("quicknat_fragments_held_total", "",
           "fragments held until their datagram's first fragment came"),
    Family("quicknat_fragments_translated_total", "",
           "later IPv4 fragments translated (virtual reassembly, RFC 4787 REQ-14)"),
    Family("quicknat_packets_fragmented_total", "",
           "packets over the egress MTU without DF sent as fragments (swpath; RFC 4787 REQ-13)"),
    Family("quicknat_icmp_errors_translated_total", "",
           "ICMP errors about a session's packet translated (RFC 5508)"),
    Family("quicknat_icmp_errors_sent_total", "kind", "ICMP errors the NAT sent itself"),
    Family("quicknat_icmp_errors_not_sent_total", "reason",
           "ICMP errors the NAT did not send (RFC 1812 sec. 4.3.2.7, 4.3.2.8)"),
    Family("quicknat_icmp_echo_replies_total", "", "ICMP echo replies for the router (swpath)"),
    Family("quicknat_arp_packets_sent_total", "kind", "ARP packets sent (swpath)"),
    Family("quicknat_arp_packets_learned_total", "",
           "ARP packets passed to the neighbour table (swpath)"),
    Family("quicknat_arp_conflicts_total", "",
           "ARP packets from another host claiming one of the NAT's addresses (swpath;"
           " RFC 5227 sec. 2.4)"),
    Family("quicknat_packets_held_for_neighbor_total", "",
           "packets held while their next hop's MAC was asked for (swpath)"),
    Family("quicknat_sessions_closed_total", "reason", "sessions closed"),
    Family("quicknat_sessions_offloaded_total", "", "sessions whose entries the switch took"),
    Family("quicknat_sessions_reinstalled_total", "",
           "sessions installed again because the switch lacked them at a sync"),
    Family("quicknat_sessions_revived_total", "",
           "sessions a packet revived while their expiry DELETE was in flight"),
    Family("quicknat_sessions_recovered_total", "",
           "sessions found in the switch after a controller restart and kept"),
    Family("quicknat_sessions_adopted_total", "",
           "sessions taken over from the previous process at start (swpath --state)"),
    Family("quicknat_sessions_discarded_total", "",
           "sessions of the previous process not taken over (swpath --state)"),
    Family("quicknat_sessions_announced_total", "",
           "sessions the instances announced on their session streams (offload)"),
    Family("quicknat_sessions_deferred_total", "",
           "sessions kept in software past the tables' high-water mark (offload)"),
    Family("quicknat_sessions_software_only_total", "reason",
           "sessions never offloaded (offload)"),
    Family("quicknat_sessions_handed_back_total", "",
           "sessions the switch held that a restarted instance had lost, taken over"),
    Family("quicknat_handbacks_refused_total", "",
           "sessions handed back that their instance did not take over"),
    Family("quicknat_mappings_created_total", "", "endpoint-independent mappings created"),
    Family("quicknat_mappings_freed_total", "", "mappings freed with their last session"),
    Family("quicknat_switch_writes_total", "", "P4Runtime WriteRequests that installed sessions"),
    Family("quicknat_switch_write_failures_total", "operation",
           "session INSERTs, entry MODIFYs and DELETEs the switch refused"),
    Family("quicknat_entries_rewritten_total", "",
           "in2out entries modified (a TCP phase's timeout, a hairpin partner)"),
    Family("quicknat_stale_entries_deleted_total", "",
           "entries found in the switch that no session claimed, deleted"),
    Family("quicknat_idle_notifications_total", "", "entries the switch reported idle"),
    Family("quicknat_idle_notifications_forwarded_total", "",
           "idle notifications passed on to the owning instance (offload)"),
    Family("quicknat_offload_commands_unknown_total", "",
           "offload manager commands about a session already gone (swpath)"),
    Family("quicknat_instance_resyncs_total", "",
           "instance session streams begun (again) (offload)"),
    Family("quicknat_instance_stream_reconnects_total", "",
           "instance session streams subscribed to again (offload)"),
    Family("quicknat_instance_command_errors_total", "",
           "`session` lines an instance refused or could not be sent (offload)"),
    Family("quicknat_learn_fresh_notices_total", "",
           "pipelines pushed to a learning switch, told to the instances"),
    Family("quicknat_learn_tagged_packets_total", "direction",
           "translated packets sent to the switch with the learn tag (swpath)"),
    Family("quicknat_learn_untagged_packets_total", "reason",
           "translated packets sent without the learn tag (swpath)"),
    Family("quicknat_events_dropped_total", "sink",
           "mapping or session events lost: the worker's ring was full (swpath)"),
    Family("quicknat_reconfigurations_total", "", "run-time configuration changes applied"),
    Family("quicknat_standby_takeovers_total", "",
           "times this --standby controller became primary"),
    Family("quicknat_pipeline_pushes_total", "", "pipelines pushed to the switch"),
    Family("quicknat_switch_reconnects_total", "", "connections to the switch lost or refused"),
    Family("quicknat_stream_messages_unhandled_total", "kind",
           "stream messages from the switch the controller does not act on"),
)  # fmt: skip

FAMILY_BY_NAME = {f.name: f for f in FAMILIES}

# The vocabulary's events: canonical name -> (family, label value).
EVENT_METRICS: dict[str, tuple[str, str]] = {
    "new_flows": ("quicknat_new_flows_total", ""),
    "sessions_expired": ("quicknat_sessions_closed_total", "expired"),
    "sessions_deleted": ("quicknat_sessions_closed_total", "deleted"),
    "fragment_held": ("quicknat_fragments_held_total", ""),
    "icmp_error_suppressed": ("quicknat_icmp_errors_not_sent_total", "suppressed"),
    "sessions_announced": ("quicknat_sessions_announced_total", ""),
    "learn_fresh_told": ("quicknat_learn_fresh_notices_total", ""),
    "sessions_offloaded": ("quicknat_sessions_offloaded_total", ""),
    "sessions_closed": ("quicknat_sessions_closed_total", "instance_closed"),
    "sessions_deferred": ("quicknat_sessions_deferred_total", ""),
    "software_only_hairpin": ("quicknat_sessions_software_only_total", "hairpin"),
    "software_only_table_full": ("quicknat_sessions_software_only_total", "table_full"),
    "entries_rewritten": ("quicknat_entries_rewritten_total", ""),
    "install_failed": ("quicknat_switch_write_failures_total", "insert"),
    "delete_failed": ("quicknat_switch_write_failures_total", "delete"),
    "idle_forwarded": ("quicknat_idle_notifications_forwarded_total", ""),
    "sessions_recovered": ("quicknat_sessions_recovered_total", ""),
    "stale_entries_deleted": ("quicknat_stale_entries_deleted_total", ""),
    "instance_resyncs": ("quicknat_instance_resyncs_total", ""),
    "sessions_handed_back": ("quicknat_sessions_handed_back_total", ""),
    "handback_refused": ("quicknat_handbacks_refused_total", ""),
    "instance_stream_reconnects": ("quicknat_instance_stream_reconnects_total", ""),
    "instance_command_errors": ("quicknat_instance_command_errors_total", ""),
    "learn_tagged_in2out": ("quicknat_learn_tagged_packets_total", "in2out"),
    "learn_tagged_out2in": ("quicknat_learn_tagged_packets_total", "out2in"),
    "learn_not_learnable": ("quicknat_learn_untagged_packets_total", "not_learnable"),
    "learn_no_headroom": ("quicknat_learn_untagged_packets_total", "no_headroom"),
}

_DROPPED = "quicknat_packets_dropped_total"
_DISCARDED = "quicknat_packet_ins_discarded_total"
_ROUTED = "quicknat_packets_routed_by_controller_total"

# Counters only the controller keeps (docs/controller.md), and its prefixes
# whose last part is the label value.
P4_ONLY: dict[str, tuple[str, str]] = {
    "packet_out": ("quicknat_packet_out_messages_total", ""),
    "packet_in.unknown_port": (_DISCARDED, "unknown_port"),
    "packet_in.malformed": (_DISCARDED, "malformed"),
    "packet_in.lost_on_disconnect": (_DISCARDED, "lost_on_disconnect"),
    "packet_in.install_in_flight": ("quicknat_packet_ins_for_known_session_total", "held"),
    "packet_in.reinjected": ("quicknat_packet_ins_for_known_session_total", "reinjected"),
    "icmp_gen.malformed": ("quicknat_icmp_errors_not_sent_total", "malformed"),
    "icmp_gen.no_address": ("quicknat_icmp_errors_not_sent_total", "no_address"),
    "icmp_gen.rate_limited": ("quicknat_icmp_errors_not_sent_total", "rate_limited"),
    "idle_timeouts": ("quicknat_idle_notifications_total", ""),
    "reconfigured": ("quicknat_reconfigurations_total", ""),
    "takeovers": ("quicknat_standby_takeovers_total", ""),
    "pipeline_pushes": ("quicknat_pipeline_pushes_total", ""),
    "reconnects": ("quicknat_switch_reconnects_total", ""),
    "stream_errors": ("quicknat_stream_messages_unhandled_total", "error"),
    "stream_other": ("quicknat_stream_messages_unhandled_total", "other"),
    "install_writes": ("quicknat_switch_writes_total", ""),
    "rewrite_failed": ("quicknat_switch_write_failures_total", "modify"),
    "sessions_revived": ("quicknat_sessions_revived_total", ""),
    "sessions_reinstalled": ("quicknat_sessions_reinstalled_total", ""),
    "hairpin.opened": ("quicknat_hairpin_flows_opened_total", ""),
    "tcp_rst.routed": (_ROUTED, "tcp_rst"),
    "tcp_segment.routed": (_ROUTED, "tcp_segment"),
    "ipv4_options.translated": (_ROUTED, "ipv4_options"),
    "ipv4_options.hairpin": (_ROUTED, "ipv4_options_hairpin"),
    "tcp_state.segments": ("quicknat_tcp_segment_copies_total", "tracked"),
    "tcp_state.no_session": ("quicknat_tcp_segment_copies_total", "no_session"),
    "tcp_segment.no_session": (_DROPPED, "tcp_segment_no_session"),
    "fragment.translated": ("quicknat_fragments_translated_total", ""),
    "fragment.timed_out": (_DROPPED, "fragment_timeout"),
    "fragment.no_session": (_DROPPED, "fragment_no_session"),
    "fragment.hairpin": (_DROPPED, "fragment_hairpin"),
    "fragment.malformed": (_DROPPED, "fragment_malformed"),
    "icmp_error.translated": ("quicknat_icmp_errors_translated_total", ""),
    "icmp_error.malformed": (_DROPPED, "icmp_error_malformed"),
    "refused.unsupported": ("quicknat_flows_refused_total", "unsupported"),
    "refused.no_rule": ("quicknat_flows_refused_total", "no_rule"),  # the switch: drop.no_rule
}
P4_PREFIXES: dict[str, str] = {
    "refused.hairpin.": "quicknat_hairpin_flows_refused_total",
    "packet_in.ignored.": _DISCARDED,  # the label: ignored_<punt reason>
}

# Counters only swpath keeps (swpath/src/core/counters.h).
SWPATH_ONLY: dict[str, tuple[str, str]] = {
    "rx": ("quicknat_packets_received_total", ""),
    "tx": ("quicknat_packets_sent_total", ""),
    "dispatched": ("quicknat_worker_handoffs_total", "dispatch"),
    "handoff": ("quicknat_worker_handoffs_total", "session_owner"),
    "ring_rx": ("quicknat_worker_ring_packets_total", ""),
    "in2out": ("quicknat_packets_translated_total", "in2out"),
    "out2in": ("quicknat_packets_translated_total", "out2in"),
    "hairpin": ("quicknat_packets_translated_total", "hairpin"),
    "peer_handoff": ("quicknat_peer_packets_sent_total", ""),
    "peer_received": ("quicknat_peer_packets_received_total", ""),
    "icmp_error_in2out": ("quicknat_icmp_errors_translated_total", ""),
    "icmp_error_out2in": ("quicknat_icmp_errors_translated_total", ""),
    "sessions_adopted": ("quicknat_sessions_adopted_total", ""),
    "sessions_discarded": ("quicknat_sessions_discarded_total", ""),
    "offload_unknown": ("quicknat_offload_commands_unknown_total", ""),
    "mappings_created": ("quicknat_mappings_created_total", ""),
    "mappings_freed": ("quicknat_mappings_freed_total", ""),
    "events_dropped": ("quicknat_events_dropped_total", "log"),
    "stream_dropped": ("quicknat_events_dropped_total", "stream"),
    "arp_replies": ("quicknat_arp_packets_sent_total", "reply"),
    "arp_requests": ("quicknat_arp_packets_sent_total", "request"),
    "arp_announcements": ("quicknat_arp_packets_sent_total", "announcement"),
    "arp_learned": ("quicknat_arp_packets_learned_total", ""),
    "arp_conflicts": ("quicknat_arp_conflicts_total", ""),
    "neighbor_held": ("quicknat_packets_held_for_neighbor_total", ""),
    "icmp_echo_replies": ("quicknat_icmp_echo_replies_total", ""),
    "icmp_error_rate_limited": ("quicknat_icmp_errors_not_sent_total", "rate_limited"),
    "frag_translated": ("quicknat_fragments_translated_total", ""),
    "fragmented": ("quicknat_packets_fragmented_total", ""),
    "drop_tx_full": (_DROPPED, "tx_full"),
    "drop_ring_full": (_DROPPED, "ring_full"),
    "drop_l2_other": (_DROPPED, "l2_other"),
    "drop_arp": (_DROPPED, "arp"),
    "drop_frag_timeout": (_DROPPED, "fragment_timeout"),
    "drop_fragment": (_DROPPED, "fragment_untranslatable"),
    "drop_multiseg": (_DROPPED, "multiseg"),
    "drop_local": (_DROPPED, "local"),
    "drop_no_route": (_DROPPED, "no_route"),
    "drop_no_neighbor": (_DROPPED, "no_neighbor"),
}


def _vocabulary_metric(c: Counter) -> tuple[str, str]:
    """The family and label value of a canonical counter, from its kind."""
    if c.kind is Kind.REFUSED:
        return "quicknat_flows_refused_total", c.name.removesuffix("_refused")
    if c.kind is Kind.DROPPED:
        return _DROPPED, c.name.removesuffix("_dropped")
    if c.kind is Kind.SENT:
        return "quicknat_icmp_errors_sent_total", c.name.removeprefix("icmp_").removesuffix("_sent")
    return EVENT_METRICS[c.name]


def _metric_table(path: str) -> dict[str, tuple[str, str]]:
    """Native counter of `path` ("p4": the controller's; "swpath") -> (family,
    label value). The switch's own drop.* counters are not the controller's
    (the PTF harness reads them), so they have none here."""
    table: dict[str, tuple[str, str]] = {}
    # refusals first: swpath's drop_unsolicited is both a refusal and the
    # P4 switch's no_mapping drop; as a metric it is the refusal
    ordered = sorted((*VOCABULARY, *OFFLOAD, *LEARN), key=lambda c: c.kind is not Kind.REFUSED)
    for c in ordered:
        natives = p4_natives(c) if path == "p4" else (c.swpath,)
        for name in natives:
            if name and not name.startswith("drop.") and name not in table:
                table[name] = _vocabulary_metric(c)
    table.update(P4_ONLY if path == "p4" else SWPATH_ONLY)
    return table


METRIC_TABLES = {path: _metric_table(path) for path in ("p4", "swpath")}


def metric_of(name: str) -> tuple[str, str] | None:
    """The family and label value of a native counter of either path (None:
    none; a unit test keeps every counter of both paths in one)."""
    for table in METRIC_TABLES.values():
        if name in table:
            return table[name]
    for prefix, family in P4_PREFIXES.items():
        if name.startswith(prefix):
            value = name.removeprefix(prefix)
            return family, ("ignored_" + value if prefix == "packet_in.ignored." else value)
    return None


def families_markdown() -> str:
    """The metric families table of docs/counters.md."""
    lines = ["| family | label | counts | P4 path | swpath |", "|---|---|---|---|---|"]
    for f in FAMILIES:
        cells = []
        for path in ("p4", "swpath"):
            names = [
                f"`{n}`" + (f" ({v})" if v else "")
                for n, (fam, v) in sorted(METRIC_TABLES[path].items())
                if fam == f.name
            ]
            if path == "p4":
                names += [f"`{p}*`" for p, fam in P4_PREFIXES.items() if fam == f.name]
            cells.append(", ".join(names) or "-")
        label = f"`{f.label}`" if f.label else "-"
        lines.append(f"| `{f.name}` | {label} | {f.help} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"
