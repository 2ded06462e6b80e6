"""The controller's counters: every packet-in, refusal, write and drop is counted."""

from __future__ import annotations

from collections import Counter


class Stats(Counter[str]):
    """Named event counts, e.g. ``packet_in``, ``refused.pool_exhausted``."""

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.items()))
