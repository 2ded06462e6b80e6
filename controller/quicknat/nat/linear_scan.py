"""The reference rule lookup: a plain linear scan over rules kept in QNS order.

This is what Netfilter does (first match in a list) and what QNS replaces. It is
the oracle for the generated test vectors and the benchmark's baseline, so it is
written for obviousness; it has the same interface as ``Qns``.
"""

from __future__ import annotations

import bisect

from quicknat.nat.qns import RuleExists, RuleNotFound
from quicknat.rules import PORTED_PROTOCOLS, Protocol, Rule, RuleKind


def priority(rule: Rule) -> tuple[int, int, int]:
    """The total order of docs/qns.md: DNAT first, longer prefix first, then the
    probe form (exact port + exact protocol, exact port + any, wildcard port +
    exact protocol, wildcard + any)."""
    kind_rank = 0 if rule.kind is RuleKind.DNAT else 1
    form = (0 if rule.port is not None else 2) + (1 if rule.protocol is Protocol.ANY else 0)
    return (kind_rank, -rule.prefix.length, form)


def matches(rule: Rule, protocol: int, address: int, port: int) -> bool:
    """Does the rule match a packet whose address and port on the rule's side
    (source for SNAT, destination for DNAT) are these?"""
    if address not in rule.prefix:
        return False
    if rule.protocol is not Protocol.ANY and rule.protocol != protocol:
        return False
    if rule.port is not None:
        return protocol in PORTED_PROTOCOLS and port == rule.port
    return True


class LinearScan:
    def __init__(self) -> None:
        self._rules: list[tuple[tuple[int, int, int], int, Rule]] = []
        # Only to refuse duplicates in O(1); the lookup never uses them.
        self._ids: set[int] = set()
        self._keys: set[tuple[object, ...]] = set()

    def __len__(self) -> int:
        return len(self._rules)

    def add(self, rule: Rule) -> None:
        if rule.id in self._ids or rule.match_key in self._keys:
            raise RuleExists(f"rule {rule.id}: same id or same match as an existing rule")
        self._ids.add(rule.id)
        self._keys.add(rule.match_key)
        bisect.insort(self._rules, (priority(rule), rule.id, rule))

    def remove(self, rule_id: int) -> Rule:
        for index, (_, _, rule) in enumerate(self._rules):
            if rule.id == rule_id:
                del self._rules[index]
                self._ids.discard(rule_id)
                self._keys.discard(rule.match_key)
                return rule
        raise RuleNotFound(f"no rule with id {rule_id}")

    def lookup(self, protocol: int, src: int, sport: int, dst: int, dport: int) -> Rule | None:
        for _, _, rule in self._rules:
            if rule.kind is RuleKind.DNAT:
                if matches(rule, protocol, dst, dport):
                    return rule
            elif matches(rule, protocol, src, sport):
                return rule
        return None

    def lookup_kind(self, kind: RuleKind, protocol: int, address: int, port: int) -> Rule | None:
        for _, _, rule in self._rules:
            if rule.kind is kind and matches(rule, protocol, address, port):
                return rule
        return None
