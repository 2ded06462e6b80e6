"""The P4 program's offload mode (p4src/include/control/slow_path.p4), on
BMv2: misses leave tagged toward a slow-path instance, what comes back from
one is routed untranslated, established flows stay in the switch.

These scenarios test the program alone. The controller of controller mode
configures the switch (ports, scopes, routes), then stops; the test takes
over as primary and writes the offload-mode entries itself (port_zone,
the selector's members and group, slow_path_out2in, NAT entries) over
P4Runtime, as the offload manager will. PTF sees the slow-path instances'
ports, so every packet a slow path would get is compared byte for byte.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from ipaddress import IPv4Address

from base import INSIDE, INSIDE2, OUTSIDE, RECEIVE_TIMEOUT, QuickNatTest
from finsy.proto import p4r
from harness.targets import Bmv2Target
from packets import (
    GATEWAY_MAC,
    HOST_MAC,
    ROUTER_IN2_MAC,
    ROUTER_IN_MAC,
    ROUTER_OUT_MAC,
    from_inside,
    from_outside,
    tcp,
    udp,
)
from ptf.testutils import group
from quicknat.p4rt.client import P4RuntimeClient
from quicknat.p4rt.entities import (
    Ternary,
    action_profile_group,
    action_profile_member,
    table_entry,
    update,
)
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet

INSERT, MODIFY = p4r.Update.INSERT, p4r.Update.MODIFY
ZONE_INSIDE, ZONE_OUTSIDE, ZONE_SLOW_PATH = 1, 2, 3
SELECTOR = "slow_path_selector"
REMOTE = "198.51.100.10"
POOL = "203.0.113.0"  # the public pool, 203.0.113.0/30 (configs/ptf.toml)
TEST_ELECTION_ID = 100  # above the controller's, so the test is primary


def ip(address: str) -> int:
    return int(IPv4Address(address))


def tagged(pkt: Packet, vid: int) -> Packet:
    """pkt with an 802.1Q tag after its Ethernet header."""
    eth = pkt[Ether]
    return (
        Ether(src=eth.src, dst=eth.dst, type=0x8100)
        / Dot1Q(vlan=vid, type=eth.type)
        / eth.payload.copy()
    )


def from_inside_host(src: str, l4: Packet) -> Packet:
    """A packet from inside host `src` to REMOTE, as the inside link brings it."""
    return Ether(src="02:00:00:00:01:99", dst=ROUTER_IN_MAC) / IP(src=src, dst=REMOTE) / l4


class OffloadProgramTest(QuickNatTest):
    """Stops the controller once it has configured the switch, then writes
    offload-mode entries as the primary client."""

    def setUp(self) -> None:
        super().setUp()
        if not self._switch_alone():
            return
        self.target.stop_nat()
        self.p4info = self.target.pipeline.p4info

    def _switch_alone(self) -> bool:
        return isinstance(self.target, Bmv2Target) and self.target.controller_mode

    def skip_unless_switch(self) -> None:
        if not self._switch_alone():
            self.skipTest(
                "the program's offload tables, written by the test itself: on a switch "
                "target (the offload target runs them with the controller and an instance)"
            )

    def write(self, updates: Sequence[p4r.Update]) -> None:
        async def run() -> None:
            client = P4RuntimeClient(self.target.grpc_addr, 1, TEST_ELECTION_ID)
            await client.connect()
            try:
                errors = await client.write(updates)
                self.assertEqual(errors, [], "the switch refused an offload-mode entry")
            finally:
                await client.close()

        asyncio.run(run())

    def slow_path_ports(self, ports: Sequence[int], inside_ports: Sequence[int]) -> None:
        """Switch ports `ports` lead to slow-path instances: zone 3, one
        selector member each, one group for the inside zone."""
        p = self.p4info
        updates = [
            update(
                MODIFY,
                table_entry(
                    p, "port_zone", {"ingress_port": port}, "set_zone", {"zone": ZONE_SLOW_PATH}
                ),
            )
            for port in ports
        ]
        updates += [
            update(
                INSERT, action_profile_member(p, SELECTOR, i + 1, "to_slow_path", {"port": port})
            )
            for i, port in enumerate(inside_ports)
        ]
        self.write(updates)
        members = list(range(1, len(inside_ports) + 1))
        self.write([update(INSERT, action_profile_group(p, SELECTOR, 1, members, 16))])
        self.write(
            [update(INSERT, table_entry(p, "slow_path_in2out", {"zone": ZONE_INSIDE}, group_id=1))]
        )

    def reached(self, src: str, candidates: Sequence[int]) -> tuple[int, Packet]:
        """The port of `candidates` where the packet just sent from inside host
        `src` came out, and the packet. Whichever port it takes is read, so
        nothing waits out a timeout on the port it did not take; a copy on a
        second port is the next packet any port gets, so the next call (or
        the test's last expect_nothing) finds it."""
        result = self.dataplane.poll(port_number=None, timeout=RECEIVE_TIMEOUT)
        if isinstance(result, self.dataplane.PollFailure):
            self.fail(f"{src}: reached no instance within {RECEIVE_TIMEOUT} s")
        got = Ether(result.packet)
        self.assertIn(result.port, candidates, f"{src}: out of port {result.port}")
        self.assertEqual(got[IP].src, src, f"{src}: a copy of another host's packet on two ports")
        return int(result.port), got

    def hashed_hosts(self) -> dict[str, int]:
        """Where the selector sends each of 32 inside hosts (PTF OUTSIDE or
        INSIDE2: switch ports 2 and 3 as the two instances)."""
        hashed: dict[str, int] = {}
        for n in range(100, 132):
            src = f"10.0.0.{n}"
            self.send(INSIDE, from_inside_host(src, udp(5000, 53)))
            hashed[src] = self.reached(src, (OUTSIDE, INSIDE2))[0]
        self.expect_nothing()  # no copy of the last one either
        return hashed

    def pin(self, hosts: dict[str, int]) -> None:
        """slow_path_pin entries: each inside host (a /32) to a switch port."""
        self.write(
            [
                update(
                    INSERT,
                    table_entry(
                        self.p4info,
                        "slow_path_pin",
                        {"zone": ZONE_INSIDE, "inside_host": (ip(host), 32)},
                        "to_slow_path",
                        {"port": port},
                    ),
                )
                for host, port in hosts.items()
            ]
        )

    def pool_to(self, port: int, block: Ternary | None = None, priority: int = 1) -> None:
        """Outside packets for the pool (with a port in `block`, or any) go to
        `port`."""
        ports = {"has_ports": Ternary(1, 1), "l4_dport": block} if block else {}
        self.write(
            [
                update(
                    INSERT,
                    table_entry(
                        self.p4info,
                        "slow_path_out2in",
                        {"ipv4_dst": Ternary(ip(POOL), 0xFFFFFFFC), **ports},
                        "to_slow_path",
                        {"port": port},
                        priority=priority,
                    ),
                )
            ]
        )

    def drops(self, reason: str) -> int:
        return self.target.drops().get(reason, 0)


@group("offload")
class OffloadMissesGoToTheSlowPath(OffloadProgramTest):
    """New flows from both zones leave as they arrived, tagged with their
    zone, toward the instance; what is out of every scope is still dropped."""

    def runTest(self) -> None:
        self.skip_unless_switch()
        self.slow_path_ports([3], inside_ports=[3])
        self.pool_to(3)

        new_flow = from_inside("10.0.0.10", "198.51.100.10", udp(5000, 53))
        self.send(INSIDE, new_flow)
        self.expect(INSIDE2, tagged(new_flow, ZONE_INSIDE))

        syn = from_inside("10.0.0.10", "198.51.100.10", tcp(5001, 80))
        self.send(INSIDE, syn)
        self.expect(INSIDE2, tagged(syn, ZONE_INSIDE))

        # for the pool, no session in the switch: held in software, maybe
        inbound = from_outside("198.51.100.10", "203.0.113.1", udp(53, 40000))
        self.send(OUTSIDE, inbound)
        self.expect(INSIDE2, tagged(inbound, ZONE_OUTSIDE))

        # neither the pool nor a DNAT address: still the switch's drop
        no_mapping = self.drops("no_mapping")
        self.send(OUTSIDE, from_outside("198.51.100.10", "203.0.113.200", udp(53, 40000)))
        self.expect_nothing()
        self.assertEqual(self.drops("no_mapping"), no_mapping + 1)


@group("offload")
class OffloadReturnIsRoutedUntranslated(OffloadProgramTest):
    """A packet back from an instance is untagged and routed: no NAT lookup,
    no second TTL decrement; a frame without the tag (or with one that is not
    a zone) on a slow-path port, or with a tag elsewhere, is dropped."""

    def runTest(self) -> None:
        self.skip_unless_switch()
        self.slow_path_ports([3], inside_ports=[3])

        out = IP(src="203.0.113.1", dst="198.51.100.10", ttl=63) / udp(7000, 53) / b"x"
        self.send(
            INSIDE2,
            Ether(src="02:00:00:00:0f:01", dst=ROUTER_IN2_MAC) / Dot1Q(vlan=ZONE_OUTSIDE) / out,
        )
        self.expect(OUTSIDE, Ether(src=ROUTER_OUT_MAC, dst=GATEWAY_MAC) / out)

        # TTL 1 leaves as the instance sent it: it decremented and checked
        back = IP(src="198.51.100.10", dst="10.0.0.10", ttl=1) / udp(53, 5000) / b"y"
        self.send(
            INSIDE2,
            Ether(src="02:00:00:00:0f:01", dst=ROUTER_IN2_MAC) / Dot1Q(vlan=ZONE_INSIDE) / back,
        )
        self.expect(INSIDE, Ether(src=ROUTER_IN_MAC, dst=HOST_MAC["10.0.0.10"]) / back)

        tag = self.drops("slow_path_tag")
        self.send(INSIDE2, Ether(src="02:00:00:00:0f:01", dst=ROUTER_IN2_MAC) / out)
        self.send(INSIDE2, Ether(src="02:00:00:00:0f:01", dst=ROUTER_IN2_MAC) / Dot1Q(vlan=7) / out)
        self.expect_nothing()
        self.assertEqual(self.drops("slow_path_tag"), tag + 2)

        ethertype = self.drops("unsupported_ethertype")
        self.send(
            INSIDE, tagged(from_inside("10.0.0.10", "198.51.100.10", udp(5000, 53)), ZONE_INSIDE)
        )
        self.expect_nothing()
        self.assertEqual(self.drops("unsupported_ethertype"), ethertype + 1)


@group("offload")
class OffloadedSessionsStayInTheSwitch(OffloadProgramTest):
    """A session the switch holds is translated there in both directions;
    its TCP SYN, FIN and RST go to the instance untranslated (it keeps the
    TCP state), its data segments do not."""

    def session(
        self,
        proto: int,
        inside: tuple[str, int],
        remote: tuple[str, int],
        external: tuple[str, int],
    ) -> None:
        p = self.p4info
        (i_addr, i_port), (r_addr, r_port), (e_addr, e_port) = inside, remote, external
        self.write(
            [
                update(
                    INSERT,
                    table_entry(
                        p,
                        "nat_in2out",
                        {
                            "ipv4_src": ip(i_addr),
                            "ipv4_dst": ip(r_addr),
                            "ip_proto": proto,
                            "l4_sport": i_port,
                            "l4_dport": r_port,
                        },
                        "rewrite_src",
                        {"addr": ip(e_addr), "port": e_port},
                    ),
                ),
                update(
                    INSERT,
                    table_entry(
                        p,
                        "nat_out2in",
                        {
                            "ipv4_src": ip(r_addr),
                            "ipv4_dst": ip(e_addr),
                            "ip_proto": proto,
                            "l4_sport": r_port,
                            "l4_dport": e_port,
                        },
                        "out2in_rewrite_dst",
                        {"addr": ip(i_addr), "port": i_port},
                    ),
                ),
            ]
        )

    def runTest(self) -> None:
        self.skip_unless_switch()
        self.slow_path_ports([3], inside_ports=[3])
        self.pool_to(3)
        self.session(17, ("10.0.0.10", 5000), ("198.51.100.10", 53), ("203.0.113.1", 7000))
        self.session(6, ("10.0.0.10", 5001), ("198.51.100.10", 80), ("203.0.113.1", 7001))

        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(5000, 53)))
        got = self.receive(OUTSIDE)
        self.assertEqual((got[IP].src, got[UDP].sport, got[IP].ttl), ("203.0.113.1", 7000, 63))
        self.send(OUTSIDE, from_outside("198.51.100.10", "203.0.113.1", udp(53, 7000)))
        got = self.receive(INSIDE)
        self.assertEqual((got[IP].dst, got[UDP].dport), ("10.0.0.10", 5000))

        data = from_inside("10.0.0.10", "198.51.100.10", tcp(5001, 80, "A"))
        self.send(INSIDE, data)
        got = self.receive(OUTSIDE)
        self.assertEqual((got[IP].src, got["TCP"].sport), ("203.0.113.1", 7001))
        for flags in ("S", "FA", "R", "RA"):
            segment = from_inside("10.0.0.10", "198.51.100.10", tcp(5001, 80, flags))
            self.send(INSIDE, segment)
            self.expect(INSIDE2, tagged(segment, ZONE_INSIDE))
        fin = from_outside("198.51.100.10", "203.0.113.1", tcp(80, 7001, "FA"))
        self.send(OUTSIDE, fin)
        self.expect(INSIDE2, tagged(fin, ZONE_OUTSIDE))
        self.expect_nothing()


@group("offload")
class OffloadSpreadsHostsAndPortBlocks(OffloadProgramTest):
    """Two instances: an inside host's misses always reach the same one (the
    selector's hash of its address) and both get hosts; outside misses go to
    the instance that owns the destination port's block (RFC 7422)."""

    def runTest(self) -> None:
        self.skip_unless_switch()
        # switch ports 2 and 3 (PTF OUTSIDE, INSIDE2) are the two instances
        self.slow_path_ports([2, 3], inside_ports=[2, 3])
        where: dict[str, int] = {}
        for n in range(100, 132):
            src = f"10.0.0.{n}"
            for attempt in range(2):
                pkt = (
                    Ether(src="02:00:00:00:01:99", dst=ROUTER_IN_MAC)
                    / IP(src=src, dst="198.51.100.10")
                    / udp(5000 + attempt, 53)
                )
                self.send(INSIDE, pkt)
                port, got = self.reached(src, (OUTSIDE, INSIDE2))
                self.assertEqual(got[Dot1Q].vlan, ZONE_INSIDE)
                self.assertEqual(
                    where.setdefault(src, port), port, f"{src}: its flows reached two instances"
                )
        self.expect_nothing()  # no copy of the last one on the other instance
        self.assertEqual(
            set(where.values()), {OUTSIDE, INSIDE2}, f"32 hosts all on one instance: {where}"
        )


@group("offload")
class OffloadPortBlocksPickTheInstance(OffloadProgramTest):
    """The pool's ports in two blocks, one per instance; what has no port
    (an ICMP error) takes the pool's lowest-priority entry."""

    def runTest(self) -> None:
        self.skip_unless_switch()
        # switch port 1 (PTF INSIDE) and 3 (INSIDE2) are the instances
        self.slow_path_ports([1, 3], inside_ports=[1])
        self.pool_to(1, Ternary(0x0000, 0x8000), priority=10)
        self.pool_to(3, Ternary(0x8000, 0x8000), priority=10)
        self.pool_to(3, priority=1)
        low = from_outside("198.51.100.10", "203.0.113.2", udp(53, 1024))
        high = from_outside("198.51.100.10", "203.0.113.2", udp(53, 40000))
        self.send(OUTSIDE, low)
        self.expect(INSIDE, tagged(low, ZONE_OUTSIDE))
        self.send(OUTSIDE, high)
        self.expect(INSIDE2, tagged(high, ZONE_OUTSIDE))
        error = (
            Ether(src="02:00:00:00:02:99", dst=ROUTER_OUT_MAC)
            / IP(src="198.51.100.10", dst="203.0.113.2")
            / ICMP(type=3, code=3)
            / IP(src="203.0.113.2", dst="198.51.100.10")
            / udp(1024, 53)
        )
        self.send(OUTSIDE, error)
        self.expect(INSIDE2, tagged(error, ZONE_OUTSIDE))
        self.expect_nothing()


@group("offload")
class OffloadPinnedHostsSkipTheSelector(OffloadProgramTest):
    """slow_path_pin sends a rule's hosts (a DNAT server) to the instance
    that takes their outside packets, whatever the selector's hash says;
    other hosts still go by the hash."""

    def runTest(self) -> None:
        self.skip_unless_switch()
        # switch ports 2 and 3 (PTF OUTSIDE, INSIDE2) are the two instances
        self.slow_path_ports([2, 3], inside_ports=[2, 3])
        hashed = self.hashed_hosts()
        on_outside = sorted(src for src, port in hashed.items() if port == OUTSIDE)
        self.assertTrue(on_outside, f"no host hashed to switch port 2: {hashed}")
        server = on_outside[0]
        self.pin({server: 3})
        reply = from_inside_host(server, udp(80, 40000))
        self.send(INSIDE, reply)
        self.expect(INSIDE2, tagged(reply, ZONE_INSIDE))
        other = on_outside[1] if len(on_outside) > 1 else None
        if other is not None:
            pkt = from_inside_host(other, udp(5001, 53))
            self.send(INSIDE, pkt)
            self.expect(OUTSIDE, tagged(pkt, ZONE_INSIDE))
        self.expect_nothing()


@group("offload")
class OffloadInsideIcmpErrorFollowsQuotedHost(OffloadProgramTest):
    """An ICMP error from inside is about the session of the host its quote
    is addressed to (RFC 5508 sec. 4.2), which lives on the instance that
    host's own packets go to: the selector and the pins take the quoted
    destination of an error, not its source (an inside router's address
    hashes anywhere). An error too short to quote a header goes by its
    source."""

    def runTest(self) -> None:
        self.skip_unless_switch()
        # switch ports 2 and 3 (PTF OUTSIDE, INSIDE2) are the two instances
        self.slow_path_ports([2, 3], inside_ports=[2, 3])

        hashed = self.hashed_hosts()
        by_port = {
            port: sorted(src for src, p in hashed.items() if p == port)
            for port in (OUTSIDE, INSIDE2)
        }
        self.assertTrue(all(by_port.values()), f"the selector used one instance only: {hashed}")

        def error_about(router: str, host: str) -> Packet:
            # what the router saw: an outside reply, translated, to the host
            quote = IP(src=REMOTE, dst=host, ttl=1) / udp(53, 5000)
            return from_inside_host(router, ICMP(type=11, code=0) / quote)

        # by the selector: a router hashed to one instance, a host to the other
        for router_port, host_port in ((OUTSIDE, INSIDE2), (INSIDE2, OUTSIDE)):
            router, host = by_port[router_port][0], by_port[host_port][0]
            error = error_about(router, host)
            self.send(INSIDE, error)
            self.expect(host_port, tagged(error, ZONE_INSIDE))

        # by a pin: the router pinned to port 2, the host to port 3
        router, host = "10.0.1.1", "10.0.1.2"
        self.pin({router: 2, host: 3})
        own = from_inside_host(router, udp(5000, 53))
        self.send(INSIDE, own)
        self.expect(OUTSIDE, tagged(own, ZONE_INSIDE))
        error = error_about(router, host)
        self.send(INSIDE, error)
        self.expect(INSIDE2, tagged(error, ZONE_INSIDE))
        # 8 bytes of quote: no header to read, so the router's own instance
        short = from_inside_host(
            router, ICMP(type=11, code=0) / bytes(IP(src=REMOTE, dst=host))[:8]
        )
        self.send(INSIDE, short)
        self.expect(OUTSIDE, tagged(short, ZONE_INSIDE))
        self.expect_nothing()


@group("offload")
class OffloadPeerVidHandsOver(OffloadProgramTest):
    """An instance sends a packet for another with one of that one's peer
    VIDs: the switch hands it over untouched but for the tag its entry gives
    (4: a hairpin's second pass; 5: relayed from the outside link), no NAT,
    no routing; a peer VID without an entry, and the two tags themselves
    from an instance, are dropped SLOW_PATH_TAG."""

    def runTest(self) -> None:
        self.skip_unless_switch()
        # switch ports 1 (PTF INSIDE) and 3 (INSIDE2) are the instances
        self.slow_path_ports([1, 3], inside_ports=[1])
        self.write(
            [
                update(
                    INSERT,
                    table_entry(
                        self.p4info,
                        "slow_path_peer",
                        {"vid": 16 + 2 * i + relay},
                        "hand_off",
                        {"port": port, "vid": 5 if relay else 4},
                    ),
                )
                for i, port in enumerate((1, 3))
                for relay in (0, 1)
            ]
        )
        frame = Ether(src="02:00:00:00:0f:01", dst="02:00:00:00:fe:fe")
        # a hairpin's first pass on the instance at port 1: our own source
        hairpin = IP(src="203.0.113.1", dst="203.0.113.2", ttl=63) / udp(2000, 40000) / b"h"
        self.send(INSIDE, frame / Dot1Q(vlan=18) / hairpin)
        self.expect(INSIDE2, frame / Dot1Q(vlan=4) / hairpin)
        # an ICMP error from outside about the other's port, as it came
        error = (
            IP(src="198.51.100.10", dst="203.0.113.2", ttl=60)
            / ICMP(type=3, code=3)
            / IP(src="203.0.113.2", dst="198.51.100.10")
            / udp(40000, 53)
        )
        self.send(INSIDE, frame / Dot1Q(vlan=19) / error)
        self.expect(INSIDE2, frame / Dot1Q(vlan=5) / error)

        tag = self.drops("slow_path_tag")
        for vid in (20, 4, 5):
            self.send(INSIDE, frame / Dot1Q(vlan=vid) / hairpin)
        self.expect_nothing()
        self.assertEqual(self.drops("slow_path_tag"), tag + 3)
