"""Outbound translation: first and following packets, replies, EIM (TCP, UDP, ICMP echo)."""

from __future__ import annotations

from base import INSIDE, OUTSIDE, QuickNatTest
from harness.targets import Bmv2Target
from packets import (
    GATEWAY_MAC,
    PUBLIC_POOL,
    ROUTER_OUT_MAC,
    echo,
    from_inside,
    from_outside,
    tcp,
    to_inside,
    udp,
)
from ptf.testutils import group
from scapy.layers.inet import ICMP, IP, TCP, UDP


class Outbound(QuickNatTest):
    """Helpers shared by the scenarios: send from inside, check what leaves outside."""

    def translated(self, pkt, layer):  # type: ignore[no-untyped-def]
        self.send(INSIDE, pkt)
        out = self.receive(OUTSIDE)
        self.assertEqual(out.src, ROUTER_OUT_MAC)
        self.assertEqual(out.dst, GATEWAY_MAC)
        self.assertIn(out[IP].src, PUBLIC_POOL)
        self.assertEqual(out[IP].dst, pkt[IP].dst)
        self.assertEqual(out[IP].ttl, pkt[IP].ttl - 1)
        if layer is not ICMP:
            self.assertEqual(out[layer].dport, pkt[layer].dport)
            self.assertTrue(1024 <= out[layer].sport <= 65535)
        return out


@group("translation")
class TcpFlow(Outbound):
    def runTest(self) -> None:
        syn = from_inside("10.0.0.10", "198.51.100.10", tcp(40000, 80))
        out = self.translated(syn, TCP)
        external, port = out[IP].src, out[TCP].sport
        if isinstance(self.target, Bmv2Target):
            # the first packet does not wait for its session's write
            # (docs/controller.md): a packet sent before the entries are in
            # is punted, as it should be
            self.target.wait_in_switch(1)
        # Following packets of the flow are translated by the fast path alone.
        new_flows = self.target.counter("new_flows")
        for flags in ("A", "PA", "A"):
            again = self.translated(
                from_inside("10.0.0.10", "198.51.100.10", tcp(40000, 80, flags)), TCP
            )
            self.assertEqual((again[IP].src, again[TCP].sport), (external, port))
        self.assertEqual(self.target.counter("new_flows"), new_flows)
        # The reply comes back to the inside host, exactly.
        self.send(OUTSIDE, from_outside("198.51.100.10", external, tcp(80, port, "SA")))
        self.expect(INSIDE, to_inside("198.51.100.10", "10.0.0.10", tcp(80, 40000, "SA")))
        sessions = self.target.sessions()
        self.assertEqual(len(sessions), 1, (sessions, self.target.stats()))


@group("translation")
class UdpEndpointIndependentMapping(Outbound):
    def runTest(self) -> None:
        first = self.translated(from_inside("10.0.0.10", "198.51.100.10", udp(5000, 53)), UDP)
        second = self.translated(from_inside("10.0.0.10", "198.51.100.11", udp(5000, 9999)), UDP)
        # RFC 4787 REQ-1: one internal endpoint, one external endpoint.
        self.assertEqual((first[IP].src, first[UDP].sport), (second[IP].src, second[UDP].sport))
        other = self.translated(from_inside("10.0.0.10", "198.51.100.10", udp(5001, 53)), UDP)
        self.assertNotEqual(other[UDP].sport, first[UDP].sport)
        self.send(
            OUTSIDE, from_outside("198.51.100.11", first[IP].src, udp(9999, first[UDP].sport))
        )
        self.expect(INSIDE, to_inside("198.51.100.11", "10.0.0.10", udp(9999, 5000)))


@group("translation")
class PairedPooling(Outbound):
    """RFC 4787 REQ-2: every mapping of one internal address, whatever its
    protocol, port or destination, uses the same external address."""

    def runTest(self) -> None:
        flows = [
            (from_inside("10.0.0.10", "198.51.100.10", udp(5100, 53)), UDP),
            (from_inside("10.0.0.10", "198.51.100.11", udp(5101, 123)), UDP),
            (from_inside("10.0.0.10", "198.51.100.12", tcp(5102, 443)), TCP),
            (from_inside("10.0.0.10", "198.51.100.13", echo(0x77)), ICMP),
        ]
        addresses = {self.translated(pkt, layer)[IP].src for pkt, layer in flows}
        self.assertEqual(len(addresses), 1, addresses)


@group("translation")
class UdpZeroChecksumStaysZero(Outbound):
    def runTest(self) -> None:
        pkt = from_inside("10.0.0.10", "198.51.100.10", udp(5002, 53))
        pkt[UDP].chksum = 0
        out = self.translated(pkt, UDP)
        self.assertEqual(out[UDP].chksum, 0)


@group("translation")
class IcmpEcho(Outbound):
    def runTest(self) -> None:
        out = self.translated(from_inside("10.0.0.10", "198.51.100.10", echo(0x1234, 1)), ICMP)
        identifier = out[ICMP].id
        again = self.translated(from_inside("10.0.0.10", "198.51.100.10", echo(0x1234, 2)), ICMP)
        self.assertEqual(again[ICMP].id, identifier)
        self.send(
            OUTSIDE, from_outside("198.51.100.10", out[IP].src, echo(identifier, 2, reply=True))
        )
        self.expect(INSIDE, to_inside("198.51.100.10", "10.0.0.10", echo(0x1234, 2, reply=True)))
