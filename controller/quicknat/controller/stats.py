"""The controller's counters: every packet-in, refusal, write and drop is counted.

Every counter the controller can count exists from start-up at zero
(`Stats.seeded`), so a rate computed by a monitoring system starts from its
first scrape instead of from the counter's first event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

# Counters with a fixed name; the per-reason families are added by the service
# from its enums (refusals, ICMP errors sent, fragment outcomes, punt reasons).
FIXED = (
    "packet_in",
    "sessions_deleted",
    "reconfigured",
    "takeovers",
    "packet_in.malformed",
    "packet_in.unknown_port",
    "packet_in.reinjected",
    "packet_in.install_in_flight",
    "packet_in.lost_on_disconnect",
    "packet_out",
    "hairpin.opened",
    "icmp_error.translated",
    "icmp_error.no_session",
    "icmp_error.malformed",
    "icmp_gen.malformed",
    "icmp_gen.no_address",
    "icmp_gen.rate_limited",
    "icmp_gen.suppressed",
    "fragment.translated",
    "fragment.no_session",
    "fragment.hairpin",
    "fragment.malformed",
    "fragment.timed_out",
    "tcp_rst.routed",
    "tcp_state.segments",
    "tcp_state.no_session",
    "install_writes",
    "install_failed",
    "sessions_installed",
    "entries_rewritten",
    "rewrite_failed",
    "idle_timeouts",
    "sessions_expired",
    "sessions_revived",
    "delete_failed",
    "sessions_recovered",
    "sessions_reinstalled",
    "stale_entries_deleted",
    "pipeline_pushes",
    "reconnects",
    "stream_errors",
    "stream_other",
)


class Stats(Counter[str]):
    """Named event counts, e.g. ``packet_in``, ``refused.pool_exhausted``."""

    @classmethod
    def seeded(cls, names: Iterable[str]) -> Stats:
        stats = cls()
        for name in names:
            stats[name] = 0
        return stats

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.items()))
