#!/usr/bin/env python3
"""Write generated.json: random, heavily overlapping rules and packets, with
every expected answer computed by the linear-scan reference (never by QNS).

Deterministic (fixed seed): `make test` re-runs it and checks the committed file
is unchanged. Run it with the project's virtualenv:
    .venv/bin/python tests/vectors/qns/gen_generated.py [OUTPUT]
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from quicknat.addr import Prefix, mask_of, parse_ipv4
from quicknat.nat.linear_scan import LinearScan
from quicknat.nat.qns import QnsError
from quicknat.nat.qns_vectors import Add, Lookup, Packet, Remove, Step, Vector, dump_vector
from quicknat.rules import PORTED_PROTOCOLS, Protocol, Rule, RuleKind

SEED = 4787
INITIAL_RULES = 400
STEPS = 2000
# A small address space so that prefixes of different lengths overlap a lot.
SPACES = {RuleKind.SNAT: parse_ipv4("10.0.0.0"), RuleKind.DNAT: parse_ipv4("203.0.112.0")}
SPACE_BITS = 12
LENGTHS = [0, 8, 16, 20, 22, 23, 24, 24, 26, 28, 30, 31, 32, 32]
RULE_PORTS = [None, None, None, 0, 53, 80, 443, 65535]
PACKET_PORTS = [0, 53, 80, 443, 1024, 40000, 65535]
RULE_PROTOCOLS = [Protocol.TCP, Protocol.UDP, Protocol.ICMP, Protocol.ANY, Protocol.ANY]
PACKET_PROTOCOLS = [6, 6, 17, 17, 1, 47]


class Generator:
    def __init__(self) -> None:
        self.rng = random.Random(SEED)
        self.reference = LinearScan()
        self.live: dict[int, Rule] = {}
        self.next_id = 1

    def address(self, kind: RuleKind) -> int:
        return SPACES[kind] | self.rng.getrandbits(SPACE_BITS)

    def rule(self) -> Rule:
        kind = self.rng.choice([RuleKind.SNAT, RuleKind.SNAT, RuleKind.DNAT])
        length = self.rng.choice(LENGTHS)
        port = self.rng.choice(RULE_PORTS)
        protocol = self.rng.choice(RULE_PROTOCOLS)
        if length < 20 and port is None:
            # A wildcard /0 to /16 would swallow every lookup; keep short prefixes
            # port-specific so that the vector exercises all the other rules too.
            port = self.rng.choice(RULE_PORTS[3:])
        if port is not None and protocol not in PORTED_PROTOCOLS:
            protocol = Protocol.ANY
        prefix = Prefix(self.address(kind) & mask_of(length), length)
        rule = Rule(self.next_id, kind, prefix, port, protocol)
        self.next_id += 1
        return rule

    def try_add(self, rule: Rule) -> bool:
        try:
            self.reference.add(rule)
        except QnsError:
            return False
        self.live[rule.id] = rule
        return True

    def packet(self) -> Packet:
        rng = self.rng
        protocol = rng.choice(PACKET_PROTOCOLS)
        # The side no rule is aimed at is anywhere in the address space half the
        # time, so DNAT rules do not shadow every SNAT lookup.
        src = self.address(RuleKind.SNAT) if rng.random() < 0.5 else rng.getrandbits(32)
        dst = self.address(RuleKind.DNAT) if rng.random() < 0.5 else rng.getrandbits(32)
        sport, dport = rng.choice(PACKET_PORTS), rng.choice(PACKET_PORTS)
        if self.live and rng.random() < 0.7:  # aim at a rule, so most lookups hit
            rule = self.live[rng.choice(list(self.live))]
            inside = rule.prefix.address | (rng.getrandbits(32) & ~rule.prefix.mask & 0xFFFFFFFF)
            if rule.protocol is not Protocol.ANY:
                protocol = int(rule.protocol)
            port = rule.port if rule.port is not None else rng.choice(PACKET_PORTS)
            if rule.kind is RuleKind.SNAT:
                src, sport = inside, port
            else:
                dst, dport = inside, port
        if protocol not in PORTED_PROTOCOLS:
            sport = dport = 0
        return Packet(protocol, src, dst, sport, dport)

    def lookup(self) -> Lookup:
        packet = self.packet()
        kind = self.rng.choice([None] * 8 + [RuleKind.SNAT, RuleKind.DNAT])
        p = packet
        if kind is None:
            found = self.reference.lookup(p.protocol, p.src, p.sport, p.dst, p.dport)
        elif kind is RuleKind.SNAT:
            found = self.reference.lookup_kind(kind, p.protocol, p.src, p.sport)
        else:
            found = self.reference.lookup_kind(kind, p.protocol, p.dst, p.dport)
        return Lookup(packet, None if found is None else found.id, kind)

    def change(self) -> Step:
        rng = self.rng
        if self.live and rng.random() < 0.5:
            rule_id = rng.choice(list(self.live))
            del self.live[rule_id]
            self.reference.remove(rule_id)
            return Remove(rule_id)
        if self.live and rng.random() < 0.1:  # a conflicting add, refused
            twin = self.live[rng.choice(list(self.live))]
            clash = Rule(self.next_id, twin.kind, twin.prefix, twin.port, twin.protocol)
            self.next_id += 1
            return Add(clash, "exists")
        while True:
            rule = self.rule()
            if self.try_add(rule):
                return Add(rule)

    def vector(self) -> Vector:
        rules = []
        while len(rules) < INITIAL_RULES:
            rule = self.rule()
            if self.try_add(rule):
                rules.append(rule)
        steps = [self.change() if self.rng.random() < 0.08 else self.lookup() for _ in range(STEPS)]
        return Vector(
            "generated",
            f"Generated by gen_generated.py (seed {SEED}): {INITIAL_RULES} overlapping rules "
            "over 13 prefix lengths (/0 to /32), lookups mostly aimed at rules, adds and removes "
            "between them; expectations from the linear-scan reference.",
            rules,
            steps,
        )


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("generated.json")
    out.write_text(dump_vector(Generator().vector()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
