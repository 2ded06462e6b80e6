#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of quicknat-swpath on pcap files.

Each test writes a command file and one input pcap per interface (scapy),
runs quicknat-swpath with `--vdev net_pcap<N>,rx_pcap=...,tx_pcap=...` until
it has been idle for a moment (`--exit-when-idle`), then checks every packet
of the output pcaps (addresses, ports, identifiers, TTL, MACs, and checksums
recomputed by scapy) and the counters and sessions it dumped on exit.

Packet order: a worker polls the interfaces in the order the command file
lists them, one burst (up to 32 packets) each per loop, so a reply placed in
a later interface's pcap is processed after the packet that opened its
session. Tests that need replies give the session a pool of one port, so the
external port is known in advance.

Run: sp_e2e.py --app PATH/quicknat-swpath [-k NAME]. Ends with
"N passed, M failed".
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quicknat.addr import parse_ipv4
from quicknat.events import TIME_FORMAT, event_text
from quicknat.nat.allocator import Endpoint
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPerror, IPOption_LSRR, UDPerror, fragment
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Packet, Raw
from scapy.utils import rdpcap, wrpcap

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "controller" / "tests" / "golden" / "good"

MAC_IN = "02:00:00:00:00:01"
MAC_OUT = "02:00:00:00:00:02"
MAC_IN1 = "02:00:00:00:00:03"
MAC_GW = "02:00:00:00:00:fe"
MAC_H2 = "02:00:00:00:10:02"
MAC_H3 = "02:00:00:00:10:03"
MAC_H4 = "02:00:00:00:10:04"
MAC_SRV = "02:00:00:00:20:05"
REMOTE_MAC = MAC_GW

BASE = f"""\
interface in0 zone inside port 0 address 10.0.0.1/24 mac {MAC_IN}
interface out0 zone outside port 1 address 198.51.100.1/24 mac {MAC_OUT}
route 0.0.0.0/0 dev out0 via 198.51.100.254
neighbor 198.51.100.254 mac {MAC_GW} dev out0
neighbor 10.0.0.2 mac {MAC_H2} dev in0
neighbor 10.0.0.3 mac {MAC_H3} dev in0
"""

APP = "quicknat-swpath"
# Each run's DPDK runtime directory (/var/run/dpdk/PREFIX), removed at the end.
PREFIX = f"sp-e2e-{os.getpid()}"


# -- harness ----------------------------------------------------------------------


@dataclass
class Run:
    outputs: list[list[Packet]]
    dump: dict[str, Any]
    returncode: int
    stderr: str

    @property
    def counters(self) -> dict[str, int]:
        counters: dict[str, int] = self.dump["stats"]["counters"]
        return counters

    def nonzero(self) -> dict[str, int]:
        return {k: v for k, v in self.counters.items() if v}


@dataclass
class Case:
    name: str
    fn: Callable[[Path], None]


CASES: list[Case] = []


def case(fn: Callable[[Path], None]) -> Callable[[Path], None]:
    CASES.append(Case(fn.__name__, fn))
    return fn


def run(
    tmp: Path,
    commands: str,
    inputs: Sequence[Sequence[Packet]],
    extra: tuple[str, ...] = (),
    idle_ms: int = 400,
    eal: tuple[str, ...] = (),
) -> Run:
    (tmp / "cmds.txt").write_text(commands)
    vdevs: list[str] = []
    for i, pkts in enumerate(inputs):
        frames: list[bytes] = [bytes(p) for p in pkts]
        wrpcap(str(tmp / f"rx{i}.pcap"), frames, linktype=1)  # type: ignore[arg-type]
        vdevs += ["--vdev", f"net_pcap{i},rx_pcap={tmp}/rx{i}.pcap,tx_pcap={tmp}/tx{i}.pcap"]
    argv = [
        APP,
        *vdevs,
        "--file-prefix",
        PREFIX,
        "--no-shconf",
        *eal,
        "--",
        "--commands",
        str(tmp / "cmds.txt"),
        "--control",
        "none",
        "--exit-when-idle",
        str(idle_ms),
        "--dump-on-exit",
        str(tmp / "dump.json"),
        *extra,
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr.strip()}")
    outputs = []
    for i in range(len(inputs)):
        path = tmp / f"tx{i}.pcap"
        outputs.append(list(rdpcap(str(path))) if path.stat().st_size > 24 else [])
    dump = json.loads((tmp / "dump.json").read_text())
    return Run(outputs, dump, proc.returncode, proc.stderr)


def from_host(src: str, dst: str, mac: str = MAC_H2, ttl: int = 64) -> Packet:
    return Ether(src=mac, dst=MAC_IN) / IP(src=src, dst=dst, ttl=ttl)


def from_remote(src: str, dst: str, ttl: int = 50) -> Packet:
    return Ether(src=REMOTE_MAC, dst=MAC_OUT) / IP(src=src, dst=dst, ttl=ttl)


def assert_checksums(p: Packet) -> None:
    """Every checksum as scapy recomputes it."""
    q = p.copy()
    del q[IP].chksum
    for layer in (TCP, UDP, ICMP):
        if layer in q and not (layer is UDP and p[UDP].chksum == 0):
            del q[layer].chksum
    q = Ether(bytes(q))
    assert q[IP].chksum == p[IP].chksum, f"IP checksum {p[IP].chksum:#x} != {q[IP].chksum:#x}"
    for layer in (TCP, UDP, ICMP):
        if layer in p:
            assert q[layer].chksum == p[layer].chksum, (
                f"{layer.__name__} checksum {p[layer].chksum:#x} != {q[layer].chksum:#x}: "
                f"{p.summary()}"
            )
            break


def eq(a: object, b: object, what: str = "") -> None:
    assert a == b, f"{what}: {a!r} != {b!r}" if what else f"{a!r} != {b!r}"


# -- Toeplitz, as the NIC computes it (for the RSS checks) ----------------------

RSS_KEY = bytes.fromhex(
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa"
)


def toeplitz(data: bytes, key: bytes = RSS_KEY) -> int:
    k = int.from_bytes(key, "big")
    klen = len(key) * 8
    h = 0
    for i in range(len(data) * 8):
        if data[i // 8] & (0x80 >> (i % 8)):
            h ^= (k >> (klen - 32 - i)) & 0xFFFFFFFF
    return h


def ip_bytes(a: str) -> bytes:
    return bytes(int(x) for x in a.split("."))


def owner_inside(src: str, workers: int) -> int:
    return (toeplitz(ip_bytes(src)) & 127) % workers


def owner_outside(dst: str, port: int, workers: int) -> int:
    return (toeplitz(ip_bytes(dst) + port.to_bytes(2, "big")) & 127) % workers


# -- tests ------------------------------------------------------------------------


@case
def test_outbound_translation(tmp: Path) -> None:
    cmds = BASE + (
        "pool public ports 1024-65535 addresses 203.0.113.0/29\n"
        "rule add id 1 type snat prefix 10.0.0.0/24 protocol any pool public\n"
    )
    sent = [
        from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53) / Raw(b"query"),
        from_host("10.0.0.2", "1.1.1.1", ttl=2) / TCP(sport=40000, dport=443, flags="S", seq=7),
        from_host("10.0.0.2", "9.9.9.9") / ICMP(type=8, id=0x1234, seq=1) / Raw(b"ping"),
        from_host("10.0.0.2", "8.8.4.4") / UDP(sport=5001, dport=53, chksum=0) / Raw(b"nocsum"),
    ]
    r = run(tmp, cmds, [sent, []])
    out = r.outputs[1]
    eq(len(out), 4, "translated packets")
    eq(r.outputs[0], [], "nothing back inside")
    externals = set()
    for before, after in zip(sent, out, strict=True):
        eq(after[Ether].src, MAC_OUT, "source MAC")
        eq(after[Ether].dst, MAC_GW, "next hop MAC")
        eq(after[IP].dst, before[IP].dst, "destination")
        eq(after[IP].ttl, before[IP].ttl - 1, "TTL")
        assert after[IP].src.startswith("203.0.113."), after[IP].src
        assert 0 <= int(after[IP].src.rsplit(".", 1)[1]) <= 7
        externals.add(after[IP].src)
        assert_checksums(after)
        l4 = next(layer for layer in (TCP, UDP, ICMP) if layer in before)
        eq(bytes(after[l4].payload), bytes(before[l4].payload), "payload")
    eq(len(externals), 1, "paired pooling: one external address for the host")
    eq(out[0][UDP].dport, 53)
    assert 1024 <= out[0][UDP].sport <= 65535
    eq(out[1][TCP].dport, 443)
    eq(out[1][TCP].seq, 7)
    eq(out[2][ICMP].type, 8)
    assert 1024 <= out[2][ICMP].id <= 65535, out[2][ICMP].id
    eq(out[3][UDP].chksum, 0, "a zero UDP checksum stays zero")
    c = r.counters
    eq(c["in2out"], 4)
    eq(c["sessions_created"], 4)
    eq(r.dump["stats"]["sessions"], 4)
    rows = {row["protocol"]: row for row in r.dump["sessions"]}
    eq(rows[17]["internal"] in ("10.0.0.2:5000", "10.0.0.2:5001"), True)
    eq(rows[1]["remote"], "9.9.9.9:4660", "ICMP remote carries the identifier")
    eq(rows[6]["tcp_state"], "opening")
    for row in r.dump["sessions"]:
        eq(row["installed"], True)
        eq(row["origin"], "snat")
        eq(row["rule"], 1)


# One port for any flow: parity (RFC 4787 REQ-4) off, or odd ports would find none.
ONE_PORT = BASE + (
    "pool p2 ports 40000-40000 preserve_parity false addresses 203.0.113.1\n"
    "pool p3 ports 40000-40000 preserve_parity false addresses 203.0.113.2\n"
    "rule add id 1 type snat prefix 10.0.0.2/32 protocol any pool p2\n"
    "rule add id 2 type snat prefix 10.0.0.3/32 protocol any pool p3\n"
)


@case
def test_replies_translated_back(tmp: Path) -> None:
    inside = [
        from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53) / Raw(b"q"),
        from_host("10.0.0.2", "1.1.1.1") / TCP(sport=33000, dport=80, flags="S", seq=100),
        from_host("10.0.0.2", "9.9.9.9") / ICMP(type=8, id=77, seq=5),
    ]
    outside = [
        from_remote("8.8.8.8", "203.0.113.1") / UDP(sport=53, dport=40000) / Raw(b"answer"),
        from_remote("1.1.1.1", "203.0.113.1") / TCP(sport=80, dport=40000, flags="SA", ack=101),
        from_remote("9.9.9.9", "203.0.113.1") / ICMP(type=0, id=40000, seq=5),
        # the same mapping, another remote address: address-dependent filtering drops it
        from_remote("4.4.4.4", "203.0.113.1") / UDP(sport=53, dport=40000),
    ]
    r = run(tmp, ONE_PORT, [inside, outside])
    out, back = r.outputs[1], r.outputs[0]
    eq([p[IP].src for p in out], ["203.0.113.1"] * 3)
    eq([p.sport if UDP in p or TCP in p else p[ICMP].id for p in out], [40000] * 3)
    eq(len(back), 3, "replies")
    for p in back:
        eq(p[IP].dst, "10.0.0.2")
        eq(p[IP].ttl, 49)
        eq(p[Ether].dst, MAC_H2)
        eq(p[Ether].src, MAC_IN)
        assert_checksums(p)
    eq(back[0][UDP].dport, 5000)
    eq(bytes(back[0][UDP].payload), b"answer")
    eq(back[1][TCP].dport, 33000)
    eq(back[1][TCP].ack, 101)
    eq(back[2][ICMP].id, 77)
    eq(back[2][ICMP].type, 0)
    c = r.counters
    eq((c["in2out"], c["out2in"], c["drop_filtered"]), (3, 3, 1))
    tcp = next(row for row in r.dump["sessions"] if row["protocol"] == 6)
    eq(tcp["tcp_state"], "established")


@case
def test_dnat_port_forwarding(tmp: Path) -> None:
    cmds = (
        f"interface in0 zone inside port 0 address 10.0.0.1/24 mac {MAC_IN}\n"
        f"interface out0 zone outside port 1 address 198.51.100.1/24 mac {MAC_OUT}\n"
        # the servers' link is polled after out0: their replies follow the requests
        f"interface in1 zone inside port 2 address 10.1.0.1/24 mac {MAC_IN1}\n"
        "route 0.0.0.0/0 dev out0 via 198.51.100.254\n"
        f"neighbor 198.51.100.254 mac {MAC_GW} dev out0\n"
        f"neighbor 10.1.0.5 mac {MAC_SRV} dev in1\n"
        "pool public ports 1024-65535 addresses 203.0.113.0/29\n"
        "rule add id 1 type snat prefix 10.0.0.0/8 protocol any pool public\n"
        "rule add id 4 type dnat prefix 203.0.113.11/32 port 443 protocol tcp "
        "to 10.1.0.5/32 to_port 8443\n"
        "rule add id 5 type dnat prefix 203.0.113.32/28 protocol any to 10.1.0.0/28\n"
    )
    outside = [
        from_remote("5.6.7.8", "203.0.113.11") / TCP(sport=33333, dport=443, flags="S"),
        from_remote("5.6.7.8", "203.0.113.37") / UDP(sport=1, dport=9999) / Raw(b"1to1"),
        from_remote("5.6.7.8", "203.0.113.11") / TCP(sport=33333, dport=80, flags="S"),
    ]
    servers = [
        Ether(src=MAC_SRV, dst=MAC_IN1)
        / IP(src="10.1.0.5", dst="5.6.7.8")
        / TCP(sport=8443, dport=33333, flags="SA"),
    ]
    r = run(tmp, cmds, [[], outside, servers])
    to_servers = r.outputs[2]
    eq(len(to_servers), 2, "the forwarded port and the 1:1 address reach the server")
    p = to_servers[0]
    eq((p[IP].dst, p[TCP].dport, p[IP].src, p[TCP].sport), ("10.1.0.5", 8443, "5.6.7.8", 33333))
    eq(p[Ether].dst, MAC_SRV)
    assert_checksums(p)
    p = to_servers[1]
    eq(
        (p[IP].dst, p[UDP].dport, bytes(p[UDP].payload)),
        ("10.1.0.5", 9999, b"1to1"),
        "1:1 DNAT keeps the host bits (.37 -> .5) and the port",
    )
    assert_checksums(p)
    out = r.outputs[1]
    eq(len(out), 1, "the server's reply")
    eq((out[0][IP].src, out[0][TCP].sport, out[0][IP].dst), ("203.0.113.11", 443, "5.6.7.8"))
    assert_checksums(out[0])
    c = r.counters
    eq(c["drop_unsolicited"], 1, "port 80 is not forwarded")
    eq((c["out2in"], c["in2out"]), (2, 1))
    rows = sorted(r.dump["sessions"], key=lambda row: row["rule"])
    eq([(row["origin"], row["rule"]) for row in rows], [("dnat", 4), ("dnat", 5)])
    eq(rows[0]["tcp_state"], "established")
    eq(r.dump["stats"]["mappings"], 0, "DNAT sessions take no pool port")


@case
def test_unsolicited_inbound_dropped(tmp: Path) -> None:
    outside = [
        from_remote("8.8.8.8", "203.0.113.1") / UDP(sport=53, dport=40000),
        from_remote("8.8.8.8", "203.0.113.1") / TCP(sport=80, dport=40000, flags="S"),
        from_remote("8.8.8.8", "203.0.113.2") / ICMP(type=8, id=40000),
        from_remote("8.8.8.8", "10.0.0.2") / UDP(sport=53, dport=5000),
    ]
    r = run(tmp, ONE_PORT, [[], outside])
    eq(r.outputs, [[], []])
    eq(r.counters["drop_unsolicited"], 4)
    eq(r.dump["stats"]["sessions"], 0)
    eq(r.dump["stats"]["mappings"], 0)


@case
def test_pool_exhaustion_keeps_existing(tmp: Path) -> None:
    cmds = BASE + (
        f"neighbor 10.0.0.4 mac {MAC_H4} dev in0\n"
        "pool small ports 40000-40001 addresses 203.0.113.1\n"
        "rule add id 1 type snat prefix 10.0.0.0/24 protocol any pool small\n"
    )
    # An even, an odd, and another even port: with parity kept (the default),
    # the third finds the pool's one even port taken.
    hosts = ((2, 5000), (3, 5001), (4, 5002))
    first = [from_host(f"10.0.0.{h}", "8.8.8.8") / UDP(sport=p, dport=53) for h, p in hosts]
    again = [from_host(f"10.0.0.{h}", "8.8.4.4") / UDP(sport=p, dport=53) for h, p in hosts]
    r = run(tmp, cmds, [first + again, []])
    out = r.outputs[1]
    eq(len(out), 4, "two hosts, two packets each")
    eq([p[UDP].sport for p in out[:2]], [40000, 40001], "each port's parity kept")
    eq(out[0][UDP].sport, out[2][UDP].sport, "the mapping is kept (EIM)")
    eq(r.counters["drop_pool_exhausted"], 2)
    eq(r.dump["stats"]["mappings"], 2)
    # RFC 5508, out of resources:, destination unreachable code 13
    # back to the refused host, from the NAT's inside address.
    back = r.outputs[0]
    eq(len(back), 2, "an error per refused packet")
    for error, refused in zip(back, (first[2], again[2]), strict=True):
        eq((error[IP].src, error[IP].dst, error[Ether].dst), ("10.0.0.1", "10.0.0.4", MAC_H4))
        eq((error[ICMP].type, error[ICMP].code), (3, 13))
        eq(bytes(error[ICMP].payload), bytes(refused[IP]))
        assert_checksums(error)
    eq(r.counters["icmp_prohibited"], 2)
    r = run(tmp, cmds + "icmp unreachable_on_exhaustion off\n", [first + again, []])
    eq((r.outputs[0], r.counters["icmp_prohibited"]), ([], 0), "turned off")
    eq(r.counters["drop_pool_exhausted"], 2)


@case
def test_malformed_counted(tmp: Path) -> None:
    ok = from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53) / Raw(b"ok")

    def raw_ip() -> Packet:
        return from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53) / Raw(b"x" * 16)

    bad_csum = from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53)
    bad_csum[IP].chksum = 0x1234
    lsrr = (
        Ether(src=MAC_H2, dst=MAC_IN)
        / IP(src="10.0.0.2", dst="8.8.8.8", options=[IPOption_LSRR(routers=["1.2.3.4"])])
        / UDP(sport=5000, dport=53)
    )
    truncated = Raw(bytes(raw_ip())[: 14 + 20 + 4])  # IP total length says more
    short_eth = Raw(bytes(ok)[:10])
    bad_version = Raw(bytes(ok)[:14] + bytes([0x65]) + bytes(ok)[15:])
    ipv6 = Ether(src=MAC_H2, dst=MAC_IN) / IPv6(dst="2001:db8::1") / UDP()
    ttl1 = from_host("10.0.0.2", "8.8.8.8", ttl=1) / UDP(sport=5000, dport=53)
    gre = from_host("10.0.0.2", "8.8.8.8") / Raw(b"\x00" * 8)
    gre[IP].proto = 47
    other_mac = (
        Ether(src=MAC_H2, dst="02:99:99:99:99:99") / IP(src="10.0.0.2", dst="8.8.8.8") / UDP()
    )
    tcp_short = from_host("10.0.0.2", "8.8.8.8") / TCP()
    tcp_short[IP].len = 30  # 10 bytes of TCP: no room for its header
    tcp_short = Raw(bytes(tcp_short)[: 14 + 30])
    udp_len = from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53, len=200) / Raw(b"w")
    pkts = [
        bad_csum,
        lsrr,
        truncated,
        short_eth,
        bad_version,
        ipv6,
        ttl1,
        gre,
        other_mac,
        tcp_short,
        udp_len,
        ok,
    ]
    r = run(
        tmp,
        BASE + "pool p ports 1024-65535 addresses 203.0.113.1\n"
        "rule add id 1 type snat prefix 10.0.0.0/24 protocol any pool p\n",
        [pkts, []],
    )
    out = r.outputs[1]
    eq(len(out), 1, "only the well-formed packet")
    eq(bytes(out[0][UDP].payload), b"ok")
    c = r.counters
    expect = {
        "drop_bad_checksum": 1,
        "drop_ip_options": 1,
        "drop_truncated": 3,
        "drop_malformed": 2,
        "drop_not_ipv4": 1,
        "drop_ttl": 1,
        "icmp_time_exceeded": 1,
        "drop_unsupported": 1,
        "drop_l2_other": 1,
    }
    got = {k: c[k] for k in expect}
    eq(got, expect, "drop counters")
    eq(c["rx"], len(pkts))
    eq(r.dump["stats"]["sessions"], 1)


@case
def test_arp(tmp: Path) -> None:
    inside = [
        Ether(src=MAC_H2, dst="ff:ff:ff:ff:ff:ff")
        / ARP(op=1, hwsrc=MAC_H2, psrc="10.0.0.2", pdst="10.0.0.1"),
        Ether(src=MAC_H2, dst="ff:ff:ff:ff:ff:ff")
        / ARP(op=1, hwsrc=MAC_H2, psrc="10.0.0.2", pdst="10.0.0.77"),
    ]
    outside = [
        Ether(src=MAC_GW, dst="ff:ff:ff:ff:ff:ff")
        / ARP(op=1, hwsrc=MAC_GW, psrc="198.51.100.254", pdst="198.51.100.1"),
        # proxy ARP for the pool's addresses and for DNAT /24-or-longer prefixes
        Ether(src=MAC_GW, dst="ff:ff:ff:ff:ff:ff")
        / ARP(op=1, hwsrc=MAC_GW, psrc="198.51.100.254", pdst="203.0.113.2"),
        Ether(src=MAC_GW, dst="ff:ff:ff:ff:ff:ff")
        / ARP(op=1, hwsrc=MAC_GW, psrc="198.51.100.254", pdst="192.0.2.9"),
        Ether(src=MAC_GW, dst="ff:ff:ff:ff:ff:ff")
        / ARP(op=1, hwsrc=MAC_GW, psrc="198.51.100.254", pdst="198.51.100.77"),
    ]
    cmds = ONE_PORT + "rule add id 9 type dnat prefix 192.0.2.0/24 protocol any to 10.0.0.0/24\n"
    r = run(tmp, cmds, [inside, outside])
    back_in, back_out = r.outputs
    eq(len(back_in), 1)
    a = back_in[0]
    eq(
        (a[ARP].op, a[ARP].psrc, a[ARP].hwsrc, a[ARP].pdst, a[ARP].hwdst),
        (2, "10.0.0.1", MAC_IN, "10.0.0.2", MAC_H2),
    )
    eq((a[Ether].src, a[Ether].dst), (MAC_IN, MAC_H2))
    eq(sorted(p[ARP].psrc for p in back_out), ["192.0.2.9", "198.51.100.1", "203.0.113.2"])
    for p in back_out:
        eq((p[ARP].op, p[ARP].hwsrc, p[ARP].pdst), (2, MAC_OUT, "198.51.100.254"))
    eq(r.counters["arp_replies"], 4)


@case
def test_neighbor_resolution(tmp: Path) -> None:
    # 10.0.0.7 has no static neighbour: its reply is dropped and swpath ARPs for it
    cmds = BASE + (
        "pool p ports 40000-40000 preserve_parity false addresses 203.0.113.1\n"
        "rule add id 1 type snat prefix 10.0.0.7/32 protocol any pool p\n"
    )
    inside = [from_host("10.0.0.7", "8.8.8.8", mac="02:00:00:00:10:07") / UDP(sport=9, dport=53)]
    outside = [from_remote("8.8.8.8", "203.0.113.1") / UDP(sport=53, dport=40000)]
    r = run(tmp, cmds, [inside, outside])
    eq(r.counters["drop_no_neighbor"], 1)
    eq(r.counters["arp_requests"], 1)
    arp = [p for p in r.outputs[0] if ARP in p]
    eq(len(arp), 1)
    eq(
        (arp[0][ARP].op, arp[0][ARP].psrc, arp[0][ARP].pdst, arp[0][Ether].dst),
        (1, "10.0.0.1", "10.0.0.7", "ff:ff:ff:ff:ff:ff"),
    )


@case
def test_icmp_echo_router(tmp: Path) -> None:
    inside = [
        from_host("10.0.0.2", "10.0.0.1") / ICMP(type=8, id=5, seq=1) / Raw(b"hi"),
        from_host("10.0.0.2", "10.0.0.1") / UDP(sport=1, dport=7),
    ]
    outside = [from_remote("8.8.8.8", "198.51.100.1") / ICMP(type=8, id=6, seq=2)]
    r = run(tmp, ONE_PORT, [inside, outside])
    a, b = r.outputs[0], r.outputs[1]
    eq(len(a), 1)
    eq(
        (a[0][IP].src, a[0][IP].dst, a[0][ICMP].type, a[0][ICMP].id, bytes(a[0][ICMP].payload)),
        ("10.0.0.1", "10.0.0.2", 0, 5, b"hi"),
    )
    assert_checksums(a[0])
    eq(len(b), 1)
    eq((b[0][IP].src, b[0][IP].dst, b[0][ICMP].type), ("198.51.100.1", "8.8.8.8", 0))
    assert_checksums(b[0])
    eq(r.counters["icmp_echo_replies"], 2)
    eq(r.counters["drop_local"], 1)


@case
def test_icmp_errors_translated(tmp: Path) -> None:
    sent = from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53) / Raw(b"query")
    inside = [
        sent,
        # the host refuses what the remote sent it (RFC 5508 in2out)
        from_host("10.0.0.2", "8.8.8.8")
        / ICMP(type=3, code=3)
        / IP(src="8.8.8.8", dst="10.0.0.2", ttl=49)
        / UDP(sport=53, dport=5000)
        / Raw(b"answer"),
    ]
    translated = (
        IP(src="203.0.113.1", dst="8.8.8.8", ttl=63) / UDP(sport=40000, dport=53) / Raw(b"query")
    )
    translated = IP(bytes(translated))
    outside = [
        # port unreachable from the remote, quoting the whole datagram
        from_remote("8.8.8.8", "203.0.113.1") / ICMP(type=3, code=3) / translated,
        # time exceeded from a router on the way, quoting 8 bytes of UDP
        from_remote("192.0.2.1", "203.0.113.1")
        / ICMP(type=11, code=0)
        / Raw(bytes(translated)[:28]),
        # an error about a flow we do not have
        from_remote("8.8.8.8", "203.0.113.1")
        / ICMP(type=3, code=3)
        / IP(src="203.0.113.1", dst="8.8.8.8")
        / UDP(sport=40999, dport=53),
    ]
    r = run(tmp, ONE_PORT, [inside, outside])
    back = r.outputs[0]
    eq(len(back), 2)
    for p in back:
        eq((p[IP].src in ("8.8.8.8", "192.0.2.1"), p[IP].dst), (True, "10.0.0.2"))
        inner = IP(bytes(p[ICMP].payload))
        eq((inner.src, inner.dst), ("10.0.0.2", "8.8.8.8"))
        eq(bytes(inner.payload)[:2], (5000).to_bytes(2, "big"), "inner source port")
        assert_checksums(p)  # outer IP and ICMP (over the quote)
        q = inner.copy()
        del q.chksum
        eq(IP(bytes(q)).chksum, inner.chksum, "inner IP checksum")
    full = IP(bytes(back[0][ICMP].payload))
    q = full.copy()
    del q[UDP].chksum
    eq(IP(bytes(q))[UDP].chksum, full[UDP].chksum, "inner UDP checksum")
    out = [p for p in r.outputs[1] if ICMP in p]
    eq(len(out), 1)
    p = out[0]
    eq((p[IP].src, p[IP].dst, p[ICMP].type), ("203.0.113.1", "8.8.8.8", 3))
    inner = IP(bytes(p[ICMP].payload))
    eq(
        (inner.src, inner.dst, inner[UDP].sport, inner[UDP].dport),
        ("8.8.8.8", "203.0.113.1", 53, 40000),
    )
    assert_checksums(p)
    c = r.counters
    eq((c["icmp_error_out2in"], c["icmp_error_in2out"], c["drop_icmp_error"]), (2, 1, 1))


@case
def test_time_exceeded_from_the_nat(tmp: Path) -> None:
    """RFC 1812 sec. 5.3.1: a packet that would leave with TTL 0 is answered with
    time exceeded from the NAT's address on the arrival interface, quoting the
    packet as it arrived; never about an ICMP error, a multicast or a source that
    is not one host (sec. 4.3.2.7)."""
    probe = from_host("10.0.0.2", "8.8.8.8", ttl=1) / UDP(sport=5000, dport=33434) / Raw(b"p")
    quoted = IP(src="8.8.8.8", dst="10.0.0.2") / UDP(sport=53, dport=5000)
    inside = [
        probe,
        from_host("10.0.0.2", "8.8.8.8", ttl=1) / ICMP(type=3, code=3) / bytes(quoted),
        from_host("0.0.0.0", "8.8.8.8", ttl=1) / UDP(sport=68, dport=67),
        from_host("10.0.0.2", "224.0.0.9", ttl=1) / UDP(sport=520, dport=520),
        from_host("10.0.0.2", "8.8.8.8", ttl=2) / UDP(sport=5001, dport=33435),
        # a source routed outside (no rule covers it): its error would leave
        # outside with our inside address (found by the PTF fuzzer)
        from_host("172.16.0.1", "8.8.8.8", ttl=1) / TCP(sport=5002, dport=80),
    ]
    inbound = from_remote("8.8.8.8", "203.0.113.1", ttl=1) / UDP(sport=53, dport=40000)
    r = run(tmp, ONE_PORT, [inside, [inbound]])
    back = r.outputs[0]
    eq(len(back), 1, "one time exceeded inside")
    te = back[0]
    eq((te[Ether].src, te[Ether].dst), (MAC_IN, MAC_H2))
    eq((te[IP].src, te[IP].dst, te[IP].ttl, te[IP].tos), ("10.0.0.1", "10.0.0.2", 64, 0xC0))
    eq((te[ICMP].type, te[ICMP].code), (11, 0))
    eq(bytes(te[ICMP].payload), bytes(probe[IP]), "the whole probe as it arrived")
    assert_checksums(te)
    out = r.outputs[1]
    eq(len(out), 2, "the TTL-2 packet, then the outside probe's error")
    eq((out[0][IP].ttl, out[0][UDP].dport), (1, 33435))
    te = out[1]
    eq((te[Ether].src, te[Ether].dst), (MAC_OUT, MAC_GW))
    eq((te[IP].src, te[IP].dst, te[ICMP].type), ("198.51.100.1", "8.8.8.8", 11))
    eq(bytes(te[ICMP].payload), bytes(inbound[IP]))
    assert_checksums(te)
    c = r.counters
    # The 0.0.0.0 source and the multicast destination never reach the TTL
    # check: the input contract drops them first (IN-IP-5, IN-IP-6).
    eq(
        (c["drop_ttl"], c["icmp_time_exceeded"], c["icmp_error_suppressed"]),
        (4, 2, 2),
        "drop_ttl, icmp_time_exceeded, icmp_error_suppressed",
    )
    eq((c["drop_martian"], c["drop_not_unicast"]), (1, 1), "drop_martian, drop_not_unicast")
    eq(r.dump["stats"]["sessions"], 1, "no session for the expired packets")


@case
def test_icmp_errors_rate_limited(tmp: Path) -> None:
    """RFC 1812 sec. 4.3.2.8: a token bucket of `icmp rate/burst`."""
    probes = [
        from_host("10.0.0.2", "8.8.8.8", ttl=1) / UDP(sport=5000, dport=33434 + i) for i in range(5)
    ]
    r = run(tmp, ONE_PORT + "icmp rate 1 burst 2\n", [probes, []])
    eq(len(r.outputs[0]), 2, "the burst")
    eq((r.counters["icmp_time_exceeded"], r.counters["icmp_error_rate_limited"]), (2, 3))


@case
def test_fragmentation_needed(tmp: Path) -> None:
    """RFC 4787 REQ-13, RFC 1191: a DF packet over the egress MTU gets
    fragmentation needed with the MTU, quoting it as it arrived (before
    translation), in both directions; without DF it is dropped (no
    fragmentation); a packet of exactly the MTU passes."""
    cmds = ONE_PORT.replace(f"mac {MAC_OUT}\n", f"mac {MAC_OUT} mtu 1280\n")

    def outbound(size: int, df: bool) -> Packet:
        pkt = from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53) / Raw(b"a" * size)
        pkt[IP].flags = "DF" if df else 0
        return pkt

    too_big = outbound(1300, True)
    inside = [too_big, outbound(1300, False), outbound(1280 - 28, True), outbound(10, True)]
    inbound = from_remote("8.8.8.8", "203.0.113.1") / UDP(sport=53, dport=40000) / Raw(b"b" * 1572)
    inbound[IP].flags = "DF"
    r = run(tmp, cmds, [inside, [inbound]])
    back = r.outputs[0]
    eq(len(back), 1, "one error inside")
    fn = back[0]
    eq((fn[IP].src, fn[IP].dst, fn[IP].len), ("10.0.0.1", "10.0.0.2", 576))
    eq((fn[ICMP].type, fn[ICMP].code, fn[ICMP].nexthopmtu), (3, 4, 1280))
    eq(bytes(fn)[14 + 28 :], bytes(too_big[IP])[:548], "quote cut to 576 bytes in all")
    assert_checksums(fn)
    out = r.outputs[1]
    eq([len(p[IP]) for p in out[:2]], [1280, 38], "the packets that fit")
    fn = out[2]
    eq((fn[IP].src, fn[IP].dst, fn[Ether].dst), ("198.51.100.1", "8.8.8.8", MAC_GW))
    eq((fn[ICMP].type, fn[ICMP].code, fn[ICMP].nexthopmtu), (3, 4, 1500))
    eq(bytes(fn)[14 + 28 :], bytes(inbound[IP])[:548], "quoted untranslated")
    assert_checksums(fn)
    c = r.counters
    eq((c["drop_mtu"], c["icmp_frag_needed"], c["in2out"]), (3, 2, 2))


@case
def test_hairpinning(tmp: Path) -> None:
    cmds = ONE_PORT + "filtering udp endpoint-independent\n"
    inside = [
        from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=3478),
        # 10.0.0.3 reaches 10.0.0.2 through its external address
        from_host("10.0.0.3", "203.0.113.1", mac=MAC_H3)
        / UDP(sport=6000, dport=40000)
        / Raw(b"p2p"),
        # 10.0.0.2's port unreachable about it goes back to 10.0.0.3 (RFC 5508 sec. 6)
        from_host("10.0.0.2", "203.0.113.2")
        / ICMP(type=3, code=3)
        / bytes(IP(src="203.0.113.2", dst="10.0.0.2", ttl=63) / UDP(sport=40000, dport=5000)),
    ]
    r = run(tmp, cmds, [inside, []])
    back = r.outputs[0]
    eq(len(back), 2)
    p = back[0]
    eq(
        (p[IP].src, p[UDP].sport, p[IP].dst, p[UDP].dport),
        ("203.0.113.2", 40000, "10.0.0.2", 5000),
        "carries the external source (REQ-9)",
    )
    eq(p[IP].ttl, 63, "one hop")
    eq(p[Ether].dst, MAC_H2)
    assert_checksums(p)
    e = back[1]
    eq((e[Ether].dst, e[IP].src, e[IP].dst, e[IP].ttl), (MAC_H3, "203.0.113.1", "10.0.0.3", 63))
    eq((e[ICMP].type, e[ICMP].code), (3, 3))
    eq(
        (e[IPerror].src, e[UDPerror].sport, e[IPerror].dst, e[UDPerror].dport),
        ("10.0.0.3", 6000, "203.0.113.1", 40000),
        "the quoted packet as 10.0.0.3 sent it",
    )
    assert_checksums(e)
    eq(r.counters["hairpin"], 2)
    eq((r.counters["icmp_error_in2out"], r.counters["icmp_error_out2in"]), (1, 1))


@case
def test_hairpinned_packet_over_the_mtu(tmp: Path) -> None:
    """REQ-13 on the hairpin path: the packet learns its egress (the inside
    link, MTU 1280 here) only on its second pass, already translated once;
    the error still quotes it exactly as 10.0.0.3 sent it (source, TTL and
    checksums put back) and goes to 10.0.0.3 from the NAT's inside address."""
    cmds = ONE_PORT.replace(f"mac {MAC_IN}\n", f"mac {MAC_IN} mtu 1280\n")
    cmds += "filtering udp endpoint-independent\n"
    big = (
        from_host("10.0.0.3", "203.0.113.1", mac=MAC_H3)
        / UDP(sport=6000, dport=40000)
        / Raw(b"h" * 1300)
    )
    big[IP].flags = "DF"
    big = Ether(bytes(big))
    inside = [from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=3478), big]
    r = run(tmp, cmds, [inside, []])
    back = r.outputs[0]
    eq(len(back), 1, "the error only")
    e = back[0]
    eq((e[Ether].dst, e[IP].src, e[IP].dst), (MAC_H3, "10.0.0.1", "10.0.0.3"))
    eq((e[ICMP].type, e[ICMP].code, e[ICMP].nexthopmtu), (3, 4, 1280))
    eq(bytes(e)[14 + 28 :], bytes(big[IP])[:548], "the packet as it arrived, cut to 576 bytes")
    assert_checksums(e)
    c = r.counters
    eq((c["hairpin"], c["drop_mtu"], c["icmp_frag_needed"]), (1, 1, 1))


@case
def test_sessions_age_out(tmp: Path) -> None:
    cmds = ONE_PORT + "timeouts udp 1 icmp 1 tcp_transitory 1\n"
    inside = [
        from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53),
        from_host("10.0.0.2", "8.8.8.8") / ICMP(type=8, id=1),
        from_host("10.0.0.3", "1.1.1.1", mac=MAC_H3) / TCP(sport=1, dport=80, flags="S"),
    ]
    r = run(tmp, cmds, [inside, []], idle_ms=2500)
    c = r.counters
    eq(r.dump["stats"]["sessions"], 0)
    eq(r.dump["sessions"], [])
    eq((c["sessions_created"], c["sessions_expired"], c["mappings_freed"]), (3, 3, 3))


def endpoint(text: str) -> Endpoint:
    address, port = text.split(":")
    return Endpoint(parse_ipv4(address), int(port))


@case
def test_mapping_events_logged(tmp: Path) -> None:
    """RFC 6888 REQ-12: one line when a mapping is made and one when its last
    session ages out, in the controller's format (quicknat/events.py), with
    no destination."""
    log = tmp / "events.log"
    cmds = ONE_PORT + f"timeouts udp 1 icmp 1\nlogging events file file {log}\n"
    inside = [
        from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53),
        from_host("10.0.0.2", "9.9.9.9") / UDP(sport=5000, dport=53),  # same mapping
        from_host("10.0.0.2", "8.8.8.8") / ICMP(type=8, id=77),
        from_host("10.0.0.3", "1.1.1.1", mac=MAC_H3) / UDP(sport=6000, dport=123),
    ]
    outside = [from_remote("8.8.8.8", "203.0.113.1") / UDP(sport=53, dport=40000)]
    start = time.time()
    r = run(tmp, cmds, [inside, outside], idle_ms=2500)
    end = time.time()
    c = r.counters
    eq((c["mappings_created"], c["mappings_freed"], c["events_dropped"]), (3, 3, 0))
    mappings = [
        (17, "10.0.0.2:5000", "203.0.113.1:40000"),
        (1, "10.0.0.2:77", "203.0.113.1:40000"),
        (17, "10.0.0.3:6000", "203.0.113.2:40000"),
    ]
    lines = log.read_text().splitlines()
    eq(len(lines), 6, f"lines: {lines}")
    stamps = [calendar.timegm(time.strptime(line.split(" ", 1)[0], TIME_FORMAT)) for line in lines]
    texts = [line.split(" ", 1)[1] for line in lines]
    eq(
        texts[:3],
        [event_text("created", p, endpoint(i), endpoint(e)) for p, i, e in mappings],
        "created, in packet order",
    )
    eq(
        sorted(texts[3:]),
        sorted(event_text("deleted", p, endpoint(i), endpoint(e)) for p, i, e in mappings),
        "deleted once each, after the 1 s timeout",
    )
    assert all(int(start) <= t <= end for t in stamps), (start, stamps, end)
    assert min(stamps[3:]) >= max(stamps[:3]) + 1, stamps
    for remote in ("8.8.8.8", "9.9.9.9", "1.1.1.1"):
        assert remote not in log.read_text(), f"destination {remote} logged"


@case
def test_mapping_events_off(tmp: Path) -> None:
    log = tmp / "events.log"
    cmds = ONE_PORT + f"timeouts udp 1\nlogging events none file {log}\n"
    inside = [from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53)]
    r = run(tmp, cmds, [inside, []], idle_ms=2500)
    eq((r.counters["mappings_created"], r.counters["mappings_freed"]), (1, 1))
    eq(log.exists(), False, "events = none writes nothing")


def reassembled(frags: Sequence[Packet]) -> Packet:
    """The IP datagram a receiver puts back together from these fragments
    (duplicates allowed), as one unfragmented packet."""
    data: dict[int, bytes] = {}
    for f in frags:
        data[f[IP].frag * 8] = bytes(f[IP].payload)[: f[IP].len - f[IP].ihl * 4]
    payload = b"".join(data[k] for k in sorted(data))
    first = frags[0][IP]
    return IP(src=first.src, dst=first.dst, proto=first.proto, id=first.id) / Raw(payload)


def udp_ok(datagram: Packet) -> Packet:
    """The datagram's UDP header, its checksum verified over the whole datagram."""
    got = IP(bytes(datagram))
    again = got.copy()
    del again[UDP].chksum
    again = IP(bytes(again))
    eq(got[UDP].chksum, again[UDP].chksum, "UDP checksum of the reassembled datagram")
    return got


@case
def test_fragments_translated(tmp: Path) -> None:
    """RFC 4787 REQ-14 (IN-IP-8): virtual reassembly, on a PMD that hands
    swpath the fragments themselves. Datagrams in order, out of order (first
    fragment last), with a duplicate fragment, and a reply from outside out
    of order: every fragment leaves translated, and each datagram
    reassembles with the external endpoint and a valid UDP checksum. Orphan
    fragments from one source are held up to the per-source cap and age
    out; a TCP fragment at offset 8 bytes is dropped (RFC 1858)."""
    body = bytes(range(256)) * 11  # three fragments of 1,024 bytes at most

    def frags(pkt: Packet, ident: int) -> list[Packet]:
        pkt[IP].id = ident
        return list(fragment(pkt, fragsize=1024))

    a = frags(from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53) / Raw(body), 100)
    b = frags(from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53) / Raw(body), 101)
    c = frags(from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53) / Raw(body), 102)
    orphans = [
        Ether(src=MAC_H3, dst=MAC_IN)
        / IP(src="10.0.0.3", dst="8.8.8.8", proto=17, id=300 + i, frag=128)
        / Raw(b"o" * 64)
        for i in range(20)
    ]
    tiny = Ether(src=MAC_H2, dst=MAC_IN) / IP(src="10.0.0.2", dst="8.8.8.8", proto=6, frag=1)
    inside = [*a, b[2], b[1], b[0], c[0], c[1], c[1], c[2], *orphans, tiny / Raw(b"t" * 16)]
    reply = frags(
        from_remote("8.8.8.8", "203.0.113.1") / UDP(sport=53, dport=40000) / Raw(body), 200
    )
    r = run(tmp, ONE_PORT, [inside, [reply[1], reply[0], reply[2]]], idle_ms=2600)
    out = r.outputs[1]
    eq(len(out), 10, "three datagrams, one fragment twice")
    for ident in (100, 101, 102):
        mine = [p for p in out if p[IP].id == ident]
        eq({p[IP].src for p in mine}, {"203.0.113.1"}, f"datagram {ident}'s source")
        got = udp_ok(reassembled(mine))
        eq((got[UDP].sport, got[UDP].dport), (40000, 53), f"datagram {ident}'s ports")
        eq(bytes(got[UDP].payload), body, f"datagram {ident}'s data")
        for p in mine:
            header = p[IP].copy()
            del header.chksum
            eq(IP(bytes(header))[IP].chksum, p[IP].chksum, "a fragment's IP checksum")
            eq(p[IP].ttl, 63)
    eq([p[IP].frag for p in out if p[IP].id == 101], [0, 256, 128], "the first, then the held")
    back = r.outputs[0]
    eq(len(back), 3, "the reply's three fragments")
    eq({p[IP].dst for p in back}, {"10.0.0.2"})
    got = udp_ok(reassembled(back))
    eq((got[UDP].sport, got[UDP].dport, bytes(got[UDP].payload)), (53, 5000, body))
    c_ = r.counters
    expect = {
        "frag_translated": 2 + 2 + 3 + 2,
        "frag_held": 2 + 1 + 16,
        "drop_frag_limit": 4,
        "drop_frag_timeout": 16,
        "drop_fragment": 1,
    }
    eq({k: c_[k] for k in expect}, expect, "fragment counters")
    eq(r.dump["stats"]["sessions"], 1, "one session for all of it")


@case
def test_fragments_handed_to_the_owner(tmp: Path) -> None:
    """Two workers: a fragment without ports goes to worker 0, which keeps
    the datagram's ports and hands each fragment to the worker that owns the
    session, the later ones with their ports in the mbuf (SP_META_FRAG)."""
    server = next(f"10.0.0.{h}" for h in range(4, 40) if owner_inside(f"10.0.0.{h}", 2) == 1)
    cmds = BASE + (
        f"neighbor {server} mac {MAC_H4} dev in0\n"
        "rule add id 1 type dnat prefix 203.0.113.9/32 port 5353 protocol udp "
        f"to {server}/32 to_port 53\n"
    )
    body = bytes(range(256)) * 11
    query = from_remote("8.8.8.8", "203.0.113.9") / UDP(sport=999, dport=5353) / Raw(body)
    query[IP].id = 77
    pieces = list(fragment(query, fragsize=1024))
    r = run(tmp, cmds, [[], [pieces[2], pieces[0], pieces[1]]], extra=("--lcores-workers", "2"))
    back = r.outputs[0]
    eq(len(back), 3, "every fragment delivered")
    eq({p[IP].dst for p in back}, {server})
    got = udp_ok(reassembled(back))
    eq((got[UDP].sport, got[UDP].dport, bytes(got[UDP].payload)), (999, 53, body))
    c = r.counters
    eq((c["frag_held"], c["frag_translated"], c["handoff"]), (1, 2, 3), "held, translated, handed")
    eq([lc["sessions"] for lc in r.dump["stats"]["lcores"]], [0, 1], "the session on worker 1")


@case
def test_software_rss_two_workers(tmp: Path) -> None:
    cmds = BASE + (
        "pool public ports 1024-65535 addresses 203.0.113.0/29\n"
        "rule add id 1 type snat prefix 10.0.0.0/16 protocol any pool public\n"
        "route 10.0.0.0/16 dev in0\n"
    )
    inside = [
        Ether(src=MAC_H2, dst=MAC_IN)
        / IP(src=f"10.0.{i // 200}.{i % 200 + 2}", dst="8.8.8.8")
        / UDP(sport=1000 + i, dport=53)
        for i in range(400)
    ]
    r = run(tmp, cmds, [inside, []], extra=("--lcores-workers", "2"))
    eq(len(r.outputs[1]), 400)
    stats = r.dump["stats"]
    eq(stats["workers"], 2)
    eq(stats["dispatch"], "software")
    per = [lc["sessions"] for lc in stats["lcores"]]
    assert min(per) > 100, per
    for row in r.dump["sessions"]:
        internal = row["internal"].split(":")[0]
        ext, port = row["external"].split(":")
        w = row["worker"]
        eq(owner_inside(internal, 2), w, "the host's worker")
        eq(owner_outside(ext, int(port), 2), w, "the reply comes back to the same worker")


@case
def test_two_workers_handoff(tmp: Path) -> None:
    """Flows that cannot be local by construction go to their owner: DNAT
    (the public port hashes to one worker, the server to the other) and
    hairpinning between hosts of different workers."""
    server = next(f"10.1.0.{x}" for x in range(2, 250) if owner_inside(f"10.1.0.{x}", 2) == 1)
    public = next(p for p in range(1000, 2000) if owner_outside("203.0.113.11", p, 2) == 0)
    host_a, host_b = (
        "10.0.0.2",
        next(
            f"10.0.0.{x}"
            for x in range(3, 250)
            if owner_inside(f"10.0.0.{x}", 2) != owner_inside("10.0.0.2", 2)
        ),
    )
    port_a = next(
        p
        for p in range(40000, 41000)
        if owner_outside("203.0.113.1", p, 2) == owner_inside(host_a, 2)
    )
    port_b = next(
        p
        for p in range(40000, 41000)
        if owner_outside("203.0.113.2", p, 2) == owner_inside(host_b, 2)
    )
    cmds = (
        f"interface in0 zone inside port 0 address 10.0.0.1/24 mac {MAC_IN}\n"
        f"interface out0 zone outside port 1 address 198.51.100.1/24 mac {MAC_OUT}\n"
        f"interface in1 zone inside port 2 address 10.1.0.1/24 mac {MAC_IN1}\n"
        "route 0.0.0.0/0 dev out0 via 198.51.100.254\n"
        f"neighbor 198.51.100.254 mac {MAC_GW} dev out0\n"
        f"neighbor {server} mac {MAC_SRV} dev in1\n"
        f"neighbor {host_a} mac {MAC_H2} dev in0\n"
        f"neighbor {host_b} mac {MAC_H3} dev in0\n"
        f"pool pa ports {port_a}-{port_a} preserve_parity false addresses 203.0.113.1\n"
        f"pool pb ports {port_b}-{port_b} preserve_parity false addresses 203.0.113.2\n"
        f"rule add id 1 type snat prefix {host_a}/32 protocol any pool pa\n"
        f"rule add id 2 type snat prefix {host_b}/32 protocol any pool pb\n"
        f"rule add id 3 type dnat prefix 203.0.113.11/32 port {public} protocol tcp "
        f"to {server}/32 to_port 8443\n"
        "filtering udp endpoint-independent\n"
    )
    inside = [
        from_host(host_a, "8.8.8.8") / UDP(sport=5000, dport=3478),
        from_host(host_b, "203.0.113.1", mac=MAC_H3) / UDP(sport=6000, dport=port_a) / Raw(b"hp"),
    ]
    outside = [from_remote("5.6.7.8", "203.0.113.11") / TCP(sport=33333, dport=public, flags="S")]
    servers = [
        Ether(src=MAC_SRV, dst=MAC_IN1)
        / IP(src=server, dst="5.6.7.8")
        / TCP(sport=8443, dport=33333, flags="SA")
    ]
    r = run(tmp, cmds, [inside, outside, servers], extra=("--lcores-workers", "2"))
    p = [q for q in r.outputs[2] if TCP in q]
    eq(len(p), 1, "the SYN reached the server")
    eq((p[0][IP].dst, p[0][TCP].dport), (server, 8443))
    out = [q for q in r.outputs[1] if TCP in q]
    eq(len(out), 1, "the server's reply went out")
    eq((out[0][IP].src, out[0][TCP].sport), ("203.0.113.11", public))
    hp = [q for q in r.outputs[0] if UDP in q]
    eq(len(hp), 1, "hairpinned")
    eq(
        (hp[0][IP].src, hp[0][UDP].sport, hp[0][IP].dst, hp[0][UDP].dport),
        ("203.0.113.2", port_b, host_a, 5000),
    )
    for q in (p[0], out[0], hp[0]):
        assert_checksums(q)
    c = r.counters
    eq(c["handoff"], 2, "the DNAT SYN and the hairpinned packet changed worker")
    by_rule = {row["rule"]: row["worker"] for row in r.dump["sessions"]}
    eq(by_rule[3], 1, "the DNAT session lives with its server")


@case
def test_golden_config_starts(tmp: Path) -> None:
    # the Python compiler's output for the full example (ports 1, 2, 3)
    cmds = (GOLDEN / "full.cmds").read_text()
    r = run(tmp, cmds, [[], [], [], []], idle_ms=200)
    eq(r.dump["stats"]["rules"], 6)
    got = r.dump["rules"].strip().splitlines()
    want = [line for line in cmds.splitlines() if line.startswith("rule add")]
    eq(sorted(got), sorted(want), "rules listed back as given")


def startup_error(
    tmp: Path, commands: str, eal: tuple[str, ...] = (), app: tuple[str, ...] = ()
) -> str:
    (tmp / "c.txt").write_text(commands)
    vdevs = [
        "--vdev",
        f"net_pcap0,rx_pcap={tmp}/e.pcap,tx_pcap={tmp}/o0.pcap",
        "--vdev",
        f"net_pcap1,rx_pcap={tmp}/e.pcap,tx_pcap={tmp}/o1.pcap",
    ]
    wrpcap(str(tmp / "e.pcap"), [], linktype=1)  # an empty capture
    proc = subprocess.run(
        [
            APP,
            *vdevs,
            "--file-prefix",
            PREFIX,
            *eal,
            "--",
            "--commands",
            str(tmp / "c.txt"),
            "--control",
            "none",
            *app,
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    eq(proc.returncode, 2, "exit status")
    lines = proc.stderr.strip().splitlines()
    eq(len(lines), 1, f"one line: {proc.stderr!r}")
    return lines[0]


def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


@case
def test_startup_errors(tmp: Path) -> None:
    line = startup_error(tmp, BASE + "rule add id 1 type snat prefix 10.0.0.0/24 pool nope\n")
    eq(line, f"quicknat-swpath: {tmp}/c.txt:7: rule 1: unknown pool 'nope'")
    line = startup_error(tmp, BASE + "pool p ports 9-8 addresses 1.2.3.4\n")
    assert line.startswith(f"quicknat-swpath: {tmp}/c.txt:7: pool p: ports 9-8"), line
    line = startup_error(tmp, BASE.replace("port 1 address", "port 7 address"))
    assert "c.txt:2: interface out0: DPDK port 7 does not exist" in line, line
    line = startup_error(tmp, BASE, eal=("--bogus",))
    eq(line, "quicknat-swpath: DPDK (EAL) did not start: unrecognized option '--bogus'")
    line = startup_error(tmp, BASE, eal=("--no-huge", "-m", "8"))
    assert "memory" in line, line
    # more sessions than the machine has memory for: refused, not OOM-killed
    # (the heap of memory.h wants ~320 bytes per session)
    workers, sessions = 16, 16_777_216
    if workers * sessions * 320 > mem_available():
        line = startup_error(
            tmp,
            BASE,
            eal=("--no-huge", "-m", "512"),
            app=("--lcores-workers", str(workers), "--sessions", str(sessions)),
        )
        assert line.startswith(
            f"quicknat-swpath: not enough memory: {workers} workers x {sessions} sessions"
        ), line
    # an SNAT 'to' address inside a pool would share its ports (RFC 4787 REQ-3)
    line = startup_error(
        tmp,
        BASE + "pool p ports 1024-65535 addresses 203.0.113.0/29\n"
        "rule add id 3 type snat prefix 10.0.0.0/24 to 203.0.113.3/32\n",
    )
    assert "c.txt:8: rule 3: to 203.0.113.3: " in line and "overlaps pool 'p'" in line, line
    line = startup_error(tmp, BASE + f"logging events file file {tmp}/no/such/dir.log\n")
    eq(
        line,
        f"quicknat-swpath: {tmp}/c.txt:7: logging: file {tmp}/no/such/dir.log: "
        "No such file or directory",
    )
    line = startup_error(tmp, BASE + "logging events kafka\n")
    eq(line, f"quicknat-swpath: {tmp}/c.txt:7: logging: events kafka: must be none, syslog or file")
    line = startup_error(tmp, "interface in0 zone inside port 0\n")
    assert line.endswith("needs at least one inside and one outside interface"), line


# -- main ---------------------------------------------------------------------------


def main() -> int:
    global APP
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", required=True)
    parser.add_argument("-k", default="", help="run tests whose name contains this")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directories")
    args = parser.parse_args()
    APP = args.app
    if os.geteuid() != 0:
        print("sp_e2e: skipped: needs root (DPDK)")
        print("0 passed, 0 failed, 1 skipped")
        return 0
    passed = failed = 0
    for c in CASES:
        if args.k not in c.name:
            continue
        tmp = Path(tempfile.mkdtemp(prefix=f"sp-{c.name}-"))
        try:
            c.fn(tmp)
        except Exception as exc:
            failed += 1
            print(f"FAIL {c.name}: {exc}")
            if not isinstance(exc, AssertionError):
                traceback.print_exc()
            print(f"     (files in {tmp})")
            continue
        passed += 1
        print(f"ok   {c.name}")
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(f"/var/run/dpdk/{PREFIX}", ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
