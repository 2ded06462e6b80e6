"""Prometheus metrics (quicknat/metrics.py): one family per concept on both
paths, every counter from start, the build, the process, the latency
histograms, served over HTTP by the controller and the exporter."""

from __future__ import annotations

import asyncio
import os
import time

import configs
from prometheus_client.parser import text_string_to_metric_families
from quicknat import __version__
from quicknat.config import parse_config
from quicknat.controller.program import Pipeline
from quicknat.controller.service import Controller, ControllerOptions
from quicknat.metrics import exposition, registry, serve_metrics
from scapy.layers.inet import IP
from stub_controller import Run

CONFIG = configs.text("switch", "snat_pool")

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parsed(text: bytes | str) -> Samples:
    """Every sample of a scrape: (name, labels) -> value, as Prometheus reads it."""
    text = text.decode() if isinstance(text, bytes) else text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def test_both_paths_report_a_refusal_under_one_family() -> None:
    controller = {"sessions": 3, "connected": True, "counters": {"refused.session_limit": 2}}
    swpath = {
        "sessions": 5,
        "counters": {"drop_session_limit": 7, "drop_martian": 1, "rx": 9, "in2out": 4},
    }
    got = parsed(exposition(lambda: controller, "p4")) | parsed(
        exposition(lambda: swpath, "swpath")
    )
    refused = "quicknat_flows_refused_total"
    assert value(got, refused, path="p4", reason="session_limit") == 2
    assert value(got, refused, path="swpath", reason="session_limit") == 7
    assert value(got, "quicknat_packets_dropped_total", path="swpath", reason="martian") == 1
    assert value(got, "quicknat_packets_received_total", path="swpath") == 9
    assert value(got, "quicknat_packets_translated_total", path="swpath", direction="in2out") == 4
    assert value(got, "quicknat_sessions", path="p4") == 3
    assert value(got, "quicknat_connected", path="p4") == 1
    assert value(got, "quicknat_unmapped_counters", path="swpath") == 0


def test_counters_of_one_concept_are_summed_and_strangers_are_counted() -> None:
    swpath = {
        "counters": {"icmp_error_in2out": 2, "icmp_error_out2in": 3, "sessions_expired": 4},
    }
    controller = {"counters": {"sessions_deleted": 1, "a_counter_from_the_future": 5}}
    got = parsed(exposition(lambda: swpath, "swpath")) | parsed(
        exposition(lambda: controller, "p4")
    )
    assert value(got, "quicknat_icmp_errors_translated_total", path="swpath") == 5
    closed = "quicknat_sessions_closed_total"
    assert value(got, closed, path="swpath", reason="expired") == 4
    assert value(got, closed, path="p4", reason="deleted") == 1
    assert value(got, "quicknat_unmapped_counters", path="p4") == 1
    assert not [k for k in got if "future" in str(k)]


async def test_the_controller_serves_every_family_from_start() -> None:
    controller = Controller(parse_config(CONFIG), ControllerOptions(), Pipeline.load())
    server = await serve_metrics("127.0.0.1", 0, registry(controller.stats_dict, "p4"))
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
    got = parsed(body)
    assert value(got, "quicknat_flows_refused_total", path="p4", reason="table_full") == 0
    assert value(got, "quicknat_fragments_translated_total", path="p4") == 0
    assert value(got, "quicknat_switch_write_failures_total", path="p4", operation="modify") == 0
    assert value(got, "quicknat_connected", path="p4") == 0
    assert value(got, "quicknat_sessions_installed", path="p4") == 0
    assert value(got, "quicknat_stream_messages_dropped_total", path="p4") == 0
    assert value(got, "quicknat_build_info", path="p4", version=__version__) == 1
    assert value(got, "quicknat_unmapped_counters", path="p4") == 0
    assert value(got, "quicknat_first_packet_duration_seconds_count", path="p4") == 0
    assert value(got, "process_cpu_seconds_total") > 0  # this process's own
    assert not [name for name, _ in got if name.startswith("quicknat_swpath_process")]


def test_pool_use_is_a_gauge_per_pool_and_protocol() -> None:
    stats = {
        "sessions": 2,
        "pools": [{"name": "public", "ports": 64512, "in_use": {"tcp": 1, "udp": 2, "icmp": 0}}],
        "counters": {},
    }
    got = parsed(exposition(lambda: stats, "swpath"))
    assert value(got, "quicknat_pool_ports", path="swpath", pool="public") == 64512
    in_use = "quicknat_pool_ports_in_use"
    assert value(got, in_use, path="swpath", pool="public", protocol="udp") == 2


def test_the_exporter_reports_the_data_path_s_process_by_its_pid() -> None:
    # this process stands in for swpath: its pid is what a stats answer gives
    stats = {"up": True, "pid": os.getpid(), "version": "9.9", "counters": {}}
    got = parsed(registry_text(stats))
    start = value(got, "quicknat_swpath_process_start_time_seconds")
    assert abs(start - value(got, "process_start_time_seconds")) < 1
    assert value(got, "quicknat_swpath_process_resident_memory_bytes") > 1e6
    assert value(got, "quicknat_build_info", path="swpath", version="9.9") == 1
    gone = parsed(registry_text({"up": False}))
    assert value(gone, "quicknat_up", path="swpath") == 0
    assert not [name for name, _ in gone if name.startswith("quicknat_swpath_process")]


def registry_text(stats: dict[str, object]) -> bytes:
    from prometheus_client import generate_latest

    return generate_latest(registry(lambda: stats, "swpath", data_path_process=True))


def test_first_packet_leaves_before_a_held_write_and_both_are_timed() -> None:
    """A stub switch holds the install write 30 ms: the new flow's first
    packet leaves at once, translated, for the switch to route (it does not
    wait for the write: punts.py, _route_before_install), so its histogram
    counts it below 25 ms; the install lands in the 25-50 ms bucket."""

    async def scenario() -> Samples:
        run = Run()
        run.controller.mode.writer.online()
        run.serving = asyncio.ensure_future(run.controller._serve(run.stop))
        run.switch.hold = asyncio.Event()
        run.packet_in()
        await run.settle()
        (first,) = run.switch.injected  # out while the write is held
        assert IP(first[14:]).src == "203.0.113.1"  # the pool's address
        assert run.controller.stats["sessions_installed"] == 0
        time.sleep(0.03)  # the switch is slow: the write's answer waits
        hold, run.switch.hold = run.switch.hold, None
        hold.set()
        await run.settle()
        assert len(run.switch.injected) == 1  # not sent again after the write
        assert run.controller.stats["sessions_installed"] == 1
        got = parsed(exposition(run.controller.stats_dict, "p4"))
        await run.close()
        return got

    got = asyncio.run(scenario())
    first, install = "quicknat_first_packet_duration_seconds", "quicknat_install_duration_seconds"
    assert value(got, first + "_count", path="p4") == 1
    assert value(got, first + "_bucket", path="p4", le="0.025") == 1
    assert value(got, install + "_count", path="p4") == 1
    assert value(got, install + "_bucket", path="p4", le="0.025") == 0
    assert value(got, install + "_bucket", path="p4", le="0.05") == 1
    assert 0.03 <= value(got, install + "_sum", path="p4") < 0.05


def test_swpath_s_session_open_histogram_is_cumulative() -> None:
    # the form swpath's stats give (control/format.c histograms_json)
    stats = {
        "histograms": {
            "session_open": {"bounds": [2.5e-07, 5e-07], "counts": [3, 4, 5], "sum": 1.5e-05}
        }
    }
    got = parsed(exposition(lambda: stats, "swpath"))
    name = "quicknat_session_open_duration_seconds"
    assert value(got, name + "_bucket", path="swpath", le="2.5e-07") == 3
    assert value(got, name + "_bucket", path="swpath", le="5e-07") == 7
    assert value(got, name + "_bucket", path="swpath", le="+Inf") == 12
    assert value(got, name + "_count", path="swpath") == 12
    assert value(got, name + "_sum", path="swpath") == 1.5e-05


def test_sessions_that_never_install_leave_no_timing_behind() -> None:
    """The writer keeps a session's queue time only until its INSERT answers:
    one refused by the switch, forgotten or adopted leaves nothing."""

    async def scenario() -> None:
        run = Run()
        writer = run.controller.mode.writer
        await run.first_flow()
        (session,) = run.controller.mode.nat.sessions()
        assert writer.latency._queued_at == {}  # answered: popped
        writer.latency.queued(session.id, 1.0)
        writer.adopt(session)
        assert writer.latency._queued_at == {}
        writer.latency.queued(session.id, 1.0)
        writer.forget(session)
        assert writer.latency._queued_at == {}
        await run.close()

    asyncio.run(scenario())
