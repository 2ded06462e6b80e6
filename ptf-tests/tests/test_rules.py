"""DNAT port forwarding and rule priority, through the data path."""

from __future__ import annotations

from base import INSIDE, OUTSIDE, QuickNatTest
from packets import from_inside, from_outside, tcp, to_inside, udp
from ptf.testutils import group
from scapy.layers.inet import IP, TCP


@group("dnat")
class PortForwarding(QuickNatTest):
    def runTest(self) -> None:
        self.send(OUTSIDE, from_outside("198.51.100.10", "203.0.113.80", tcp(5555, 80)))
        self.expect(INSIDE, to_inside("198.51.100.10", "10.0.0.20", tcp(5555, 8080)))
        # The server's reply leaves with the published address and port.
        self.send(INSIDE, from_inside("10.0.0.20", "198.51.100.10", tcp(8080, 5555, "SA")))
        out = self.receive(OUTSIDE)
        self.assertEqual((out[IP].src, out[TCP].sport), ("203.0.113.80", 80))
        self.assertEqual((out[IP].dst, out[TCP].dport), ("198.51.100.10", 5555))


@group("priority")
class LongestPrefixAndExactPortWin(QuickNatTest):
    def runTest(self) -> None:
        # 10.0.0.10/32 udp port 5353 -> 203.0.113.7 beats 10.0.0.0/24 -> pool.
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(5353, 5353)))
        self.assertEqual(self.receive(OUTSIDE)[IP].src, "203.0.113.7")
        # Another port of the same host falls back to the /24 rule's pool.
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(5354, 5353)))
        self.assertNotEqual(self.receive(OUTSIDE)[IP].src, "203.0.113.7")
        # TCP from port 5353 does not match the UDP rule either.
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", tcp(5353, 80)))
        out = self.receive(OUTSIDE)
        self.assertNotEqual(out[IP].src, "203.0.113.7")
