"""IN-IP-9 through quicknat-swpath on pcap files (a PMD that hands swpath the
fragments themselves; af_packet's kernel reassembles them, and drops
overlaps itself): every fragment attack of harness/fragment_attacks.py
(overlaps that rewrite the transport header, the teardrop pair, a duplicate
first fragment with other ports, past 65,535 bytes, tiny first fragments),
on established TCP, UDP and ICMP echo sessions, from inside and from
outside. Only each datagram's valid first fragment leaves, translated; the
rest is counted drop_frag_overlap, and nothing is held. Run with sp_e2e.py
(`make -C swpath/src e2e`), whose harness it uses."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.fragment_attacks import Attack, attacks
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet
from sp_e2e import MAC_H2, MAC_IN, MAC_OUT, ONE_PORT, PREFIX, REMOTE_MAC, eq, from_host, run

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (DPDK)")


@pytest.fixture(autouse=True, scope="module")
def _runtime_dir() -> Iterator[None]:
    yield
    shutil.rmtree(f"/var/run/dpdk/{PREFIX}", ignore_errors=True)


HOST, REMOTE, EXTERNAL, EXTERNAL_PORT = "10.0.0.2", "8.8.8.8", "203.0.113.1", 40000

# proto: (its session's first packet, (header, smuggled header) from inside,
# the same from outside)
FLOWS: dict[str, tuple[Packet, tuple[Packet, Packet], tuple[Packet, Packet]]] = {
    "udp": (
        UDP(sport=5000, dport=53),
        (UDP(sport=5000, dport=53), UDP(sport=5001, dport=53)),
        (UDP(sport=53, dport=EXTERNAL_PORT), UDP(sport=53, dport=EXTERNAL_PORT + 1)),
    ),
    "tcp": (
        TCP(sport=5000, dport=443, flags="S"),
        (TCP(sport=5000, dport=443, flags="A"), TCP(sport=5001, dport=443, flags="S")),
        (
            TCP(sport=443, dport=EXTERNAL_PORT, flags="A"),
            TCP(sport=443, dport=EXTERNAL_PORT + 1, flags="S"),
        ),
    ),
    "icmp": (
        ICMP(type=8, id=5000),
        (ICMP(type=8, id=5000), ICMP(type=8, id=5001)),
        (ICMP(type=0, id=EXTERNAL_PORT), ICMP(type=0, id=EXTERNAL_PORT + 1)),
    ),
}


def ports(pkt: Packet) -> tuple[int, int]:
    l4 = pkt[IP].payload
    return (l4.id, l4.id) if ICMP in pkt else (l4.sport, l4.dport)


def generated() -> tuple[list[Attack], list[Attack]]:
    """The attacks from inside and from outside, each datagram its own IP ID."""
    inside: list[Attack] = []
    outside: list[Attack] = []
    for i, (_, (l4, other), (back, back_other)) in enumerate(FLOWS.values()):
        inside += attacks(
            Ether(src=MAC_H2, dst=MAC_IN), IP(src=HOST, dst=REMOTE), l4, other, 0x6000 + 32 * i
        )
        outside += attacks(
            Ether(src=REMOTE_MAC, dst=MAC_OUT),
            IP(src=REMOTE, dst=EXTERNAL),
            back,
            back_other,
            0x7000 + 32 * i,
        )
    return inside, outside


def check_forwarded(out: list[Packet], cases: list[Attack], from_inside: bool) -> None:
    """The frames `cases` name as forwarded, translated with the session's
    endpoints (never the smuggled ports), and nothing else."""
    want = {
        (Ether(c.frames[i])[IP].id, Ether(c.frames[i])[IP].frag): c.frames[i]
        for c in cases
        for i in c.forwarded
    }
    got = {(p[IP].id, p[IP].frag): p for p in out}
    eq(sorted(got), sorted(want), "the fragments that left")
    for key, p in got.items():
        sent = Ether(want[key])
        if from_inside:
            eq((p[IP].src, ports(p)[0]), (EXTERNAL, EXTERNAL_PORT), f"fragment {key}")
        else:
            eq((p[IP].dst, ports(p)[1]), (HOST, 5000), f"fragment {key}")
        eq(bytes(p[IP].payload)[20:], bytes(sent[IP].payload)[20:], f"fragment {key}'s data")


def test_fragment_attacks_dropped_and_counted(tmp_path: Path) -> None:
    inside, outside = generated()
    sessions = [from_host(HOST, REMOTE) / first for first, _, _ in FLOWS.values()]
    frames_in = [*sessions, *(Ether(f) for c in inside for f in c.frames)]
    frames_out = [Ether(f) for c in outside for f in c.frames]
    r = run(tmp_path, ONE_PORT, [frames_in, frames_out])
    opened, to_outside = r.outputs[1][:3], r.outputs[1][3:]
    eq([ports(p)[0] for p in opened], [EXTERNAL_PORT] * 3, "the three sessions")
    check_forwarded(to_outside, inside, from_inside=True)
    check_forwarded(r.outputs[0], outside, from_inside=False)
    c = r.counters
    dropped = sum(a.dropped for a in inside + outside)
    assert dropped > 40
    expect = {
        "drop_frag_overlap": dropped,
        "frag_translated": 0,
        "frag_held": 0,
        "drop_frag_timeout": 0,
        "drop_fragment": 0,
    }
    eq({k: c[k] for k in expect}, expect, str(r.nonzero()))
    eq(r.dump["stats"]["sessions"], 3, "no session opened by a smuggled header")
