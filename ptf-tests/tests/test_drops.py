"""What must not pass: unsolicited inbound traffic, flows beyond the pool or
beyond a host's limits (RFC 6888); what passes already keeps passing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

from base import INSIDE, INSIDE2, OUTSIDE, QuickNatTest
from harness.targets import SMALL_TABLE
from packets import (
    HOST_MAC,
    NAT_INSIDE,
    NAT_INSIDE2,
    PUBLIC_POOL,
    ROUTER_IN2_MAC,
    ROUTER_IN_MAC,
    from_inside,
    from_outside,
    udp,
)
from ptf.testutils import group
from scapy.layers.inet import ICMP, IP, UDP
from scapy.packet import Packet


@group("drops")
class UnsolicitedInboundIsDropped(QuickNatTest):
    def runTest(self) -> None:
        target = self.target
        no_mapping = target.counter("unsolicited_no_mapping")
        refused = target.counter("unsolicited")
        # Not a pool or DNAT address: dropped by the data plane itself.
        self.send(OUTSIDE, from_outside("198.51.100.10", "203.0.113.200", udp(53, 4000)))
        self.expect_nothing()
        self.assertEqual(target.counter("unsolicited_no_mapping"), no_mapping + 1)
        # A pool address with no mapping: the NAT refuses it, no session appears.
        # (A target with one counter for both cases has counted the first packet there too.)
        self.send(OUTSIDE, from_outside("198.51.100.10", "203.0.113.1", udp(53, 4000)))
        self.expect_nothing()
        one_counter = target.same_counter("unsolicited_no_mapping", "unsolicited")
        expected = refused + (2 if one_counter else 1)
        target.wait_until("refusal counted", lambda: target.counter("unsolicited") == expected, 5)
        self.assertEqual(target.sessions(), [])


class Refusals(QuickNatTest):
    def expect_prohibited(self, port: int, refused: Packet, router_mac: str, nat: str) -> None:
        """Destination unreachable, administratively prohibited (RFC 5508,
        "out of resources"), from the NAT's address on the host's link,
        quoting the refused packet; and nothing else."""
        host = refused[IP].src
        got = self.receive(port)
        self.assertEqual((got.src, got.dst), (router_mac, HOST_MAC[host]))
        self.assertEqual((got[IP].src, got[IP].dst, got[IP].ttl), (nat, host, 64))
        self.assertEqual((got[ICMP].type, got[ICMP].code), (3, 13))
        self.assertEqual(bytes(got[IP])[28 : got[IP].len], bytes(refused[IP]))
        self.expect_nothing()

    def counted(self, counter: str, expected: int) -> None:
        self.target.wait_until(
            f"{counter} counted", lambda: self.target.counter(counter) == expected, 5
        )


@group("drops")
class PoolExhaustionKeepsExistingFlows(Refusals):
    def runTest(self) -> None:
        # The tiny pool has two ports: two internal endpoints get them.
        external = []
        for sport in (1001, 1002):
            self.send(
                INSIDE2,
                from_inside(
                    "10.0.1.10", "198.51.100.10", udp(sport, 53), router_mac=ROUTER_IN2_MAC
                ),
            )
            out = self.receive(OUTSIDE)
            self.assertEqual(out[IP].src, "203.0.113.9")
            external.append(out[UDP].sport)
        self.assertEqual(sorted(external), [5000, 5001])
        # A third is dropped and counted, with code 13; nothing is evicted.
        refused = from_inside(
            "10.0.1.10", "198.51.100.10", udp(1003, 53), router_mac=ROUTER_IN2_MAC
        )
        self.send(INSIDE2, refused)
        self.expect_prohibited(INSIDE2, refused, ROUTER_IN2_MAC, NAT_INSIDE2)
        self.counted("pool_exhausted", 1)
        self.assertEqual(self.target.counter("icmp_prohibited_sent"), 1)
        for sport, port in zip((1001, 1002), external, strict=True):
            self.send(
                INSIDE2,
                from_inside(
                    "10.0.1.10", "198.51.100.10", udp(sport, 53), router_mac=ROUTER_IN2_MAC
                ),
            )
            self.assertEqual(self.receive(OUTSIDE)[UDP].sport, port)


NO_UNREACHABLE = {"icmp": {"unreachable_on_exhaustion": False}}


@group("drops")
class ExhaustionWithoutUnreachable(Refusals):
    """`[icmp] unreachable_on_exhaustion = false`: the refused flow is dropped
    and counted, and the host hears nothing (the error is optional, RFC 5508)."""

    CONFIG = NO_UNREACHABLE

    def runTest(self) -> None:
        for sport in (1001, 1002):
            self.send(
                INSIDE2,
                from_inside(
                    "10.0.1.10", "198.51.100.10", udp(sport, 53), router_mac=ROUTER_IN2_MAC
                ),
            )
            self.assertEqual(self.receive(OUTSIDE)[IP].src, "203.0.113.9")
        self.send(
            INSIDE2,
            from_inside("10.0.1.10", "198.51.100.10", udp(1003, 53), router_mac=ROUTER_IN2_MAC),
        )
        self.expect_nothing()
        self.counted("pool_exhausted", 1)
        self.assertEqual(self.target.counter("icmp_prohibited_sent"), 0)


LIMITS = {"limits": {"ports_per_host": 2, "sessions_per_host": 3}}


class HostLimits(Refusals):
    CONFIG = LIMITS

    def out(self, src: str, dst: str, sport: int) -> int:
        """A UDP packet from inside; the external port it leaves with."""
        return self.opened(src, dst, udp(sport, 53))[1]


@group("drops")
class PortQuotaPerHost(HostLimits):
    """RFC 6888 REQ-4 (`ports_per_host = 2`): a host's third internal port gets
    no mapping (code 13, counted); its two mappings keep working, and another
    host is not affected."""

    def runTest(self) -> None:
        ports = [self.out("10.0.0.10", "198.51.100.10", sport) for sport in (5300, 5301)]
        refused = from_inside("10.0.0.10", "198.51.100.10", udp(5302, 53))
        self.send(INSIDE, refused)
        self.expect_prohibited(INSIDE, refused, ROUTER_IN_MAC, NAT_INSIDE)
        self.counted("quota_exceeded", 1)
        self.assertEqual([self.out("10.0.0.10", "198.51.100.10", p) for p in (5300, 5301)], ports)
        self.out("10.0.0.20", "198.51.100.10", 5302)
        self.assertEqual(len(self.target.sessions()), 3)
        self.assertEqual(self.target.counter("pool_exhausted"), 0)


@group("drops")
class SessionLimitPerHost(HostLimits):
    """RFC 6888 REQ-5 (`sessions_per_host = 3`): one mapping, three
    destinations; a fourth destination is refused (code 13, counted) although
    the mapping exists, and the three sessions keep working."""

    def runTest(self) -> None:
        remotes = ["198.51.100.10", "198.51.100.11", "198.51.100.12"]
        ports = {self.out("10.0.0.10", remote, 5400) for remote in remotes}
        self.assertEqual(len(ports), 1)  # endpoint-independent mapping
        refused = from_inside("10.0.0.10", "198.51.100.13", udp(5400, 53))
        self.send(INSIDE, refused)
        self.expect_prohibited(INSIDE, refused, ROUTER_IN_MAC, NAT_INSIDE)
        self.counted("session_limit", 1)
        self.assertEqual({self.out("10.0.0.10", remote, 5400) for remote in remotes}, ports)
        self.assertEqual(len(self.target.sessions()), 3)


@group("drops")
class OneHostFloodLeavesOthersTheirFlows(Refusals):
    """Safe defaults (RFC 6888 REQ-4/5): with no `[limits]` in the
    configuration, one host opening more flows than 1/16 of a 65,536-session
    table (4,096) is refused at that share, the refusal is one "quota
    exceeded" event however many flows it refused, and another host still
    opens flows."""

    FLOOD = 4200

    def config_overlay(self, workdir: Path) -> dict[str, Any]:
        self.log = workdir / "events.log"
        self.log.unlink(missing_ok=True)
        # configs/ptf.toml ages UDP out in 4 s, less than a slow switch takes
        return {"logging": {"events": "file", "file": str(self.log)}, "timeouts": {"udp": 120}}

    def flood(self) -> None:
        for sport in range(20000, 20000 + self.FLOOD):
            self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(sport, 53)))

    def runTest(self) -> None:
        limit = 4096

        def held() -> int:
            return sum(s["internal"].startswith("10.0.0.10:") for s in self.target.sessions())

        # A switch's ingress may lose packets of a burst: send again what did
        # not arrive (the flows already open are hits and open nothing).
        for _ in range(3):
            self.flood()
            self.dataplane.flush()
            try:
                self.target.wait_until("the host at its limit", lambda: held() == limit, 20)
                break
            except AssertionError:
                continue
        self.assertEqual(held(), limit)
        self.assertGreater(self.target.counter("session_limit"), 0)
        self.assertEqual(self.target.counter("quota_exceeded"), 0)
        # one more, alone (a switch may have lost some of the burst): refused;
        # first the flood's last packets leave and its refusals are counted
        while self.arrived(OUTSIDE, timeout=1.0) is not None:
            pass
        refused = -1
        while refused != self.target.counter("session_limit"):
            refused = self.target.counter("session_limit")
            time.sleep(0.5)
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(30000, 5353)))
        self.counted("session_limit", refused + 1)
        while (out := self.arrived(OUTSIDE, timeout=0.5)) is not None:
            self.assertNotEqual(out[UDP].dport, 5353, "the refused flow was translated")
        self.assertEqual(held(), limit)
        self.dataplane.flush()
        # another host is not affected
        external, _ = self.opened("10.0.0.20", "198.51.100.10", udp(7000, 53))
        self.assertIn(external, PUBLIC_POOL)
        line = "quota exceeded sessions_per_host 10.0.0.10 4096"
        self.target.wait_until("the quota event", lambda: line in self.log.read_text(), 5)
        self.assertEqual(self.log.read_text().count("quota exceeded"), 1)


@group("drops")
class FullTableRefusesNewFlows(Refusals):
    """RES-3, RES-4: a data path whose connection table holds 64 sessions (the
    P4 program built with 64-entry tables; swpath --sessions 64). One flow
    more is refused and counted with code 13 (out of resources, RFC 5508);
    the 64 keep working, nothing is evicted, and no session is kept for the
    refused flow."""

    TABLE_SIZE = SMALL_TABLE
    CONFIG: ClassVar[dict[str, Any]] = {"timeouts": {"udp": 120}}

    def runTest(self) -> None:
        flows = range(7100, 7100 + SMALL_TABLE)
        ports = [self.opened("10.0.0.10", "198.51.100.10", udp(sport, 53)) for sport in flows]
        self.assertEqual(len(self.target.sessions()), SMALL_TABLE)
        refused = from_inside("10.0.0.10", "198.51.100.10", udp(7200, 53))
        self.send(INSIDE, refused)
        self.expect_prohibited(INSIDE, refused, ROUTER_IN_MAC, NAT_INSIDE)
        self.counted("table_full", 1)
        # a second one, at once: refused again
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(7201, 53)))
        self.counted("table_full", 2)
        self.assertIsNone(self.arrived(OUTSIDE, timeout=0.5), "nothing translated")
        self.assertEqual(len(self.target.sessions()), SMALL_TABLE)
        for sport, port in zip(flows, ports, strict=True):
            self.assertEqual(self.opened("10.0.0.10", "198.51.100.10", udp(sport, 53)), port)
