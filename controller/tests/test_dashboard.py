"""docs/grafana/quicknat.json asks only for what the metrics are: each metric
and label it names is one quicknat/metrics.py can expose (the list is
generated from it), and every query keeps the `instance` label, so two NATs
of one path are never summed into one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

from quicknat.metrics import family_names

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "quicknat.json"
AGGREGATIONS = r"(?:sum|avg|max|min|count)"


def _exprs() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [t["expr"] for p in panels for t in p["targets"]]


def problems(expr: str) -> list[str]:
    """What is wrong with one query: a metric or label metrics.py does not
    expose, or an aggregation that drops `instance`."""
    known = family_names()
    metrics = re.findall(r"\b(quicknat_\w+)", expr)
    found = [] if metrics else ["no quicknat metric"]
    found += [f"unknown metric {m}" for m in metrics if m not in known]
    labels = set().union(*(known.get(m, set()) for m in metrics)) | {"instance", "job"}
    for clause in re.findall(r"(?:by|on) \(([^)]*)\)", expr):
        found += [
            f"unknown label {n}" for n in clause.replace(" ", "").split(",") if n not in labels
        ]
    found += [
        f"unknown label {n}" for n in re.findall(r"[{,]\s*(\w+)\s*=~?", expr) if n not in labels
    ]
    for clause in re.findall(AGGREGATIONS + r" by \(([^)]*)\)", expr):
        if "instance" not in clause.replace(" ", "").split(","):
            found.append("an aggregation drops instance")
    if re.search(r"\b" + AGGREGATIONS + r"\s*\(", expr):
        found.append("an aggregation without by (instance, ...)")
    return found


def test_every_query_names_real_metrics_and_keeps_instance() -> None:
    exprs = _exprs()
    assert len(exprs) >= 14
    assert {e: problems(e) for e in exprs if problems(e)} == {}


def test_the_check_finds_each_kind_of_mistake() -> None:
    assert problems('rate(quicknat_events_total{event="rx"}[1m])') == [
        "unknown metric quicknat_events_total",
        "unknown label event",
    ]
    assert problems("sum by (path) (rate(quicknat_new_flows_total[1m]))") == [
        "an aggregation drops instance"
    ]
    assert problems("sum(quicknat_sessions)") == ["an aggregation without by (instance, ...)"]
    assert problems("sum by (instance, reason) (quicknat_sessions)") == ["unknown label reason"]
