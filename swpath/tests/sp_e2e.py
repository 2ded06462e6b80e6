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

What PTF cannot reach lives here: swpath's own fragment reassembly (the
kernel reassembles for af_packet), several workers (software RSS, handoff,
fragments handed to their owner), ARP and neighbour resolution, the router's
own echo replies, the ICMP error rate limit, a hairpinned packet over the MTU,
event logging turned off, and start-up (good configurations start, bad ones
fail with a message). The NAT scenarios both targets share are PTF's
(ptf-tests/tests/), run on swpath by the ptf-swpath suite.

Run (root): pytest swpath/tests/sp_e2e.py, with QUICKNAT_SWPATH naming the
binary (default: swpath/build/app/quicknat-swpath).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from quicknat.addr import parse_ipv4
from quicknat.nat.allocator import Endpoint
from scapy.layers.inet import (
    ICMP,
    IP,
    TCP,
    UDP,
    IPOption_NOP,
    IPOption_RR,
    IPOption_Security,
    fragment,
)
from scapy.layers.l2 import ARP, Dot1Q, Ether
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

APP = os.environ.get("QUICKNAT_SWPATH", str(ROOT / "swpath" / "build" / "app" / "quicknat-swpath"))
# Each run's DPDK runtime directory (/var/run/dpdk/PREFIX), removed at the end.
PREFIX = f"sp-e2e-{os.getpid()}"


pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (DPDK)")


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture(autouse=True, scope="module")
def _runtime_dir() -> Iterator[None]:
    yield
    shutil.rmtree(f"/var/run/dpdk/{PREFIX}", ignore_errors=True)


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


# One port for any flow: parity (RFC 4787 REQ-4) off, or odd ports would find none.
ONE_PORT = BASE + (
    "pool p2 ports 40000-40000 preserve_parity false addresses 203.0.113.1\n"
    "pool p3 ports 40000-40000 preserve_parity false addresses 203.0.113.2\n"
    "rule add id 1 type snat prefix 10.0.0.2/32 protocol any pool p2\n"
    "rule add id 2 type snat prefix 10.0.0.3/32 protocol any pool p3\n"
)


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


def test_arp_learns_by_rfc_826_merge(tmp: Path) -> None:
    """RFC 826: an ARP packet's sender updates its entry when there is one
    and makes one only when we are the target. Before, every on-link host
    asking any other taught the NAT its address: on a busy segment, the
    neighbour table filled with hosts it never sends to."""

    def ask(mac: str, src: str, dst: str) -> Packet:
        return Ether(src=mac, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=mac, psrc=src, pdst=dst)

    inside = [
        ask("02:00:00:00:10:50", "10.0.0.50", "10.0.0.1"),  # for us: learned
        ask("02:00:00:00:10:51", "10.0.0.51", "10.0.0.77"),  # another host's: not
        ask(MAC_H2, "10.0.0.2", "10.0.0.77"),  # known: merged
        ask("02:00:00:00:10:52", "10.0.0.52", "10.0.0.52"),  # gratuitous, unknown: not
    ]
    r = run(tmp, BASE, [inside, []])
    eq(r.counters["arp_learned"], 2, "learned: the asker of our address and the known host")
    eq(r.counters["arp_replies"], 1)


def test_arp_address_conflict(tmp: Path) -> None:
    """RFC 5227 sec. 2.4: another MAC claiming one of our addresses (an
    interface's, or on an outside link a pool's) is a conflict: counted,
    logged, not learned or answered, and the address defended by one ARP
    announcement per 10 s. Before, such packets went by unseen: the hosts
    that believed them sent the other host our traffic."""
    rogue = "02:00:00:00:10:66"

    def claim(mac: str, addr: str, target: str, op: int = 1) -> Packet:
        return Ether(src=mac, dst="ff:ff:ff:ff:ff:ff") / ARP(
            op=op, hwsrc=mac, psrc=addr, pdst=target
        )

    inside = [
        claim(rogue, "10.0.0.1", "10.0.0.2"),  # the interface's address
        claim(rogue, "10.0.0.1", "10.0.0.3"),  # again within 10 s: not defended again
        claim(rogue, "203.0.113.1", "10.0.0.2"),  # the pool's, on the inside: not ours there
        claim(MAC_IN, "10.0.0.1", "10.0.0.1"),  # our own announcement, looped back
        claim(MAC_OUT, "10.0.0.1", "10.0.0.2"),  # another of our interfaces on the link
    ]
    outside = [claim(rogue, "203.0.113.1", "203.0.113.1", op=2)]  # the pool's: gratuitous
    r = run(tmp, ONE_PORT, [inside, outside])
    eq(r.counters["arp_conflicts"], 3)
    eq(r.counters["arp_announcements"], 2, "one per address, not per packet")
    eq(r.counters["arp_learned"], 0, "a claim of our address teaches nothing")
    eq(r.counters["arp_replies"], 0)
    for out, mac, addr in (
        (r.outputs[0], MAC_IN, "10.0.0.1"),
        (r.outputs[1], MAC_OUT, "203.0.113.1"),
    ):
        eq(
            [
                (p[Ether].src, p[Ether].dst, p[ARP].op, p[ARP].hwsrc, p[ARP].psrc, p[ARP].pdst)
                for p in out
            ],
            [(mac, "ff:ff:ff:ff:ff:ff", 1, mac, addr, addr)],
            f"the announcement of {addr}",
        )
    assert f"address conflict: 10.0.0.1, its address on in0, is claimed by {rogue}" in r.stderr
    assert f"203.0.113.1, a NAT-owned address on out0, is claimed by {rogue}" in r.stderr
    eq(r.stderr.count("address conflict"), 2, "said once per address per 10 s")


def test_arp_conflict_flood_is_bounded(tmp: Path) -> None:
    """Claims of 20 NAT-owned addresses (a DNAT /24 is proxied, so owned) in
    a row: each is counted, but at most 16 addresses are defended and
    logged per 10 s, so a flood of claims cannot turn into one of
    announcements and log lines."""
    rogue = "02:00:00:00:10:66"
    outside = [
        Ether(src=rogue, dst="ff:ff:ff:ff:ff:ff")
        / ARP(op=2, hwsrc=rogue, psrc=f"192.0.2.{i}", pdst=f"192.0.2.{i}")
        for i in range(1, 21)
    ]
    cmds = ONE_PORT + "rule add id 9 type dnat prefix 192.0.2.0/24 protocol any to 10.0.0.0/24\n"
    r = run(tmp, cmds, [[], outside])
    eq(r.counters["arp_conflicts"], 20)
    eq(r.counters["arp_announcements"], 16)
    eq(len(r.outputs[1]), 16, "announcements on the wire")
    eq(r.stderr.count("address conflict"), 16)


def test_neighbor_resolution(tmp: Path) -> None:
    # 10.0.0.7 has no static neighbour: swpath ARPs for it and holds the
    # reply meanwhile; nothing answers here, so the reply is dropped
    cmds = BASE + (
        "pool p ports 40000-40000 preserve_parity false addresses 203.0.113.1\n"
        "rule add id 1 type snat prefix 10.0.0.7/32 protocol any pool p\n"
    )
    inside = [from_host("10.0.0.7", "8.8.8.8", mac="02:00:00:00:10:07") / UDP(sport=9, dport=53)]
    outside = [from_remote("8.8.8.8", "203.0.113.1") / UDP(sport=53, dport=40000)]
    r = run(tmp, cmds, [inside, outside])
    eq(r.counters["neighbor_held"], 1)
    eq(r.counters["drop_no_neighbor"], 1)
    eq(r.counters["arp_requests"], 1)
    arp = [p for p in r.outputs[0] if ARP in p]
    eq(len(arp), 1)
    eq(
        (arp[0][ARP].op, arp[0][ARP].psrc, arp[0][ARP].pdst, arp[0][Ether].dst),
        (1, "10.0.0.1", "10.0.0.7", "ff:ff:ff:ff:ff:ff"),
    )


def test_neighbor_table_full(tmp: Path) -> None:
    """The neighbour table (4,096 entries) full of configured neighbours,
    which are never removed: an on-link host's ARP request is still answered, the host
    is not learned, and the log says so, once (before, nothing did: its
    packets were dropped with only drop_no_neighbor to tell)."""
    extra = 4096 - 3  # BASE configures three
    cmds = BASE + "".join(
        f"neighbor 10.1.{i // 250}.{i % 250 + 1} mac 02:00:00:01:00:01 dev in0\n"
        for i in range(extra)
    )
    ask = Ether(src="02:00:00:00:10:63", dst="ff:ff:ff:ff:ff:ff") / ARP(
        op=1, hwsrc="02:00:00:00:10:63", psrc="10.0.0.99", pdst="10.0.0.1"
    )
    r = run(tmp, cmds, [[ask], []])
    eq([p[ARP].op for p in r.outputs[0] if ARP in p], [2], "answered")
    assert "neighbor table full (4096 entries): 10.0.0.99 on in0" in r.stderr, r.stderr
    eq(r.stderr.count("neighbor table full"), 1, "said once")


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


def test_icmp_errors_rate_limited(tmp: Path) -> None:
    """RFC 1812 sec. 4.3.2.8: a token bucket of `icmp rate/burst`."""
    probes = [
        from_host("10.0.0.2", "8.8.8.8", ttl=1) / UDP(sport=5000, dport=33434 + i) for i in range(5)
    ]
    r = run(tmp, ONE_PORT + "icmp rate 1 burst 2\n", [probes, []])
    eq(len(r.outputs[0]), 2, "the burst")
    eq((r.counters["icmp_time_exceeded"], r.counters["icmp_error_rate_limited"]), (2, 3))


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


def test_fragmented_over_the_mtu(tmp: Path) -> None:
    """RFC 4787 REQ-13: a packet without DF over the egress MTU is sent as
    fragments, in order; with DF, fragmentation needed (the PTF scenario).
    In to out over a 576-byte link, with IP options: only the first fragment
    carries record route, every fragment the security option (its copied
    flag, RFC 791 sec. 3.1); out to in over a 1280-byte link, without. Each
    fragment leaves translated, each header checksum holds, and the
    fragments reassemble into the translated datagram."""
    cmds = ONE_PORT.replace(f"mac {MAC_OUT}\n", f"mac {MAC_OUT} mtu 576\n")
    cmds = cmds.replace(f"mac {MAC_IN}\n", f"mac {MAC_IN} mtu 1280\n")
    body = bytes(range(256)) * 5 + b"x" * 120  # 1,400 bytes
    security = IPOption_Security(security=0, compartment=0, handling_restrictions=0)
    options = [IPOption_RR(routers=["0.0.0.0"]), IPOption_NOP(), security]
    out = from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53) / Raw(body)
    out[IP].options = options
    out[IP].id = 7
    back = from_remote("8.8.8.8", "203.0.113.1") / UDP(sport=53, dport=40000) / Raw(body)
    back[IP].id = 8
    r = run(tmp, cmds, [[Ether(bytes(out))], [Ether(bytes(back))]])
    sent = r.outputs[1]
    # librte_ip_frag sizes every fragment's data by the first's header
    eq([(p[IP].flags.MF, p[IP].frag) for p in sent], [(1, 0), (1, 67), (0, 134)], "in order")
    eq([len(p[IP]) for p in sent], [40 + 536, 32 + 536, 32 + 336])
    eq([p[IP].ihl for p in sent], [10, 8, 8], "all options, then the copied one")
    eq([o.option for o in sent[1][IP].options if o.option != 0], [2], "security only")
    for p in sent:
        eq((p[IP].src, p[IP].dst, p[IP].id, p[IP].ttl), ("203.0.113.1", "8.8.8.8", 7, 63))
        eq((p[Ether].src, p[Ether].dst), (MAC_OUT, MAC_GW))
        ip_checksum_ok(p)
    got = udp_ok(reassembled(sent))
    eq((got[UDP].sport, got[UDP].dport, bytes(got[UDP].payload)), (40000, 53, body))
    came = r.outputs[0]
    eq([(p[IP].flags.MF, p[IP].frag, len(p[IP])) for p in came], [(1, 0, 1276), (0, 157, 172)])
    for p in came:
        eq((p[IP].src, p[IP].dst, p[Ether].dst), ("8.8.8.8", "10.0.0.2", MAC_H2))
        ip_checksum_ok(p)
    got = udp_ok(reassembled(came))
    eq((got[UDP].sport, got[UDP].dport, bytes(got[UDP].payload)), (53, 5000, body))
    c = r.counters
    eq((c["fragmented"], c["drop_mtu"], c["icmp_frag_needed"]), (2, 0, 0))


def endpoint(text: str) -> Endpoint:
    address, port = text.split(":")
    return Endpoint(parse_ipv4(address), int(port))


def test_mapping_events_off(tmp: Path) -> None:
    log = tmp / "events.log"
    cmds = ONE_PORT + f"timeouts udp 1\nlogging events none file {log}\n"
    inside = [from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53)]
    r = run(tmp, cmds, [inside, []], idle_ms=2500)
    eq((r.counters["mappings_created"], r.counters["mappings_freed"]), (1, 1))
    eq(log.exists(), False, "events = none writes nothing")


def test_open_mappings_end_with_the_process(tmp: Path) -> None:
    """A mapping still open when swpath stops gets its "deleted" line, so a log
    reader sees every mapping end (RFC 6888 REQ-12)."""
    log = tmp / "events.log"
    cmds = ONE_PORT + f"logging events file file {log}\n"
    inside = [from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53)]
    r = run(tmp, cmds, [inside, []])
    eq((r.counters["mappings_created"], r.counters["mappings_freed"]), (1, 0))
    lines = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    eq(
        lines,
        [
            "mapping created udp 10.0.0.2:5000 203.0.113.1:40000",
            "mapping deleted udp 10.0.0.2:5000 203.0.113.1:40000",
        ],
    )


def ip_checksum_ok(p: Packet) -> None:
    """A fragment's header checksum as scapy recomputes it (its transport
    checksum covers the whole datagram: udp_ok over reassembled)."""
    header = p[IP].copy()
    del header.chksum
    eq(IP(bytes(header))[IP].chksum, p[IP].chksum, "a fragment's IP checksum")


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


def test_fragments_translated(tmp: Path) -> None:
    """RFC 4787 REQ-14 (IN-IP-8): virtual reassembly, on a PMD that hands
    swpath the fragments themselves. Datagrams in order, out of order (first
    fragment last), with a duplicate fragment, and a reply from outside out
    of order: every fragment leaves translated (the duplicate is dropped,
    IN-IP-9, and its datagram goes on), and each datagram reassembles with
    the external endpoint and a valid UDP checksum. Orphan fragments from
    one source are held up to the per-source cap and age out; a TCP fragment
    at offset 8 bytes is dropped (RFC 1858). Overlaps:
    sp_e2e_fragments.py."""
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
    eq(len(out), 9, "three datagrams, the duplicate fragment once")
    for ident in (100, 101, 102):
        mine = [p for p in out if p[IP].id == ident]
        eq({p[IP].src for p in mine}, {"203.0.113.1"}, f"datagram {ident}'s source")
        got = udp_ok(reassembled(mine))
        eq((got[UDP].sport, got[UDP].dport), (40000, 53), f"datagram {ident}'s ports")
        eq(bytes(got[UDP].payload), body, f"datagram {ident}'s data")
        for p in mine:
            ip_checksum_ok(p)
            eq(p[IP].ttl, 63)
    eq([p[IP].frag for p in out if p[IP].id == 101], [0, 256, 128], "the first, then the held")
    back = r.outputs[0]
    eq(len(back), 3, "the reply's three fragments")
    eq({p[IP].dst for p in back}, {"10.0.0.2"})
    got = udp_ok(reassembled(back))
    eq((got[UDP].sport, got[UDP].dport, bytes(got[UDP].payload)), (53, 5000, body))
    c_ = r.counters
    expect = {
        "frag_translated": 2 + 2 + 2 + 2,
        "frag_held": 2 + 1 + 16,
        "drop_frag_limit": 4,
        "drop_frag_timeout": 16,
        "drop_frag_overlap": 1 + 1,  # the duplicate, the TCP fragment at offset 8
        "drop_fragment": 0,
    }
    eq({k: c_[k] for k in expect}, expect, "fragment counters")
    eq(r.dump["stats"]["sessions"], 1, "one session for all of it")


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


# A slow-path instance (offload mode) with a peer: this one owns ports
# 1024-40000 of the pool and is the default instance, the peer (VIDs 18 and
# 19) the rest (swpath/src/dataplane/peer.h).
SLOW_PATH = f"""\
interface inside zone inside port 0 vlan 1 slow_path true address 192.0.2.1/30 mac {MAC_IN}
interface outside zone outside port 0 vlan 2 slow_path true address 192.0.2.5/30 mac {MAC_OUT}
route 10.0.0.0/8 dev inside via 192.0.2.2
route 0.0.0.0/0 dev outside via 192.0.2.6
neighbor 192.0.2.2 mac {MAC_GW} dev inside
neighbor 192.0.2.6 mac {MAC_GW} dev outside
pool public ports 1024-40000 addresses 203.0.113.0/29
rule add id 1 type snat prefix 10.0.0.0/24 protocol any pool public
rule add id 2 type dnat prefix 203.0.113.9/32 port 5353 protocol udp to 10.0.0.2/32 to_port 53
peer vid 16 ports 1024-40000 self default
peer vid 18 ports 40001-65535
"""


def tagged(vid: int, pkt: Packet) -> Packet:
    return Ether(src=MAC_GW, dst=MAC_OUT) / Dot1Q(vlan=vid) / pkt[IP]


def test_fragments_of_a_peers_flow_are_relayed(tmp: Path) -> None:
    """The switch reads no port of a fragment, so every fragment from
    outside comes to the default instance (on a PMD that hands swpath the
    fragments themselves; af_packet's kernel reassembles them). A datagram
    for the peer's block goes on to it with its relay VID, every fragment as
    it came, the first first; one the peer relays here (VID 5) for a
    session here is translated as from the link."""
    body = bytes(range(256)) * 4
    peers = from_remote("8.8.8.8", "203.0.113.2") / UDP(sport=53, dport=50000) / Raw(body)
    peers[IP].id = 41
    theirs = list(fragment(peers, fragsize=512))
    dnat = from_remote("8.8.8.8", "203.0.113.9") / UDP(sport=999, dport=5353) / Raw(body)
    dnat[IP].id = 42
    ours = list(fragment(dnat, fragsize=512))
    frames = [tagged(2, theirs[1]), tagged(2, theirs[0]), tagged(2, theirs[2])]
    frames += [tagged(5, f) for f in (ours[1], ours[0], ours[2])]
    cmds = SLOW_PATH + f"neighbor 10.0.0.2 mac {MAC_H2} dev inside\n"
    r = run(tmp, cmds, [frames])
    out = r.outputs[0]
    relayed = [p for p in out if p[Dot1Q].vlan == 19]
    eq(
        [bytes(p[IP]) for p in relayed],
        [bytes(f[IP]) for f in theirs],
        "relayed as they came, in order",
    )
    delivered = [p for p in out if p[Dot1Q].vlan == 1]
    eq(len(delivered), 3, "the relayed DNAT datagram translated")
    eq({(p[IP].dst, p[IP].ttl) for p in delivered}, {("10.0.0.2", 49)})
    got = udp_ok(reassembled(delivered))
    eq((got[UDP].sport, got[UDP].dport, bytes(got[UDP].payload)), (999, 53, body))
    c = r.counters
    eq(
        (c["peer_handoff"], c["peer_received"], c["out2in"], c["frag_translated"]),
        (3, 3, 3, 2),
        str(r.nonzero()),
    )


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
    # a state file (--state) where none can be made
    line = startup_error(tmp, BASE, app=("--state", f"{tmp}/no/such/dir.state"))
    assert line.startswith(f"quicknat-swpath: state {tmp}/no/such/dir.state.new: cannot make a "), (
        line
    )
    assert line.endswith("No such file or directory (a tmpfs such as /dev/shm or /run is meant)"), (
        line
    )
    line = startup_error(tmp, BASE + "logging events kafka\n")
    eq(line, f"quicknat-swpath: {tmp}/c.txt:7: logging: events kafka: must be none, syslog or file")
    line = startup_error(tmp, "interface in0 zone inside port 0\n")
    assert line.endswith("needs at least one inside and one outside interface"), line


def test_peer_startup_errors(tmp: Path) -> None:
    """A list of slow-path peers the switch could not steer by is refused
    with the line that breaks it: overlapping tags or blocks, two of this
    one or of the default, none that is this one, no way to the switch."""
    peerless = SLOW_PATH.split("peer vid")[0]
    cases = {
        "peer vid 16 ports 1024-40000 self\npeer vid 17 ports 40001-65535\n": (
            "c.txt:11: peer vid 17: overlaps vid 16 (each instance has two, V and V + 1)"
        ),
        "peer vid 16 ports 1024-40000 self\npeer vid 18 ports 40000-65535\n": (
            "c.txt:11: peer vid 18: ports 40000-65535 overlap those of vid 16 (1024-40000)"
        ),
        "peer vid 16 ports 1024-40000 self\npeer vid 18 ports 40001-65535 self\n": (
            "c.txt:11: peer vid 18: a second 'self' (vid 16 is)"
        ),
        "peer vid 16 ports 1024-40000 default\npeer vid 18 ports 40001-65535 default\n": (
            "c.txt:11: peer vid 18: a second 'default' (vid 16 is)"
        ),
        "peer vid 16 ports 1024-40000\npeer vid 18 ports 40001-65535\n": (
            "peer: none is 'self' (which instance is this one?)"
        ),
    }
    for peers, message in cases.items():
        line = startup_error(tmp, peerless + peers)
        assert message in line, (peers, line)
    line = startup_error(tmp, BASE + "peer vid 16 ports 1024-65535 self\n")
    assert "peer: needs an outside interface with slow_path true" in line, line


def test_log_format_json(tmp: Path) -> None:
    """--log-format json: a start-up failure, from DPDK's side or ours, is one
    JSON object with the controller's keys (quicknat/log_format.py)."""
    for eal, commands in (((), BASE + "frobnicate\n"), (("--no-such-eal-option",), BASE)):
        line = startup_error(tmp, commands, eal=eal, app=("--log-format", "json"))
        record = json.loads(line)
        eq(record["level"], "error")
        eq(record["process"], "quicknat-swpath")
        assert record["time"].endswith("Z"), record
        assert record["message"], record
    line = startup_error(tmp, "frobnicate\n", app=("--log-format", "yaml"))
    assert "--log-format yaml: must be text or json" in line, line
