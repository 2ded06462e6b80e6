"""docs/grafana/quicknat.json asks only for what the metrics are: each metric
and label it names exists (quicknat/metrics.py), and each event it picks is a
counter one of the paths keeps."""

from __future__ import annotations

import json
import re
from pathlib import Path

from quicknat.controller.modes import counter_names
from quicknat.metrics import families

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "quicknat.json"


def _families() -> dict[str, set[str]]:
    """Metric name (as exposed) -> its labels, from a stats answer with one
    counter of each family."""
    stats = {
        "sessions": 1,
        "up": True,
        "connected": True,
        "pools": [{"name": "p", "ports": 1, "in_use": {"tcp": 0, "udp": 1, "icmp": 0}}],
        "counters": {
            "refused.no_rule": 1,
            "drop_martian": 1,
            "frag_held": 1,
            "icmp_gen.sent.prohibited": 1,
            "packet_in": 1,
        },
    }
    names: dict[str, set[str]] = {}
    for family in families(stats, "p4"):
        name = family.name + ("_total" if family.type == "counter" else "")
        names[name] = {label for s in family.samples for label in s.labels}
    return names


def _swpath_counters() -> set[str]:
    counters_h = ROOT / "swpath" / "src" / "core" / "counters.h"
    return set(re.findall(r"X\((\w+),", counters_h.read_text()))


def test_every_expression_names_real_metrics_labels_and_events() -> None:
    known = _families()
    counters = set(counter_names()) | _swpath_counters()
    exprs = [t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p["targets"]]
    assert len(exprs) >= 10
    for expr in exprs:
        metrics = re.findall(r"\b(quicknat_\w+)", expr)
        for metric in metrics:
            assert metric in known, (metric, expr)
        labels = set().union(*(known[m] for m in metrics))
        for clause in re.findall(r"(?:by|on) \(([^)]*)\)", expr):
            for name in clause.replace(" ", "").split(","):
                assert name in labels, (name, expr)
        for pattern in re.findall(r'event=~?"([^"]+)"', expr):
            for event in pattern.split("|"):
                assert event in counters, (event, expr)
