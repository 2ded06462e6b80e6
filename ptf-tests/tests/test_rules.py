"""DNAT port forwarding, rule priority, and rules changed at run time, through
the data path."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from base import INSIDE, OUTSIDE, QuickNatTest
from harness import configs
from harness.targets import Bmv2Target
from packets import from_inside, from_outside, tcp, to_inside, udp
from ptf.testutils import group
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether


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


@group("runtime")
class RulesChangeAtRunTime(QuickNatTest):
    """`quicknat rule add|del` and `quicknat reload` on a running NAT (the same
    command lines for both paths): new flows get the change at once, an
    established session of a deleted rule keeps going, and `reload --flush`
    ends the sessions of the rules it removes."""

    PEER = "198.51.100.10"
    SERVER = "203.0.113.81"
    RULE = (
        "id 90 type dnat prefix 203.0.113.81/32 port 80 protocol tcp to 10.0.0.20/32 to_port 8080"
    )

    def knock(self, sport: int, flags: str = "S") -> None:
        self.send(OUTSIDE, from_outside(self.PEER, self.SERVER, tcp(sport, 80, flags)))

    def let_in(self, sport: int, flags: str = "S") -> None:
        self.knock(sport, flags)
        self.expect(INSIDE, to_inside(self.PEER, "10.0.0.20", tcp(sport, 8080, flags)))

    def runTest(self) -> None:
        self.knock(5601)
        self.expect_nothing()
        self.target.cli("rule", "add", *self.RULE.split())
        self.assertIn(f"rule add {self.RULE}", self.target.cli("rules"))
        self.let_in(5602)
        self.target.cli("rule", "del", "90")
        self.let_in(5602, "A")  # established: it keeps going
        self.knock(5603)  # a new flow: nothing is published there now
        self.expect_nothing()
        # A file with the rule, reloaded: it is back.
        variant = self.target.workdir / "runtime-rules.toml"
        variant.write_text(
            self.target.config.read_text()
            + '\n[[rule]]\nid = 90\ntype = "dnat"\nprefix = "203.0.113.81"\nport = 80\n'
            + 'protocol = "tcp"\nto = "10.0.0.20"\nto_port = 8080\n'
        )
        self.target.cli("reload", "--config", str(variant))
        self.let_in(5604)
        self.assertEqual(len(self.target.sessions("rule 90")), 2)
        # The original file again, with --flush: the rule's sessions end.
        self.target.cli("reload", "--flush", "--config", str(self.target.config))
        self.target.wait_until(
            "the removed rule's sessions deleted", lambda: not self.target.sessions("rule 90"), 10
        )
        if isinstance(self.target, Bmv2Target):
            # offload mode: the instance forgets them first, and its closed
            # events take the switch's entries away after; a learning
            # switch: their leases end
            self.target.wait_in_switch(0)
        self.let_in_nothing()

    def let_in_nothing(self) -> None:
        self.knock(5604, "A")
        self.expect_nothing()


@group("runtime")
class RoutesChangeAtRunTime(QuickNatTest):
    """`quicknat reload` of a file with one more route (and its next hop's
    neighbour entry), the same file for every path: an established
    session's next packet leaves by the new next hop, translated as before;
    `quicknat routes` lists the route as the data path holds it (swpath its
    table, the controller the switch's routing_v4 read back over
    P4Runtime); the original file takes it away again."""

    # The flow must outlive two reloads: under load they took 4.2 s, over
    # ptf.toml's 4 s UDP timeout, and the flow's third packet got a new
    # mapping (ageing is test_lifecycle's, not this scenario's).
    CONFIG: ClassVar[dict[str, Any]] = {"timeouts": {"udp": 120}}
    GATEWAY_MAC = "02:00:00:00:02:fe"
    HOP, HOP_MAC = "198.51.100.253", "02:00:00:00:02:fd"
    ROUTE: ClassVar[dict[str, object]] = {"prefix": "8.8.8.0/24", "interface": "out0", "via": HOP}

    def leaves(self) -> tuple[str, str, int]:
        """The flow's next packet as it leaves: next hop's MAC, source."""
        self.send(INSIDE, from_inside("10.0.0.10", "8.8.8.8", udp(5700, 53)))
        out = self.receive(OUTSIDE)
        self.assertEqual((out[IP].dst, out[UDP].dport), ("8.8.8.8", 53))
        return out[Ether].dst, out[IP].src, out[UDP].sport

    def routes(self) -> list[dict[str, object]]:
        rows = json.loads(self.target.cli("routes", "--json"))
        return [{key: row[key] for key in self.ROUTE} for row in rows]

    def runTest(self) -> None:
        mac, *source = self.leaves()
        self.assertEqual(mac, self.GATEWAY_MAC)
        if isinstance(self.target, Bmv2Target):
            # the flow's packets meet the switch's routing_v4 from here on
            self.target.wait_in_switch(1)
        self.assertNotIn(self.ROUTE, self.routes())
        route = {"prefix": "8.8.8.0/24", "via": self.HOP, "interface": "out0"}
        neighbor = {"address": self.HOP, "mac": self.HOP_MAC, "interface": "out0"}
        overlay = {"route": [route], "neighbor": [neighbor]}
        variant = configs.variant(self.target.config, overlay, self.target.workdir)
        self.target.cli("reload", "--config", str(variant))
        self.assertIn(self.ROUTE, self.routes())
        self.assertEqual(self.leaves(), (self.HOP_MAC, *source))
        self.target.cli("reload", "--config", str(self.target.config))
        self.assertNotIn(self.ROUTE, self.routes())
        self.assertEqual(self.leaves(), (self.GATEWAY_MAC, *source))
