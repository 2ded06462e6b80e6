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
from .topology import FAR, LINKS, NAT, Node

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


# The same flows as prebuilt frames through an AF_PACKET socket, from `hosts`
# inside addresses (.100 up in the sender's /24, beside it on its link) x source ports
# base, base + 1, ..., paced in 1 ms slices. SEND's socket per flow tops out
# near 6,500 flows/s on a 2-vCPU VM, below what offload mode sets up; this one
# sends over 100,000 frames/s. The payload's send time is 0: only the
# setup-rate runs use it, and they count arrivals. Prints the seconds it took.
FRAME_SEND = """
import socket, struct, sys, time
dev, dst_mac, src_mac, dst, net = sys.argv[1:6]
n, rate, base, hosts = int(sys.argv[6]), float(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9])
rnd, port = sys.argv[10], int(sys.argv[11])
mac = lambda m: bytes(int(x, 16) for x in m.split(":"))
def csum(data):
    data += bytes(len(data) % 2)
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s >> 16) + (s & 0xFFFF)
    return ~s & 0xFFFF
eth = mac(dst_mac) + mac(src_mac) + b"\\x08\\x00"
daddr = socket.inet_aton(dst)
payload = f"0 {rnd}".encode()
frames = []
for i in range(n):
    saddr = socket.inet_aton(f"{net}.{100 + i % hosts}")
    sport, length = base + i // hosts, 8 + len(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + length, i & 0xFFFF, 0, 64, 17, 0, saddr, daddr)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", sport, port, length, 0) + payload
    pseudo = saddr + daddr + struct.pack("!BBH", 0, 17, length)
    udp = udp[:6] + struct.pack("!H", csum(pseudo + udp) or 0xFFFF) + udp[8:]
    frames.append(eth + ip + udp)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((dev, 0))
start = time.monotonic()
per_ms = max(1, int(rate / 1000))
for i, frame in enumerate(frames):
    if i % per_ms == 0:
        wait = start + i / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
    try:
        s.send(frame)
    except BlockingIOError:
        pass
print(time.monotonic() - start)
"""

# The most inside addresses FRAME_SEND sends from (.100 to .199).
FRAME_HOSTS_MAX = 100


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


def frame_sender(
    lab: Nodes, node: Node, flows: int, rate: float, base: int, hosts: int = FRAME_HOSTS_MAX
) -> Callable[[int], subprocess.Popen[str]]:
    """As `sender`, with FRAME_SEND on `node` (an inside host), from `hosts`
    addresses of its /24: `flows` new flows at `rate`, source ports from
    `base` (wait() on it; stdout: the seconds it took)."""
    if not 1 <= hosts <= FRAME_HOSTS_MAX:
        raise ValueError(f"hosts: 1 to {FRAME_HOSTS_MAX}")
    host, nat = next((k.a, k.b) for k in LINKS if k.a.node == node.name and k.b.node == NAT)
    net = node.ip.rsplit(".", 1)[0]

    def send(rnd: int) -> subprocess.Popen[str]:
        args = (lab.device(host), nat.mac, host.mac, FAR.ip, net, str(flows), str(rate))
        args += (str(base), str(hosts), str(rnd), str(PORT))
        return subprocess.Popen(
            lab.command(host.node, "python3", "-c", FRAME_SEND, *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    return send


def arrivals(log: Path) -> list[list[str]]:
    """The sink's lines, split: [arrival, sent, port, round]."""
    return [line.split() for line in log.read_text().splitlines() if line.strip()]
