"""Hairpinning (HP-1, HP-2; RFC 4787 REQ-9, RFC 5382 REQ-8, RFC 5508 sec. 6): an inside host
reaches another inside host through that host's public endpoint, and the packet
arrives with the sender's public endpoint as its source. The same scenarios run
on both targets."""

from __future__ import annotations

from base import INSIDE, INSIDE2, OUTSIDE, QuickNatTest
from packets import (
    HOST_MAC,
    PUBLIC_POOL,
    ROUTER_IN2_MAC,
    ROUTER_IN_MAC,
    from_inside,
    tcp,
    to_inside,
    udp,
)
from ptf.testutils import group
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPerror, UDPerror
from scapy.layers.l2 import Ether

RENDEZVOUS = "198.51.100.10"
TINY_POOL = "203.0.113.9"  # 10.0.1.0/24's pool (configs/ptf.toml)


@group("hairpin")
class HairpinToAPublishedServer(QuickNatTest):
    """10.0.0.10 opens TCP to the published 203.0.113.80:80 (DNAT to
    10.0.0.20:8080, on the same inside link): the server sees the client's
    external endpoint, the client sees the published one, nothing leaves by the
    outside port."""

    def runTest(self) -> None:
        self.send(INSIDE, from_inside("10.0.0.10", "203.0.113.80", tcp(41000, 80, "S")))
        got = self.receive(INSIDE)
        self.assertEqual((got.src, got.dst), (ROUTER_IN_MAC, HOST_MAC["10.0.0.20"]))
        self.assertIn(got[IP].src, PUBLIC_POOL)
        self.assertEqual((got[IP].dst, got[TCP].dport, got[TCP].flags), ("10.0.0.20", 8080, "S"))
        self.assertEqual(got[IP].ttl, 63)
        client = (got[IP].src, got[TCP].sport)
        self.send(INSIDE, from_inside("10.0.0.20", client[0], tcp(8080, client[1], "SA")))
        self.expect(INSIDE, to_inside("203.0.113.80", "10.0.0.10", tcp(80, 41000, "SA")))
        self.expect_nothing()


@group("hairpin")
class HairpinHolePunching(QuickNatTest):
    """UDP hole punching between two inside hosts behind this NAT (RFC 4787
    sec. 6 and REQ-9): each learns the other's external endpoint from a
    rendezvous server; with address-dependent filtering the first packet to the
    peer is dropped, but it lets the peer's packet in, and from then on both
    directions pass, each with the sender's external endpoint as source (HP-1).
    Then an ICMP error about a hairpinned packet goes back to its sender (HP-2,
    RFC 5508 sec. 6)."""

    def register(self, port: int, host: str) -> tuple[str, int]:
        self.send(port, from_inside(host, RENDEZVOUS, udp(4000, 3478), router_mac=self.mac(port)))
        got = self.receive(OUTSIDE)
        return got[IP].src, got[UDP].sport

    @staticmethod
    def mac(port: int) -> str:
        return ROUTER_IN_MAC if port == INSIDE else ROUTER_IN2_MAC

    def runTest(self) -> None:
        a_ext = self.register(INSIDE, "10.0.0.10")
        b_ext = self.register(INSIDE2, "10.0.1.10")
        self.assertIn(a_ext[0], PUBLIC_POOL)
        self.assertEqual(b_ext[0], TINY_POOL)

        # a -> b's mapping: b has only talked to the rendezvous server: dropped.
        self.send(INSIDE, from_inside("10.0.0.10", b_ext[0], udp(4000, b_ext[1])))
        self.expect_nothing()

        # b -> a's mapping: a's packet to b opened it; arrives from b's external endpoint.
        punch = from_inside("10.0.1.10", a_ext[0], udp(4000, a_ext[1]), router_mac=ROUTER_IN2_MAC)
        self.send(INSIDE2, punch)
        self.expect(INSIDE, to_inside(b_ext[0], "10.0.0.10", udp(b_ext[1], 4000)))

        # And now a -> b passes too.
        self.send(INSIDE, from_inside("10.0.0.10", b_ext[0], udp(4000, b_ext[1])))
        to_b = to_inside(a_ext[0], "10.0.1.10", udp(a_ext[1], 4000), router_mac=ROUTER_IN2_MAC)
        self.expect(INSIDE2, to_b)

        # b reports port unreachable about what it got: the error reaches a,
        # from b's external address, quoting a's packet as a sent it.
        quoted = IP(src=a_ext[0], dst="10.0.1.10", ttl=63) / UDP(sport=a_ext[1], dport=4000)
        error = (
            Ether(src=HOST_MAC["10.0.1.10"], dst=ROUTER_IN2_MAC)
            / IP(src="10.0.1.10", dst=a_ext[0])
            / ICMP(type=3, code=3)
            / bytes(quoted)
        )
        self.send(INSIDE2, error)
        got = self.receive(INSIDE)
        self.assertEqual((got[IP].src, got[IP].dst, got[IP].ttl), (b_ext[0], "10.0.0.10", 63))
        self.assertEqual((got[ICMP].type, got[ICMP].code), (3, 3))
        self.assertEqual((got[IPerror].src, got[UDPerror].sport), ("10.0.0.10", 4000))
        self.assertEqual((got[IPerror].dst, got[UDPerror].dport), b_ext)
        self.expect_nothing()
