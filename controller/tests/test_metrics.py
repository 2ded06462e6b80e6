"""Prometheus metrics (quicknat/metrics.py): one vocabulary for both paths,
every counter from start, served over HTTP by the controller and the
exporter."""

from __future__ import annotations

import asyncio

import configs
from quicknat.config import parse_config
from quicknat.controller.program import Pipeline
from quicknat.controller.service import Controller, ControllerOptions
from quicknat.metrics import exposition
from quicknat.metrics import serve_metrics as serve

CONFIG = configs.text("switch", "snat_pool")


def lines(text: bytes) -> set[str]:
    return {line for line in text.decode().splitlines() if not line.startswith("#")}


def test_both_paths_report_a_refusal_under_one_metric() -> None:
    controller = {"sessions": 3, "connected": True, "counters": {"refused.session_limit": 2}}
    swpath = {"sessions": 5, "counters": {"drop_session_limit": 7, "drop_martian": 1, "rx": 9}}
    got = lines(exposition(lambda: controller, "p4")) | lines(exposition(lambda: swpath, "swpath"))
    assert 'quicknat_refused_total{path="p4",reason="session_limit"} 2.0' in got
    assert 'quicknat_refused_total{path="swpath",reason="session_limit"} 7.0' in got
    assert 'quicknat_drops_total{path="swpath",reason="martian"} 1.0' in got
    assert 'quicknat_events_total{event="rx",path="swpath"} 9.0' in got
    assert 'quicknat_sessions{path="p4"} 3.0' in got
    assert 'quicknat_connected{path="p4"} 1.0' in got


async def test_the_controller_serves_every_counter_from_start() -> None:
    controller = Controller(parse_config(CONFIG), ControllerOptions(), Pipeline.load())
    server = await serve("127.0.0.1", 0, controller.stats_dict, "p4")
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 5)
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200 OK")
    got = lines(body)
    assert 'quicknat_refused_total{path="p4",reason="table_full"} 0.0' in got
    assert 'quicknat_fragments_total{outcome="translated",path="p4"} 0.0' in got
    assert 'quicknat_connected{path="p4"} 0.0' in got


def test_pool_use_is_a_gauge_per_pool_and_protocol() -> None:
    stats = {
        "sessions": 2,
        "pools": [{"name": "public", "ports": 64512, "in_use": {"tcp": 1, "udp": 2, "icmp": 0}}],
        "counters": {},
    }
    text = exposition(lambda: stats, "swpath").decode()
    assert 'quicknat_pool_ports{path="swpath",pool="public"} 64512.0' in text
    assert 'quicknat_pool_ports_in_use{path="swpath",pool="public",protocol="udp"} 2.0' in text
