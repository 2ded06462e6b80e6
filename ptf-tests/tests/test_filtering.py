"""Inbound filtering on a mapping (RFC 4787 sec. 5, REQ-8; RFC 5382 REQ-3):
the three modes, each chosen per protocol. The shared configuration filters
every protocol address-dependently (the default); the other two modes run on
a variant that sets UDP endpoint-independent and TCP address-and-port-dependent
at once, so one configuration shows two modes side by side."""

from __future__ import annotations

from base import INSIDE, OUTSIDE, QuickNatTest
from packets import from_inside, from_outside, tcp, to_inside, udp
from ptf.testutils import group
from scapy.layers.inet import UDP
from scapy.packet import Packet

R1, R2 = "198.51.100.10", "198.51.100.11"


class Filtering(QuickNatTest):
    def mapping(self, l4: Packet) -> tuple[str, int]:
        """10.0.0.10 sends to R1; the external endpoint its mapping got."""
        return self.opened("10.0.0.10", R1, l4)

    def admitted(self, src: str, external: str, l4: Packet, expected: Packet) -> None:
        self.send(OUTSIDE, from_outside(src, external, l4))
        self.expect(INSIDE, to_inside(src, "10.0.0.10", expected))

    def refused(self, src: str, external: str, l4: Packet) -> None:
        before = self.target.counter("filtered")
        sessions = len(self.target.sessions())
        self.send(OUTSIDE, from_outside(src, external, l4))
        self.expect_nothing()
        self.target.wait_until(
            "refusal counted", lambda: self.target.counter("filtered") == before + 1, 5
        )
        self.assertEqual(len(self.target.sessions()), sessions)


@group("filtering")
class AddressDependentFiltering(Filtering):
    """The default: any port of an address the mapping has sent to gets in
    (a new session on the mapping); another address does not."""

    def runTest(self) -> None:
        external, port = self.mapping(udp(5200, 53))
        self.refused(R2, external, udp(53, port))
        self.admitted(R1, external, udp(9999, port), udp(9999, 5200))
        self.assertEqual(len(self.target.sessions()), 2)
        # The refused address is let in once the host has sent to it.
        self.send(INSIDE, from_inside("10.0.0.10", R2, udp(5200, 53)))
        self.assertEqual(self.receive(OUTSIDE)[UDP].sport, port)
        self.admitted(R2, external, udp(53, port), udp(53, 5200))


MODES = {"filtering": {"udp": "endpoint-independent", "tcp": "address-and-port-dependent"}}


@group("filtering")
class EndpointIndependentFiltering(Filtering):
    """UDP endpoint-independent: once the mapping exists, anyone may send to
    it (what a game or VoIP client behind the NAT expects, REQ-8 option)."""

    CONFIG = MODES

    def runTest(self) -> None:
        external, port = self.mapping(udp(5201, 53))
        self.admitted(R2, external, udp(7777, port), udp(7777, 5201))
        self.admitted(R1, external, udp(9999, port), udp(9999, 5201))
        self.assertEqual(len(self.target.sessions()), 3)
        self.assertEqual(self.target.counter("filtered"), 0)


@group("filtering")
class AddressAndPortDependentFiltering(Filtering):
    """TCP address-and-port-dependent (in the same configuration as the UDP
    scenario above): only the exact remote endpoint the host sent to gets in;
    the same address from another port is refused, and so is another address."""

    CONFIG = MODES

    def runTest(self) -> None:
        external, port = self.mapping(tcp(5202, 80))
        self.refused(R1, external, tcp(81, port, "SA"))
        self.refused(R2, external, tcp(80, port, "SA"))
        self.admitted(R1, external, tcp(80, port, "SA"), tcp(80, 5202, "SA"))
        self.assertEqual(len(self.target.sessions()), 1)
