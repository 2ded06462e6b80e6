"""bench/ab_compare.py, the verdicts issue #31's before/after tables rest on:
a figure that moved the same way in every pair beyond the same-side spread
is better or worse by its sense; one whose pairs straddle 1, or that moved
less than the code's own spread, is unchanged within noise."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("ab_compare", REPO / "bench" / "ab_compare.py")
assert spec is not None and spec.loader is not None
ab = importlib.util.module_from_spec(spec)
sys.modules["ab_compare"] = ab
spec.loader.exec_module(ab)


def write(folder: Path, side: str, values: list[dict[str, Any]]) -> None:
    for n, run in enumerate(values, 1):
        (folder / f"{side}-{n}-bmv2.json").write_text(json.dumps(run))


def run(writes: float, p50: float, memory: float) -> dict[str, Any]:
    return {
        "raw_entries_per_s": writes,
        "latency": {"p50_ms": p50},
        "memory_bytes_per_session": memory,
    }


def test_verdicts_follow_the_pairs_and_the_spread(tmp_path: Path) -> None:
    write(tmp_path, "a", [run(100, 1.0, 1000), run(110, 1.1, 1000), run(105, 1.0, 1000)])
    write(tmp_path, "b", [run(60, 1.05, 1000), run(66, 0.95, 1000), run(63, 1.1, 1000)])
    rows = {r["figure"]: r for r in ab.compare(tmp_path, "a", "b", "bmv2")}
    writes = rows["raw P4Runtime writes, entries/s"]
    assert writes["verdict"] == "after worse"  # lower in every pair, beyond 1.1x spread
    assert writes["pair_ratios"] == [0.6, 0.6, 0.6]
    assert rows["first-packet latency p50, ms"]["verdict"] == "unchanged within noise"
    assert rows["controller memory per session, bytes"]["verdict"] == "unchanged within noise"
    # the other way round, the same figure is better
    rows = {r["figure"]: r for r in ab.compare(tmp_path, "b", "a", "bmv2")}
    assert rows["raw P4Runtime writes, entries/s"]["verdict"] == "after better"
    # a figure lower is better: a latency up in every pair beyond the spread
    write(tmp_path, "c", [run(100, 2.0, 1000), run(110, 2.2, 1000), run(105, 2.1, 1000)])
    rows = {r["figure"]: r for r in ab.compare(tmp_path, "a", "c", "bmv2")}
    assert rows["first-packet latency p50, ms"]["verdict"] == "after worse"
    assert rows["raw P4Runtime writes, entries/s"]["verdict"] == "unchanged within noise"
