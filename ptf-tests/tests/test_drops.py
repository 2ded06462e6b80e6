"""What must not pass: unsolicited inbound traffic, flows beyond the pool."""

from __future__ import annotations

from base import INSIDE2, OUTSIDE, QuickNatTest
from packets import HOST_MAC, NAT_INSIDE2, ROUTER_IN2_MAC, from_inside, from_outside, udp
from ptf.testutils import group
from scapy.layers.inet import ICMP, IP, UDP


@group("drops")
class UnsolicitedInboundIsDropped(QuickNatTest):
    def runTest(self) -> None:
        target = self.target
        no_mapping = target.counter("unsolicited_no_mapping")
        refused = target.counter("unsolicited_refused")
        # Not a pool or DNAT address: dropped by the data plane itself.
        self.send(OUTSIDE, from_outside("198.51.100.10", "203.0.113.200", udp(53, 4000)))
        self.expect_nothing()
        self.assertEqual(target.counter("unsolicited_no_mapping"), no_mapping + 1)
        # A pool address with no mapping: the NAT refuses it, no session appears.
        # (A target with one counter for both cases has counted the first packet there too.)
        self.send(OUTSIDE, from_outside("198.51.100.10", "203.0.113.1", udp(53, 4000)))
        self.expect_nothing()
        one_counter = target.same_counter("unsolicited_no_mapping", "unsolicited_refused")
        expected = refused + (2 if one_counter else 1)
        target.wait_until(
            "refusal counted", lambda: target.counter("unsolicited_refused") == expected, 5
        )
        self.assertEqual(target.sessions(), [])


@group("drops")
class PoolExhaustionKeepsExistingFlows(QuickNatTest):
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
        # A third is dropped and counted; nothing is evicted. The host gets
        # destination unreachable, administratively prohibited (RFC 5508,
        # "out of resources"), from the NAT's address on its link,
        # quoting the refused packet.
        refused = from_inside(
            "10.0.1.10", "198.51.100.10", udp(1003, 53), router_mac=ROUTER_IN2_MAC
        )
        self.send(INSIDE2, refused)
        got = self.receive(INSIDE2)
        self.assertEqual((got.src, got.dst), (ROUTER_IN2_MAC, HOST_MAC["10.0.1.10"]))
        self.assertEqual((got[IP].src, got[IP].dst, got[IP].ttl), (NAT_INSIDE2, "10.0.1.10", 64))
        self.assertEqual((got[ICMP].type, got[ICMP].code), (3, 13))
        self.assertEqual(bytes(got[IP])[28 : got[IP].len], bytes(refused[IP]))
        self.expect_nothing()
        self.target.wait_until(
            "exhaustion counted", lambda: self.target.counter("pool_exhausted") == 1, 5
        )
        self.assertEqual(self.target.counter("icmp_prohibited_sent"), 1)
        for sport, port in zip((1001, 1002), external, strict=True):
            self.send(
                INSIDE2,
                from_inside(
                    "10.0.1.10", "198.51.100.10", udp(sport, 53), router_mac=ROUTER_IN2_MAC
                ),
            )
            self.assertEqual(self.receive(OUTSIDE)[UDP].sport, port)
