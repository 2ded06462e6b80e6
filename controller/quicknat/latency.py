"""Latency histograms the controller keeps (and swpath's `stats` gives in the
same form), exposed by metrics.py as Prometheus histograms.

The buckets span what docs/benchmarks.md measures: a first packet's round trip
through the controller is 1.7-2.2 ms on BMv2 (p50 / p99), a write of a few
entries well under that, and a loaded switch's backlog takes up to seconds;
25 us is below the fastest packet-in to packet-out the controller can do.
"""

from __future__ import annotations

from bisect import bisect_left

# Upper bounds (s) of the buckets, as Prometheus' `le`; +Inf is implied.
BOUNDS: tuple[float, ...] = (
    25e-6, 50e-6, 100e-6, 250e-6, 500e-6,
    1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
    1.0, 2.5, 5.0,
)  # fmt: skip


class Histogram:
    """Counts of observations per bucket and their sum: a few list updates
    per observation (observed per new flow, not per packet)."""

    def __init__(self, bounds: tuple[float, ...] = BOUNDS) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last: over every bound
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        # le is inclusive: a value equal to a bound is in that bound's bucket
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.sum += seconds

    def as_dict(self) -> dict[str, object]:
        """The `stats` form: {"bounds": [s...], "counts": [n... one more], "sum": s}."""
        return {"bounds": list(self.bounds), "counts": list(self.counts), "sum": self.sum}


class InstallLatency:
    """The writer's two histograms, and when each session waiting for its
    INSERT was queued (by id; an entry lives only until the write's answer,
    so it adds nothing to a session's steady-state memory)."""

    def __init__(self) -> None:
        self.first_packet = Histogram()
        self.install = Histogram()
        self._queued_at: dict[int, float] = {}

    def queued(self, session_id: int, at: float) -> None:
        self._queued_at.setdefault(session_id, at)  # a revived session keeps its first

    def abandoned(self, session_id: int) -> None:
        """No INSERT will answer for it (forgotten, refused, connection lost)."""
        self._queued_at.pop(session_id, None)

    def installed(self, session_id: int, now: float) -> float | None:
        """Its INSERT is acknowledged: observed; when it was queued (None: not
        queued through the writer, e.g. revived by a DELETE's answer)."""
        at = self._queued_at.pop(session_id, None)
        if at is not None:
            self.install.observe(now - at)
        return at

    def as_dict(self) -> dict[str, object]:
        return {"first_packet": self.first_packet.as_dict(), "install": self.install.as_dict()}
