"""The UDP probes of the offload labs' e2e tests (lab.e2e, lab.e2e_learn): a
sink on far counting datagrams, a sender from a fixed source port, and the
counters the tests read."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from lab.nodes import Nodes
from lab.topology import FAR, H1

UDP_SINK = """
import signal, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("", int(sys.argv[1])))
s.settimeout(float(sys.argv[2]))
n = 0
signal.signal(signal.SIGTERM, lambda *a: (print(n), sys.exit(0)))
try:
    while True:
        s.recv(2048)
        n += 1
except OSError:
    print(n)
"""
UDP_SEND = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("", 47000))
for _ in range(int(sys.argv[3])):
    s.sendto(b"offload", (sys.argv[1], int(sys.argv[2])))
    time.sleep(0.01)
"""
OFFLOAD_PORT = 9999


def offload_counters(lab: Nodes) -> dict[str, int]:
    """The controller's counters (the offload manager's among them)."""
    from lab.offload_lab import OffloadLab

    assert isinstance(lab, OffloadLab)
    stats = lab.controller_stats()["counters"]
    assert isinstance(stats, dict)
    return stats


def udp_sessions_of(lab: Nodes, sport: int) -> list[dict[str, Any]]:
    """The instance's sessions of h1's UDP source port `sport`."""
    rows = json.loads(lab.quicknat("sessions", "--json", "--src", H1.ip, "--proto", "udp"))
    return [r for r in rows if r["internal"] == f"{H1.ip}:{sport}"]


def start_udp_sink(lab: Nodes, log: str, seconds: int) -> subprocess.Popen[bytes]:
    """far's UDP_SINK on OFFLOAD_PORT, counting into `log`."""
    return lab.start_server(
        FAR.name,
        ["python3", "-u", "-c", UDP_SINK, str(OFFLOAD_PORT), str(seconds)],
        OFFLOAD_PORT,
        log,
        udp=True,
    )
