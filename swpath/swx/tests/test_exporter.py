"""`quicknat exporter --swx PREFIX` against a running quicknat-swx: its
telemetry as quicknat_switch_* at /metrics (controller/quicknat/
switch_metrics.py), counts that move with what the switch does, and a
switch that is gone reported as down."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Switch, requires_switch
from p4runtime_session import WAIT_S, Client, Program
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[3]
QUICKNAT = os.environ.get("QUICKNAT", str(REPO / ".venv" / "bin" / "quicknat"))
BUILD = REPO / "p4src" / "build" / "pna"
PROGRAM = Program(BUILD / "quicknat.p4info.txtpb")

pytestmark = requires_switch

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def exporter(switch: Switch, tmp_path: Path) -> Iterator[str]:
    """The exporter of `switch`'s telemetry (no swpath beside it), its /metrics URL."""
    port = free_port()
    log = (tmp_path / "exporter.log").open("wb")
    proc = subprocess.Popen(
        [QUICKNAT, "exporter", "--socket", str(tmp_path / "no-swpath.sock"),
         "--swx", switch.prefix, "--listen", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, (tmp_path / "exporter.log").read_text()
            assert time.monotonic() < deadline, "the exporter is not listening"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/metrics"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("quicknat_switch_")
    }


def test_the_exporter_serves_the_switchs_counts(switch: Switch, exporter: str) -> None:
    """Its ports (the CPU port and the two with a device), its tables, and
    the drops on the way out, which move by what was sent: a packet-out to
    port 5 (no device) and one to port 64 (the program drops it)."""
    client = Client(switch.address, PROGRAM)
    try:
        client.arbitrate()
        client.next_arbitration()
        client.set_pipeline((BUILD / "quicknat.spec").read_bytes())
        before = scrape(exporter)
        assert before[("quicknat_switch_up", ())] == 1.0
        for port in ("0", "1", "2"):
            assert (
                "quicknat_switch_port_packets_total",
                (("direction", "rx"), ("port", port)),
            ) in before
        lookups = [k for k in before if k[0] == "quicknat_switch_table_lookups_total"]
        assert ("table", "core_nat_nat_in2out") in {
            label for _, labels in lookups for label in labels
        }
        for egress in (5, 64):
            client.send(PROGRAM.packet_out_to(egress))
        drops = "quicknat_switch_output_drops_total"
        keys = [(drops, (("reason", "no_device"),)), (drops, (("reason", "program"),))]
        deadline = time.monotonic() + WAIT_S
        while True:
            after = scrape(exporter)
            moved = [after[k] - before[k] for k in keys]
            if moved == [1.0, 1.0] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert moved == [1.0, 1.0], "no_device and program drops"
    finally:
        client.close()


def test_a_switch_that_is_gone_is_down(tmp_path: Path) -> None:
    """An exporter told of a switch that does not run serves quicknat_switch_up 0."""
    port = free_port()
    proc = subprocess.Popen(
        [QUICKNAT, "exporter", "--socket", str(tmp_path / "none.sock"),
         "--swx", f"quicknat-swx-none-{os.getpid()}", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                got = scrape(f"http://127.0.0.1:{port}/metrics")
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "no exporter"
                time.sleep(0.05)
        assert got == {("quicknat_switch_up", ()): 0.0}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
