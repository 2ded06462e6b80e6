"""quicknat-swx's own counts as Prometheus metrics: `quicknat exporter --swx
PREFIX` reads the switch's DPDK telemetry (`/quicknat_swx/ports` and
`/quicknat_swx/tables`, dpdk_telemetry.py) at each scrape, beside swpath's
counters, so the switch does no work for it. The P4 program's own counters
(drops by reason, learned sessions) are P4Runtime counters the controller
reads; these are what only the target knows: its ports, its tables' lookups,
its learners' adds, the fast path's hand-offs, and the packets it dropped on
the way out. Summed over the pipeline threads, as the switch reports them.

- `quicknat_switch_up`: 1 when the switch's telemetry answered (0, and no
  other sample, when it did not)
- `quicknat_switch_port_packets_total{port,direction}` (rx, tx)
- `quicknat_switch_port_drops_total{port,reason}`: `tx_full` (the device
  would not take it), `truncated` (the input guard: a frame shorter than
  its IPv4 length)
- `quicknat_switch_output_drops_total{reason}`: `program` (the program
  dropped it), `no_device` (sent to a port number no device has)
- `quicknat_switch_table_lookups_total{table,result}` (hit, miss)
- `quicknat_switch_learner_events_total{table,event}` (learned,
  learn_failed, rearmed)
- `quicknat_switch_fastpath_packets_total{result}` (sent, handed_on)

(No I/O here but the reader the exporter passes in; unit-tested with the
switch's replies and live against quicknat-swx.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

#: family -> (help, labels): what switch_families can expose
SWITCH_FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "quicknat_switch_up": ("1 when quicknat-swx's telemetry answered the exporter", ()),
    "quicknat_switch_port_packets_total": (
        "packets a switch port received or sent",
        ("port", "direction"),
    ),
    "quicknat_switch_port_drops_total": (
        "frames a switch port dropped: its device's queue full, or shorter than their IPv4 length",
        ("port", "reason"),
    ),
    "quicknat_switch_output_drops_total": (
        "packets the switch dropped on the way out: by the program, or to a port with no device",
        ("reason",),
    ),
    "quicknat_switch_table_lookups_total": (
        "lookups in a table of the switch's program, by result",
        ("table", "result"),
    ),
    "quicknat_switch_learner_events_total": (
        "entries a learner table of the switch added, failed to add (bucket full), or rearmed",
        ("table", "event"),
    ),
    "quicknat_switch_fastpath_packets_total": (
        "packets the program's fast path sent, or handed on to the full program",
        ("result",),
    ),
}
# telemetry key -> label value
_PORT_DROPS = {"tx_dropped": "tx_full", "truncated": "truncated"}
_OUTPUT_DROPS = {"by_program": "program", "no_device": "no_device"}
_LEARNER_EVENTS = ("learned", "learn_failed", "rearmed")


def _counter(name: str) -> CounterMetricFamily:
    help_text, labels = SWITCH_FAMILIES[name]
    return CounterMetricFamily(name.removesuffix("_total"), help_text, labels=list(labels))


def switch_families(ports: dict[str, Any], tables: dict[str, Any]) -> list[Metric]:
    """The switch's replies to /quicknat_swx/ports and /quicknat_swx/tables
    as metric families (quicknat_switch_up included, 1)."""
    up_help, _ = SWITCH_FAMILIES["quicknat_switch_up"]
    up = GaugeMetricFamily("quicknat_switch_up", up_help, value=1)
    packets = _counter("quicknat_switch_port_packets_total")
    port_drops = _counter("quicknat_switch_port_drops_total")
    output = _counter("quicknat_switch_output_drops_total")
    for port, counts in sorted(ports.items()):
        if port == "dropped":
            for key, reason in _OUTPUT_DROPS.items():
                output.add_metric([reason], float(counts.get(key, 0)))
            continue
        packets.add_metric([port, "rx"], float(counts.get("rx_packets", 0)))
        packets.add_metric([port, "tx"], float(counts.get("tx_packets", 0)))
        for key, reason in _PORT_DROPS.items():
            port_drops.add_metric([port, reason], float(counts.get(key, 0)))
    lookups = _counter("quicknat_switch_table_lookups_total")
    learners = _counter("quicknat_switch_learner_events_total")
    fastpath = _counter("quicknat_switch_fastpath_packets_total")
    for table, counts in sorted(tables.items()):
        if table == "fastpath":
            for result in ("sent", "handed_on"):
                fastpath.add_metric([result], float(counts.get(result, 0)))
            continue
        lookups.add_metric([table, "hit"], float(counts.get("hits", 0)))
        lookups.add_metric([table, "miss"], float(counts.get("misses", 0)))
        if "learned" in counts:
            for event in _LEARNER_EVENTS:
                learners.add_metric([table, event], float(counts.get(event, 0)))
    return [up, packets, port_drops, output, lookups, learners, fastpath]


class SwitchCollector(Collector):
    """At each scrape, `read()`'s (ports, tables), or quicknat_switch_up 0
    alone when it raises OSError or ValueError (the switch is not running,
    or not quicknat-swx)."""

    def __init__(self, read: Callable[[], tuple[dict[str, Any], dict[str, Any]]]) -> None:
        self.read = read

    def collect(self) -> Iterator[Metric]:
        try:
            ports, tables = self.read()
        except (OSError, ValueError):
            help_text, _ = SWITCH_FAMILIES["quicknat_switch_up"]
            yield GaugeMetricFamily("quicknat_switch_up", help_text, value=0)
            return
        yield from switch_families(ports, tables)
