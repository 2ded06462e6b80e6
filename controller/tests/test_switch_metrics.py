"""quicknat-swx's telemetry as the exporter's quicknat_switch_* families
(switch_metrics.py): each count of the switch's replies under its family and
labels, and a switch that does not answer as quicknat_switch_up 0 alone. The
exporter against a running quicknat-swx: swpath/swx/tests/test_exporter.py."""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry
from quicknat.metrics import family_names
from quicknat.switch_metrics import SWITCH_FAMILIES, SwitchCollector

# as quicknat-swx answers (p4rt/telemetry.cc), two ports and a learner
PORTS = {
    "0": {"rx_packets": 3, "tx_packets": 4, "tx_dropped": 0, "truncated": 0},
    "1": {"rx_packets": 100, "tx_packets": 90, "tx_dropped": 7, "truncated": 2},
    "dropped": {"by_program": 5, "no_device": 1},
}
TABLES = {
    "core_nat_nat_in2out": {"hits": 60, "misses": 40},
    "core_nat_nat_in2out_learned": {
        "hits": 30,
        "misses": 10,
        "learned": 9,
        "learn_failed": 1,
        "rearmed": 2,
    },
    "fastpath": {"sent": 80, "handed_on": 20},
}


def scrape(read: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SwitchCollector(read))
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.name.endswith("_created")
    }


def test_each_count_of_the_switch_is_a_sample_of_its_family() -> None:
    got = scrape(lambda: (PORTS, TABLES))
    ports = "quicknat_switch_port_packets_total"
    drops = "quicknat_switch_port_drops_total"
    out = "quicknat_switch_output_drops_total"
    lookups = "quicknat_switch_table_lookups_total"
    learner = "quicknat_switch_learner_events_total"
    learned = "core_nat_nat_in2out_learned"
    assert got == {
        ("quicknat_switch_up", ()): 1.0,
        (ports, (("direction", "rx"), ("port", "0"))): 3.0,
        (ports, (("direction", "tx"), ("port", "0"))): 4.0,
        (ports, (("direction", "rx"), ("port", "1"))): 100.0,
        (ports, (("direction", "tx"), ("port", "1"))): 90.0,
        (drops, (("port", "0"), ("reason", "tx_full"))): 0.0,
        (drops, (("port", "0"), ("reason", "truncated"))): 0.0,
        (drops, (("port", "1"), ("reason", "tx_full"))): 7.0,
        (drops, (("port", "1"), ("reason", "truncated"))): 2.0,
        (out, (("reason", "program"),)): 5.0,
        (out, (("reason", "no_device"),)): 1.0,
        (lookups, (("result", "hit"), ("table", "core_nat_nat_in2out"))): 60.0,
        (lookups, (("result", "miss"), ("table", "core_nat_nat_in2out"))): 40.0,
        (lookups, (("result", "hit"), ("table", learned))): 30.0,
        (lookups, (("result", "miss"), ("table", learned))): 10.0,
        (learner, (("event", "learned"), ("table", learned))): 9.0,
        (learner, (("event", "learn_failed"), ("table", learned))): 1.0,
        (learner, (("event", "rearmed"), ("table", learned))): 2.0,
        ("quicknat_switch_fastpath_packets_total", (("result", "sent"),)): 80.0,
        ("quicknat_switch_fastpath_packets_total", (("result", "handed_on"),)): 20.0,
    }


def test_a_switch_that_does_not_answer_is_down_and_nothing_else() -> None:
    def gone() -> Any:
        raise ConnectionRefusedError("no telemetry socket")

    assert scrape(gone) == {("quicknat_switch_up", ()): 0.0}


def test_the_families_are_the_exporters_and_named_as_prometheus_asks() -> None:
    names = family_names()
    for name, (_, labels) in SWITCH_FAMILIES.items():
        assert names[name] == set(labels)
        assert name.startswith("quicknat_switch_")
        assert name.endswith("_total") == (name != "quicknat_switch_up")
