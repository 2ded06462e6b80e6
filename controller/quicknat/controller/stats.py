"""The controller's counters: every packet-in, refusal, write and drop is counted.

Every counter the controller can count exists from start-up at zero
(`Stats.seeded`), so a rate computed by a monitoring system starts from its
first scrape instead of from the counter's first event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from quicknat.icmp_gen import Kind

# The counters of the service and of the packet-in handlers both modes have
# (punts.Punts); the writer's and each mode's own are theirs (writer.COUNTERS,
# Mode.counter_names).
COMMON = (
    "packet_in",
    "packet_in.unknown_port",
    "packet_out",
    "icmp_gen.malformed",
    "icmp_gen.no_address",
    "icmp_gen.rate_limited",
    "icmp_gen.suppressed",
    *(f"icmp_gen.sent.{kind.name.lower()}" for kind in Kind),
    "idle_timeouts",
    "reconfigured",
    "takeovers",
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
