"""External port choice (RFC 4787 REQ-3, REQ-4): parity, the well-known port
class, and port preservation, the same on both targets."""

from __future__ import annotations

from base import INSIDE, OUTSIDE, QuickNatTest
from packets import KEPT_POOL, PUBLIC_POOL, from_inside, from_outside, tcp, to_inside, udp
from ptf.testutils import group
from scapy.layers.inet import IP, TCP, UDP
from scapy.packet import Packet

REMOTE = "198.51.100.10"


class PortChoice(QuickNatTest):
    def external(self, src: str, l4: Packet) -> tuple[str, int]:
        """Opens a flow from src; its external address and port."""
        self.send(INSIDE, from_inside(src, REMOTE, l4))
        out = self.receive(OUTSIDE)
        layer = TCP if TCP in l4 else UDP
        self.assertEqual(out[layer].dport, l4[layer].dport)
        return out[IP].src, out[layer].sport


@group("ports")
class ExternalPortKeepsParity(PortChoice):
    """The default pool ("public", 1024-65535, preserve_parity by default): every
    flow's external port has its internal port's parity (REQ-4), and a
    well-known internal port gets a port from 1024 up, as the range has no
    other (REQ-3)."""

    def runTest(self) -> None:
        flows = [udp(40010 + i, 53) for i in range(6)] + [tcp(41001 + i, 80) for i in range(4)]
        flows.append(udp(53, 53))
        for l4 in flows:
            address, port = self.external("10.0.0.10", l4)
            self.assertIn(address, PUBLIC_POOL)
            self.assertEqual(port % 2, l4.sport % 2, l4.summary())
            self.assertGreaterEqual(port, 1024)
        self.assertEqual(len(self.target.sessions()), len(flows))


@group("ports")
class PortPreservedWhenFree(PortChoice):
    """Pool "kept" (1-65535, preserve_port): the internal port when it is free,
    else a random port of the same class and parity; never one port for two
    internal endpoints (REQ-3). The reply to a well-known port comes back."""

    def runTest(self) -> None:
        self.assertEqual(self.external("10.0.0.30", udp(5060, 5060)), (KEPT_POOL, 5060))
        _, other = self.external("10.0.0.31", udp(5060, 5060))
        self.assertNotEqual(other, 5060)
        self.assertTrue(other >= 1024 and other % 2 == 0, other)
        self.assertEqual(self.external("10.0.0.30", udp(53, 53)), (KEPT_POOL, 53))
        _, low = self.external("10.0.0.31", udp(53, 53))
        self.assertTrue(low != 53 and 1 <= low <= 1023 and low % 2 == 1, low)
        self.assertEqual(self.external("10.0.0.31", tcp(80, 80)), (KEPT_POOL, 80))
        self.send(OUTSIDE, from_outside(REMOTE, KEPT_POOL, udp(53, low)))
        self.expect(INSIDE, to_inside(REMOTE, "10.0.0.31", udp(53, 53)))
