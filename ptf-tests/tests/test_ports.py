"""External port choice: random (RFC 6056), parity and the well-known port
class (RFC 4787 REQ-3, REQ-4), port preservation, and released ports resting
before reuse (RFC 6888 REQ-8), the same on both targets."""

from __future__ import annotations

from base import INSIDE, OUTSIDE, QuickNatTest
from packets import (
    KEPT_POOL,
    PUBLIC_POOL,
    REST_POOL,
    from_outside,
    tcp,
    to_inside,
    udp,
)
from ptf.testutils import group
from scapy.packet import Packet

REMOTE = "198.51.100.10"
UDP_TIMEOUT = 4  # configs/ptf.toml
# Which port a flow gets depends on the ports that rest (RFC 6888 REQ-8),
# and a flush lets a shared NAT's ports rest: these scenarios, which assert
# the port, get a NAT whose allocator has no port resting.
FRESH_ALLOCATOR = "it asserts which ports a fresh allocator gives"


class PortChoice(QuickNatTest):
    def external(self, src: str, l4: Packet) -> tuple[str, int]:
        """Opens a flow from src; its external address and port."""
        return self.opened(src, REMOTE, l4)


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

    FRESH_NAT = FRESH_ALLOCATOR

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


@group("ports")
class ExternalPortsAreRandom(PortChoice):
    """RFC 6056 / RFC 7857 sec. 3: new mappings get unpredictable ports, not the
    next one up: eight flows in a row land far apart in the 64k range (a
    sequential allocator would put them within 16 ports)."""

    def runTest(self) -> None:
        ports = [self.external("10.0.0.10", udp(42000 + 2 * i, 53))[1] for i in range(8)]
        self.assertEqual(len(set(ports)), 8, ports)
        self.assertGreater(max(ports) - min(ports), 4096, ports)


@group("ports")
class FreedPortsRestBeforeReuse(PortChoice):
    """RFC 6888 REQ-8: a port whose mapping is gone is not handed out again for
    120 s while the pool has another free; when it has none, the rested ports
    serve (a new flow is never refused for resting ports). Pool "rest" has
    eight ports: seven flows take seven, and after they age out the next flow
    must get the eighth."""

    FRESH_NAT = FRESH_ALLOCATOR

    def runTest(self) -> None:
        first = {self.external("10.0.0.40", udp(7001 + i, 53)) for i in range(7)}
        self.assertEqual(len(first), 7, first)
        self.assertEqual({address for address, _ in first}, {REST_POOL})
        self.target.wait_until(
            "the seven sessions expired", lambda: not self.target.sessions(), UDP_TIMEOUT + 15
        )
        rested = {port for _, port in first}
        (never_used,) = set(range(6000, 6008)) - rested
        self.assertEqual(self.external("10.0.0.40", udp(7101, 53)), (REST_POOL, never_used))
        # Only resting ports are left: they are reused, one per new flow.
        again = {self.external("10.0.0.40", udp(7102 + i, 53))[1] for i in range(7)}
        self.assertEqual(again, rested)
        self.assertEqual(self.target.counter("pool_exhausted"), 0)
