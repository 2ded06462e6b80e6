"""Bursts of new UDP flows through a lab's NAT, and where they arrive: one
datagram from each of many source ports, paced, to a sink on far that
records each arrival (the offload lab's demonstration, bench-offload).

far's sink writes one line per datagram: its arrival time, the sender's
time, the source port it came from (the NAT's external port) and the round
(CLOCK_MONOTONIC is the machine's, whatever the namespace: one clock).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from .nodes import Nodes
from .topology import FAR, Node

PORT = 9999

SINK = """
import signal, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.bind(("", int(sys.argv[1])))
out = open(sys.argv[2], "w", buffering=1 << 16)
signal.signal(signal.SIGTERM, lambda *a: (out.close(), sys.exit(0)))
while True:
    data, (_, port) = s.recvfrom(2048)
    sent, rnd = data.decode().split()
    out.write(f"{time.monotonic()} {sent} {port} {rnd}\\n")
"""
# one datagram from each of N source ports at a rate; its send time inside
SEND = """
import socket, sys, time
dst, port, n, rnd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[5]
rate, base = float(sys.argv[4]), int(sys.argv[6])
start = time.monotonic()
for i in range(n):
    wait = start + i / rate - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("", base + i))
    s.sendto(f"{time.monotonic()} {rnd}".encode(), (dst, port))
    s.close()
"""


def start_sink(lab: Nodes, log: Path) -> subprocess.Popen[bytes]:
    """far's sink on PORT, logging arrivals to `log` (stop it to flush)."""
    command = ["python3", "-u", "-c", SINK, str(PORT), str(log)]
    return lab.start_server(FAR.name, command, PORT, "sink.log", udp=True)


def sender(
    lab: Nodes, node: Node, flows: int, rate: float, base: int
) -> Callable[[int], subprocess.Popen[bytes]]:
    """`node`'s sender of round N, started in the background: `flows` new
    flows at `rate` from source ports base, base + 1, ... (wait() on it)."""

    def send(rnd: int) -> subprocess.Popen[bytes]:
        args = (FAR.ip, str(PORT), str(flows), str(rate), str(rnd), str(base))
        return subprocess.Popen(
            lab.command(node.name, "python3", "-c", SEND, *args),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    return send


def arrivals(log: Path) -> list[list[str]]:
    """The sink's lines, split: [arrival, sent, port, round]."""
    return [line.split() for line in log.read_text().splitlines() if line.strip()]
