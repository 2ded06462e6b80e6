"""What `make run`, `make run-swpath` and `make run-bmv2` show, on either lab: ping, a download,
iperf3 and traceroute through the NAT, then its sessions and counters."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

from .nodes import IPERF_PORT, Nodes
from .topology import FAR, H1, H2, SRV

STEP_TIMEOUT_S = 30


def start_servers(lab: Nodes, download_mb: int) -> None:
    """A web server with one file of `download_mb` MB, and iperf3, on srv."""
    www = lab.workdir / "www"
    www.mkdir(exist_ok=True)
    (www / "download.bin").write_bytes(os.urandom(download_mb << 20))
    web = [sys.executable, "-m", "http.server", "80", "--bind", SRV.ip, "--directory", str(www)]
    lab.start_server(SRV.name, web, 80, "http.log")
    lab.start_server(SRV.name, ["iperf3", "-s"], IPERF_PORT, "iperf3.log")


def step(lab: Nodes, title: str, node: str, command: list[str]) -> bool:
    print(f"\n=== {title}: {shlex.join(command)}", flush=True)
    try:
        proc = subprocess.run(
            lab.command(node, *command),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=STEP_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        print(f"(no answer within {STEP_TIMEOUT_S} s)")
        return False
    print(proc.stdout.rstrip())
    return proc.returncode == 0


def demo(lab: Nodes, download_mb: int) -> bool:
    start_servers(lab, download_mb)
    url = f"http://{SRV.ip}/download.bin"
    results = [
        step(lab, "ping from h1 to srv", H1.name, ["ping", "-c", "3", "-W", "2", SRV.ip]),
        step(lab, "ping from h2 to srv", H2.name, ["ping", "-c", "3", "-W", "2", SRV.ip]),
        step(
            lab,
            f"{download_mb} MB from the web server on srv, fetched by h1",
            H1.name,
            [
                "curl",
                "-sS",
                "-o",
                "/dev/null",
                "--max-time",
                "20",
                "-w",
                # no newline: the step's header shows the command on one line
                "HTTP %{http_code}, %{size_download} bytes in %{time_total} s",
                url,
            ],
        ),
        step(
            lab,
            "iperf3 TCP from h1 to srv (3 s)",
            H1.name,
            ["iperf3", "-c", SRV.ip, "-t", "3", "--connect-timeout", "5000"],
        ),
        # Hop 1 is the NAT, hop 2 rtr beyond it, then far.
        step(
            lab,
            "traceroute from h1 to far, through the NAT and rtr",
            H1.name,
            ["traceroute", "-n", "-q", "1", "-w", "1", "-m", "5", FAR.ip],
        ),
    ]
    print(f"\n=== sessions in the NAT: quicknat sessions --socket {lab.socket}")
    sessions = lab.quicknat("sessions")
    print(sessions)
    print(f"\n=== counters (non-zero): quicknat stats --socket {lab.socket}")
    print(nonzero_counters(lab.quicknat("stats", "--json")))
    return all(results) and not sessions.startswith("0 sessions")


def nonzero_counters(stats_json: str) -> str:
    """The totals of `quicknat stats`, without the zeros and the per-worker
    copies: the 40-odd counters would hide the few that moved."""
    try:
        counters = json.loads(stats_json)["counters"]
    except (ValueError, KeyError, TypeError):
        return stats_json
    return "\n".join(f"  {name:<20} {value}" for name, value in counters.items() if value)
