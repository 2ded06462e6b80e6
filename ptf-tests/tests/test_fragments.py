"""RFC 4787 REQ-14 (MUST; IN-IP-8 of docs/nat-behavior.md): fragments received
in order and out of order are translated, by virtual reassembly (the P4 path:
the controller, nat/fragments.py; swpath: frag.h). A target whose packet I/O
reassembles first (swpath on af_packet) sees whole datagrams; the receiver's
side is checked the same way on both: the fragments that leave put back
together make the translated datagram, with a valid UDP checksum."""

from __future__ import annotations

from typing import Any, ClassVar

from base import INSIDE, OUTSIDE, QuickNatTest
from packets import PAYLOAD, PUBLIC_POOL, from_inside, from_outside, udp
from ptf.testutils import group
from scapy.layers.inet import IP, UDP, fragment
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

REMOTE = "198.51.100.10"
BODY = bytes(range(200))  # with UDP's 8 bytes and PAYLOAD: four fragments of 64 bytes at most


def pieces(pkt: Packet, ident: int) -> list[Packet]:
    """pkt's IP datagram in fragments of 64 bytes of payload. The IDs the
    scenarios use are far from the fuzzer's (a target whose kernel reassembles
    keeps a partial datagram 30 s, and a stray fragment of the same ID would
    spoil the scenario's)."""
    pkt = Ether(bytes(pkt))
    pkt[IP].id = ident
    pkt = Ether(bytes(pkt))
    return [Ether(src=pkt.src, dst=pkt.dst) / p for p in fragment(pkt[IP], fragsize=64)]


def reassembled(frags: list[Packet]) -> Packet:
    """The datagram a receiver makes of the fragments that arrived."""
    data: dict[int, bytes] = {}
    for f in frags:
        data[f[IP].frag * 8] = bytes(f[IP].payload)[: f[IP].len - f[IP].ihl * 4]
    first = frags[0][IP]
    payload = b"".join(data[k] for k in sorted(data))
    return IP(bytes(IP(src=first.src, dst=first.dst, proto=first.proto, id=first.id) / payload))


class Fragments(QuickNatTest):
    # configs/ptf.toml ages UDP out in 4 s; a scenario takes longer, and a
    # translated fragment is no table hit on a switch (it refreshes nothing)
    CONFIG: ClassVar[dict[str, Any]] = {"timeouts": {"udp": 120}}

    def collect(self, port: int) -> list[Packet]:
        """Every packet on a port until it has been quiet for a second."""
        got = []
        while (pkt := self.arrived(port, timeout=1.0)) is not None:
            got.append(pkt)
        return got

    def check(self, frags: list[Packet], src: str, sport: int, dst: str, dport: int) -> None:
        counters = {k: v for k, v in self.target.stats()["counters"].items() if v}
        self.assertTrue(frags, f"nothing arrived; {counters}")
        datagram = reassembled(frags)
        self.assertEqual((datagram.src, datagram.dst), (src, dst))
        for f in frags:  # every fragment translated, its header checksum right
            self.assertEqual((f[IP].src, f[IP].dst), (src, dst))
            fresh = f[IP].copy()
            del fresh.chksum
            self.assertEqual(IP(bytes(fresh)).chksum, f[IP].chksum)
        self.assertEqual((datagram[UDP].sport, datagram[UDP].dport), (sport, dport))
        self.assertEqual(bytes(datagram[UDP].payload), BODY + PAYLOAD)
        fresh = datagram.copy()
        del fresh[UDP].chksum
        self.assertEqual(IP(bytes(fresh))[UDP].chksum, datagram[UDP].chksum, "UDP checksum")

    def open_udp(self, sport: int) -> tuple[str, int]:
        address, port = self.opened("10.0.0.10", REMOTE, udp(sport, 53))
        self.assertIn(address, PUBLIC_POOL)
        return address, port


@group("fragments")
class FragmentsInOrderAndOutOfOrder(Fragments):
    """An established flow's datagrams in order, with the first fragment last,
    and with a duplicate; a reply from outside out of order."""

    def runTest(self) -> None:
        ext, port = self.open_udp(40100)
        datagram = from_inside("10.0.0.10", REMOTE, udp(40100, 53) / Raw(BODY))
        for ident, order in (
            (0x5A01, [0, 1, 2, 3]),
            (0x5A02, [3, 2, 1, 0]),
            (0x5A03, [0, 1, 1, 2, 3]),
        ):
            frags = pieces(datagram, ident)
            for i in order:
                self.send(INSIDE, frags[i])
            self.check(self.collect(OUTSIDE), ext, port, REMOTE, 53)
        reply = pieces(from_outside(REMOTE, ext, udp(53, port) / Raw(BODY)), 0x5A09)
        for i in (2, 0, 3, 1):
            self.send(OUTSIDE, reply[i])
        self.check(self.collect(INSIDE), REMOTE, 53, "10.0.0.10", 40100)


@group("fragments")
class FirstFragmentOpensTheFlow(Fragments):
    """A datagram whose first fragment is the flow's first packet opens the
    session (one mapping, as an unfragmented packet would); its later
    fragments, sent before it, follow; the flow's next whole packet uses it."""

    def runTest(self) -> None:
        datagram = from_inside("10.0.0.10", REMOTE, udp(40101, 53) / Raw(BODY))
        frags = pieces(datagram, 0x5A05)
        for i in (1, 2, 3, 0):
            self.send(INSIDE, frags[i])
        out = self.collect(OUTSIDE)
        first = next(f for f in out if f[IP].frag == 0) if len(out) > 1 else out[0]
        ext, port = first[IP].src, first[UDP].sport
        self.assertIn(ext, PUBLIC_POOL)
        self.check(out, ext, port, REMOTE, 53)
        self.assertEqual(self.opened("10.0.0.10", REMOTE, udp(40101, 53)), (ext, port))
        self.assertEqual(len(self.target.sessions()), 1)


@group("fragments")
class OrphanFragmentsAreBounded(Fragments):
    """Later fragments whose first never comes: nothing leaves, the NAT holds
    at most 16 datagrams of one source (the rest are dropped and counted where
    the NAT sees fragments), and a flow still works; an overlapping fragment
    of a real datagram leaves translated or not at all."""

    def runTest(self) -> None:
        ext, port = self.open_udp(40102)
        orphan = from_inside("10.0.0.10", REMOTE, udp(40102, 53) / Raw(BODY))
        for ident in range(0x5B00, 0x5B28):
            self.send(INSIDE, pieces(orphan, ident)[2])
        self.assertEqual(self.collect(OUTSIDE), [])
        if not self.target.reassembles_fragments:
            self.target.wait_equal(
                "orphans held and refused",
                lambda: (
                    self.target.counter("fragment_held"),
                    self.target.counter("fragment_over_limit"),
                ),
                (16, 24),
                5,
            )
        frags = pieces(orphan, 0x5A20)
        overlap = frags[1].copy()
        overlap[IP].frag = frags[1][IP].frag - 1  # 8 bytes into the first
        overlap = Ether(bytes(overlap))
        for f in (frags[0], overlap, frags[1], frags[2], frags[3]):
            self.send(INSIDE, f)
        for f in self.collect(OUTSIDE):
            self.assertEqual((f[IP].src, f[IP].dst), (ext, REMOTE), "never untranslated")
        self.assertEqual(self.opened("10.0.0.10", REMOTE, udp(40102, 53)), (ext, port))
