"""Prometheus metrics of either data path, from the counters it already keeps.

The controller serves its own (`quicknat controller --metrics-addr`); swpath's
are served by `quicknat exporter`, which asks its control socket at each
scrape, so the data path does no work for them. Both use one vocabulary: the
same event has the same metric on both paths, told apart by the `path` label.

- `quicknat_sessions`, `quicknat_connected` (controller: switch reachable),
  `quicknat_up` (exporter: data path reachable)
- `quicknat_refused_total{reason}`: new flows refused, by the refusal reasons
  of quicknat/counters.py (docs/counters.md): the controller's `refused.*`,
  swpath's `drop_*` of the same names
- `quicknat_drops_total{reason}`: swpath's other drops (`drop_*`)
- `quicknat_fragments_total{outcome}`, `quicknat_icmp_errors_sent_total{kind}`
- `quicknat_pool_ports{pool}` (per protocol), `quicknat_pool_ports_in_use{pool,protocol}`
- `quicknat_events_total{event}`: every other counter, by its own name

Every counter exists from start-up at zero on both paths, so rates work from
the first scrape.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from quicknat.counters import refusal_reasons

# Refusal reasons: the same words in the controller's refused.* and in
# swpath's drop_* (quicknat/counters.py).
REFUSALS = refusal_reasons()


def families(stats: dict[str, Any], path: str) -> list[Metric]:
    """The metric families of one `stats` answer (the status socket's schema)."""
    sessions = GaugeMetricFamily("quicknat_sessions", "sessions open", labels=["path"])
    sessions.add_metric([path], float(stats.get("sessions", 0)))
    result: list[Metric] = [sessions]
    if "up" in stats:
        up = GaugeMetricFamily(
            "quicknat_up", "1 when the exporter reached the data path", labels=["path"]
        )
        up.add_metric([path], 1.0 if stats["up"] else 0.0)
        result.append(up)
    if "pools" in stats:
        ports = GaugeMetricFamily(
            "quicknat_pool_ports", "ports of a pool, per protocol", labels=["path", "pool"]
        )
        in_use = GaugeMetricFamily(
            "quicknat_pool_ports_in_use",
            "ports of a pool held by mappings",
            labels=["path", "pool", "protocol"],
        )
        for pool in stats["pools"]:
            ports.add_metric([path, pool["name"]], float(pool["ports"]))
            for protocol, count in pool["in_use"].items():
                in_use.add_metric([path, pool["name"], protocol], float(count))
        result += [ports, in_use]
    if "connected" in stats:
        connected = GaugeMetricFamily(
            "quicknat_connected", "1 while the controller is primary on its switch", labels=["path"]
        )
        connected.add_metric([path], 1.0 if stats["connected"] else 0.0)
        result.append(connected)
    refused = CounterMetricFamily(
        "quicknat_refused", "new flows refused, by reason", labels=["path", "reason"]
    )
    drops = CounterMetricFamily(
        "quicknat_drops", "packets dropped, by reason", labels=["path", "reason"]
    )
    fragments = CounterMetricFamily(
        "quicknat_fragments", "IPv4 fragments, by outcome", labels=["path", "outcome"]
    )
    icmp = CounterMetricFamily(
        "quicknat_icmp_errors_sent", "ICMP errors the NAT sent, by kind", labels=["path", "kind"]
    )
    events = CounterMetricFamily(
        "quicknat_events", "every other counter, by its name", labels=["path", "event"]
    )
    for name, value in sorted(stats.get("counters", {}).items()):
        count = float(value)
        if name.startswith("refused.") and not name.startswith("refused.hairpin."):
            refused.add_metric([path, name.removeprefix("refused.")], count)
        elif name.startswith("drop_") and name.removeprefix("drop_") in REFUSALS:
            refused.add_metric([path, name.removeprefix("drop_")], count)
        elif name.startswith("drop_"):
            drops.add_metric([path, name.removeprefix("drop_")], count)
        elif name.startswith("fragment.") or name.startswith("frag_"):
            outcome = name.removeprefix("fragment.").removeprefix("frag_")
            fragments.add_metric([path, outcome], count)
        elif name.startswith("icmp_gen.sent."):
            icmp.add_metric([path, name.removeprefix("icmp_gen.sent.")], count)
        else:
            events.add_metric([path, name], count)
    return [*result, refused, drops, fragments, icmp, events]


class _StatsCollector(Collector):
    def __init__(self, read: Callable[[], dict[str, Any]], path: str) -> None:
        self.read = read
        self.path = path

    def collect(self) -> Iterator[Metric]:
        yield from families(self.read(), self.path)


def exposition(read: Callable[[], dict[str, Any]], path: str) -> bytes:
    """The text exposition format of one scrape."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_StatsCollector(read, path))
    return generate_latest(registry)


async def serve_metrics(
    host: str, port: int, read: Callable[[], dict[str, Any]], path: str
) -> asyncio.AbstractServer:
    """A minimal HTTP server for GET /metrics, in the caller's event loop (so
    that `read` sees the controller's counters between two of its steps)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass
            target = request.split()[1] if len(request.split()) > 1 else b""
            if target.split(b"?")[0] != b"/metrics":
                body, status, kind = b"see /metrics\n", b"404 Not Found", b"text/plain"
            else:
                body, status = exposition(read, path), b"200 OK"
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


def split_address(text: str) -> tuple[str, int]:
    """'HOST:PORT' (or ':PORT' for every address) -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{text!r}: must be HOST:PORT")
    return host or "0.0.0.0", int(port)
