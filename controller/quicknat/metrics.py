"""Prometheus metrics of either data path, from the counters it already keeps.

The controller serves its own (`quicknat controller --metrics-addr`); swpath's
are served by `quicknat exporter`, which asks its control socket at each
scrape, so the data path does no work for them. Both use one vocabulary: each
counter of either path belongs to one named family (counter_families.py,
docs/counters.md "Metrics"), the same concept under the same name on both
paths, told apart by the `path` label.

Gauges:
- `quicknat_sessions`, `quicknat_sessions_installed` (sessions whose entries
  are in the switch; swpath: its sessions), `quicknat_mappings` (swpath)
- `quicknat_connected` (controller: primary on its switch), `quicknat_up`
  (exporter: data path reachable)
- `quicknat_pool_ports{pool}` (per protocol), `quicknat_pool_ports_in_use{pool,protocol}`
- `quicknat_build_info{version}`: 1
- `quicknat_unmapped_counters`: counters of this path that no family takes
  (0 unless a data path is newer than this exporter)

Counters: `quicknat_stream_messages_dropped_total` (the controller's P4Runtime
stream queue was full), and the families of counter_families.FAMILIES, e.g.
`quicknat_flows_refused_total{reason}`, `quicknat_packets_dropped_total{reason}`,
`quicknat_sessions_closed_total{reason}`, `quicknat_switch_writes_total`.

Histograms: the controller's `quicknat_first_packet_duration_seconds`
(packet-in received to its packet-out sent, per new flow) and
`quicknat_install_duration_seconds` (a session queued for install to its
INSERT acknowledged); swpath's `quicknat_session_open_duration_seconds` (a
packet's miss to its session opened, timed by the TSC per worker).

Process: `process_*` of the serving process (prometheus_client's
ProcessCollector); the exporter adds swpath's as `quicknat_swpath_process_*`
(the pid its `stats` gives).

The switch: with `--swx PREFIX` the exporter adds quicknat-swx's own counts,
`quicknat_switch_*` (switch_metrics.py).

Every counter exists from start-up at zero on both paths, so rates work from
the first scrape.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector, CollectorRegistry

from quicknat.counter_families import FAMILIES, metric_of
from quicknat.switch_metrics import SWITCH_FAMILIES, SwitchCollector

# stats "histograms" key -> (family, help)
HISTOGRAMS: dict[str, tuple[str, str]] = {
    "first_packet": (
        "quicknat_first_packet_duration_seconds",
        "a new flow's first packet: packet-in received to its packet-out sent",
    ),
    "install": (
        "quicknat_install_duration_seconds",
        "a session queued for install to its INSERT acknowledged by the switch",
    ),
    "session_open": (
        "quicknat_session_open_duration_seconds",
        "swpath's slow path: a packet's miss to its new session opened (TSC)",
    ),
}

# stats key -> (gauge, help), read as numbers
GAUGES: dict[str, tuple[str, str]] = {
    "sessions": ("quicknat_sessions", "sessions open"),
    "installed": ("quicknat_sessions_installed", "sessions whose entries are in the switch"),
    "mappings": ("quicknat_mappings", "endpoint-independent mappings held"),
    "neighbors": ("quicknat_neighbors", "entries of swpath's neighbour table (ARP)"),
    "up": ("quicknat_up", "1 when the exporter reached the data path"),
    "connected": ("quicknat_connected", "1 while the controller is primary on its switch"),
}

# The process metrics of the data path the exporter reads, apart from its own.
SWPATH_PROCESS_NAMESPACE = "quicknat_swpath"


def families(stats: dict[str, Any], path: str) -> list[Metric]:
    """The metric families of one `stats` answer (the status socket's schema)."""
    result: list[Metric] = []
    for key, (name, text) in GAUGES.items():
        if key in stats:
            gauge = GaugeMetricFamily(name, text, labels=["path"])
            gauge.add_metric([path], float(stats[key]))
            result.append(gauge)
    if "version" in stats:
        info = GaugeMetricFamily(
            "quicknat_build_info", "the data path's version; 1", labels=["path", "version"]
        )
        info.add_metric([path, str(stats["version"])], 1.0)
        result.append(info)
    if "pools" in stats:
        result += _pools(stats["pools"], path)
    if "stream_queue_dropped" in stats:
        dropped = CounterMetricFamily(
            "quicknat_stream_messages_dropped",
            "P4Runtime stream messages dropped: the controller's queue was full",
            labels=["path"],
        )
        dropped.add_metric([path], float(stats["stream_queue_dropped"]))
        result.append(dropped)
    result += _counter_families(stats.get("counters", {}), path)
    result += _histograms(stats.get("histograms", {}), path)
    return result


def _pools(pools: list[dict[str, Any]], path: str) -> list[Metric]:
    ports = GaugeMetricFamily(
        "quicknat_pool_ports", "ports of a pool, per protocol", labels=["path", "pool"]
    )
    in_use = GaugeMetricFamily(
        "quicknat_pool_ports_in_use",
        "ports of a pool held by mappings",
        labels=["path", "pool", "protocol"],
    )
    for pool in pools:
        ports.add_metric([path, pool["name"]], float(pool["ports"]))
        for protocol, count in pool["in_use"].items():
            in_use.add_metric([path, pool["name"], protocol], float(count))
    return [ports, in_use]


def _counter_families(counters: dict[str, Any], path: str) -> list[Metric]:
    """Each counter summed into its family's sample (counter_families.py);
    those of no family are counted in quicknat_unmapped_counters."""
    samples: dict[str, dict[str, float]] = {}
    unmapped = 0
    for name, value in counters.items():
        metric = metric_of(name)
        if metric is None:
            unmapped += 1
            continue
        family_name, label = metric
        values = samples.setdefault(family_name, {})
        values[label] = values.get(label, 0.0) + float(value)
    result: list[Metric] = []
    for family in FAMILIES:
        if family.name not in samples:
            continue
        labels = ["path", family.label] if family.label else ["path"]
        metric_family = CounterMetricFamily(family.name, family.help, labels=labels)
        for label, value in sorted(samples[family.name].items()):
            metric_family.add_metric([path, label] if family.label else [path], value)
        result.append(metric_family)
    gauge = GaugeMetricFamily(
        "quicknat_unmapped_counters",
        "counters of the data path no metric family takes (a newer data path)",
        labels=["path"],
    )
    gauge.add_metric([path], float(unmapped))
    return [*result, gauge]


def _histograms(histograms: dict[str, Any], path: str) -> list[Metric]:
    """The `stats` form of latency.Histogram ({"bounds", "counts", "sum"}) as
    Prometheus histograms: cumulative buckets, le as text."""
    result: list[Metric] = []
    for key, (name, text) in HISTOGRAMS.items():
        if key not in histograms:
            continue
        h = histograms[key]
        family = HistogramMetricFamily(name, text, labels=["path"])
        buckets, total = [], 0.0
        for bound, count in zip([*h["bounds"], float("inf")], h["counts"], strict=True):
            total += count
            buckets.append(("+Inf" if bound == float("inf") else repr(float(bound)), total))
        family.add_metric([path], buckets, float(h["sum"]))
        result.append(family)
    return result


class _StatsCollector(Collector):
    def __init__(self, read: Callable[[], dict[str, Any]], path: str, data_path_process: bool):
        self.read = read
        self.path = path
        self.data_path_process = data_path_process

    def collect(self) -> Iterator[Metric]:
        stats = self.read()
        yield from families(stats, self.path)
        pid = stats.get("pid")
        if self.data_path_process and isinstance(pid, int):
            # its own /proc entry: readable when the exporter runs as its
            # user (or root) in its pid namespace; else none are yielded
            yield from ProcessCollector(
                namespace=SWPATH_PROCESS_NAMESPACE, pid=lambda: pid, registry=None
            ).collect()


def registry(
    read: Callable[[], dict[str, Any]],
    path: str,
    data_path_process: bool = False,
    switch: Callable[[], tuple[dict[str, Any], dict[str, Any]]] | None = None,
) -> CollectorRegistry:
    """What one scrape collects: the stats of `read`, this process's process
    metrics, (the exporter: `data_path_process`) the data path's, and with
    `switch` (the exporter's --swx) quicknat-swx's telemetry."""
    result = CollectorRegistry(auto_describe=False)
    result.register(_StatsCollector(read, path, data_path_process))
    if switch is not None:
        result.register(SwitchCollector(switch))
    ProcessCollector(registry=result)
    return result


def exposition(read: Callable[[], dict[str, Any]], path: str) -> bytes:
    """The text exposition format of one scrape."""
    return generate_latest(registry(read, path))


async def serve_metrics(host: str, port: int, scraped: CollectorRegistry) -> asyncio.AbstractServer:
    """A minimal HTTP server for GET /metrics, in the caller's event loop (so
    that the registry sees the controller's counters between two of its steps)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass
            target = request.split()[1] if len(request.split()) > 1 else b""
            if target.split(b"?")[0] != b"/metrics":
                body, status, kind = b"see /metrics\n", b"404 Not Found", b"text/plain"
            else:
                body, status = generate_latest(scraped), b"200 OK"
                kind = CONTENT_TYPE_LATEST.encode()
            writer.write(
                b"HTTP/1.0 " + status + b"\r\nContent-Type: " + kind
                + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )  # fmt: skip
            await writer.drain()
        except (TimeoutError, ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(ConnectionError):
                writer.close()

    return await asyncio.start_server(handle, host, port)


def family_names() -> dict[str, set[str]]:
    """Every family this module can expose (as named in PromQL: a counter's
    with _total, a histogram's _bucket/_sum/_count) -> its labels."""
    names: dict[str, set[str]] = {name: {"path"} for name, _ in GAUGES.values()}
    names["quicknat_build_info"] = {"path", "version"}
    names["quicknat_pool_ports"] = {"path", "pool"}
    names["quicknat_pool_ports_in_use"] = {"path", "pool", "protocol"}
    names["quicknat_unmapped_counters"] = {"path"}
    names["quicknat_stream_messages_dropped_total"] = {"path"}
    for family in FAMILIES:
        names[family.name] = {"path", family.label} if family.label else {"path"}
    for name, _ in HISTOGRAMS.values():
        names[name + "_bucket"] = {"path", "le"}
        names[name + "_sum"] = names[name + "_count"] = {"path"}
    for name, (_, labels) in SWITCH_FAMILIES.items():
        names[name] = set(labels)  # no path: one switch, whichever path asks
    # the data path's process metrics, as the exporter names them
    collector = ProcessCollector(namespace=SWPATH_PROCESS_NAMESPACE, registry=None)
    for metric in collector.collect():
        for sample in metric.samples:
            names[sample.name] = set(sample.labels)  # no path: the instance tells
    return names


def split_address(text: str) -> tuple[str, int]:
    """'HOST:PORT' (or ':PORT' for every address) -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{text!r}: must be HOST:PORT")
    return host or "0.0.0.0", int(port)
