"""Every counter of both paths has a Prometheus family (counter_families.py),
and every family is named as https://prometheus.io/docs/practices/naming/
asks: a new counter cannot fall into no family, nor a family into a bad name."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client.validation import (
    _is_valid_legacy_labelname,
    _is_valid_legacy_metric_name,
)
from quicknat.controller.modes import counter_names
from quicknat.counter_families import (
    EVENT_METRICS,
    FAMILIES,
    FAMILY_BY_NAME,
    METRIC_TABLES,
    P4_PREFIXES,
    families_markdown,
    metric_of,
)
from quicknat.counters import LEARN, OFFLOAD, VOCABULARY, Kind
from quicknat.metrics import family_names

ROOT = Path(__file__).resolve().parents[2]


def swpath_counters() -> list[str]:
    counters_h = ROOT / "swpath" / "src" / "core" / "counters.h"
    return re.findall(r"X\((\w+),", counters_h.read_text())


def naming_problems(name: str, label: str) -> list[str]:
    problems = []
    if not _is_valid_legacy_metric_name(name):
        problems.append("not a valid metric name")
    if not re.fullmatch(r"quicknat_[a-z0-9]+(_[a-z0-9]+)*_total", name):
        problems.append("not quicknat_..._total in lower snake case")
    if name.count("_total") != 1:
        problems.append("_total inside the name")
    if label:
        if not _is_valid_legacy_labelname(label):  # the names Prometheus < 3 reads too
            problems.append("not a valid label name")
        if label in ("path", "le", "instance", "job") or label in name:
            problems.append(f"label {label} is reserved or repeats the name")
    return problems


def test_every_counter_of_either_path_has_a_family() -> None:
    controller = [*counter_names(), "packet_in.ignored.reason_9"]  # one made at run time
    missing = [n for n in controller if metric_of(n) is None]
    missing += [n for n in swpath_counters() if n not in METRIC_TABLES["swpath"]]
    assert missing == []
    for table in METRIC_TABLES.values():
        for name, (family, label) in table.items():
            assert family in FAMILY_BY_NAME, (name, family)
            assert bool(label) == bool(FAMILY_BY_NAME[family].label), (name, family, label)


def test_every_canonical_counter_has_a_family_on_each_path_that_keeps_it() -> None:
    for c in (*VOCABULARY, *OFFLOAD, *LEARN):
        if c.kind is Kind.EVENT:
            assert c.name in EVENT_METRICS, c.name
        if c.swpath:
            assert c.swpath in METRIC_TABLES["swpath"], c.name


def test_every_family_is_named_by_the_rules_and_used() -> None:
    bad = {f.name: naming_problems(f.name, f.label) for f in FAMILIES}
    assert {name: problems for name, problems in bad.items() if problems} == {}
    used = {family for t in METRIC_TABLES.values() for family, _ in t.values()}
    assert {f.name for f in FAMILIES} == used | set(P4_PREFIXES.values())
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)
    for name in family_names():
        assert _is_valid_legacy_metric_name(name), name


def test_the_naming_check_refuses_bad_names() -> None:
    assert naming_problems("quicknat_events_total", "") == []
    assert naming_problems("quicknat_Drops_total", "") == [
        "not quicknat_..._total in lower snake case"
    ]
    assert "_total inside the name" in naming_problems("quicknat_total_drops_total", "")
    reserved = ["label path is reserved or repeats the name"]
    assert naming_problems("quicknat_drops_total", "path") == reserved
    assert naming_problems("quicknat_drops_total", "bad-label") == ["not a valid label name"]


def test_docs_counters_md_has_the_families_table() -> None:
    doc = (ROOT / "docs" / "counters.md").read_text()
    assert families_markdown() in doc, "docs/counters.md: regenerate its Metrics table"
