"""QNS unit tests: the API contract and lookup order (docs/qns.md)."""

from __future__ import annotations

import random

import pytest
from quicknat.addr import Prefix, mask_of, parse_ipv4
from quicknat.nat.linear_scan import LinearScan
from quicknat.nat.qns import InvalidRule, Qns, RuleExists, RuleNotFound
from quicknat.rules import Protocol, Rule, RuleKind

TCP, UDP, ICMP = int(Protocol.TCP), int(Protocol.UDP), int(Protocol.ICMP)
SNAT, DNAT = RuleKind.SNAT, RuleKind.DNAT


def rule(
    rule_id: int,
    kind: RuleKind,
    prefix: str,
    port: int | None = None,
    protocol: Protocol = Protocol.ANY,
) -> Rule:
    return Rule(rule_id, kind, Prefix.parse(prefix), port, protocol)


def ip(text: str) -> int:
    return parse_ipv4(text)


def found(qns: Qns, protocol: int, src: str, sport: int, dst: str, dport: int) -> int | None:
    result = qns.lookup(protocol, ip(src), sport, ip(dst), dport)
    return None if result is None else result.id


def test_empty_table_matches_nothing() -> None:
    assert found(Qns(), TCP, "10.0.0.1", 1, "8.8.8.8", 2) is None


def test_paper_worked_example() -> None:
    qns = Qns()
    qns.add(rule(1, SNAT, "192.168.88.0/24", protocol=Protocol.TCP))
    assert found(qns, TCP, "192.168.88.32", 1234, "103.235.46.39", 80) == 1
    assert found(qns, UDP, "192.168.88.32", 1234, "103.235.46.39", 80) is None


@pytest.mark.parametrize(
    ("winner", "loser"),
    [
        # DNAT before SNAT, even a /0 DNAT against a /32 SNAT with exact port.
        (rule(1, DNAT, "0.0.0.0/0"), rule(2, SNAT, "10.0.0.1/32", 1000, Protocol.TCP)),
        # Longer prefix first, even wildcard against exact port and protocol.
        (rule(1, SNAT, "10.0.0.1/32"), rule(2, SNAT, "10.0.0.0/31", 1000, Protocol.TCP)),
        # Probe forms inside one sub-table.
        (rule(1, SNAT, "10.0.0.0/24", 1000, Protocol.TCP), rule(2, SNAT, "10.0.0.0/24", 1000)),
        (rule(1, SNAT, "10.0.0.0/24", 1000), rule(2, SNAT, "10.0.0.0/24", None, Protocol.TCP)),
        (rule(1, SNAT, "10.0.0.0/24", None, Protocol.TCP), rule(2, SNAT, "10.0.0.0/24")),
    ],
)
def test_order_is_independent_of_insertion_order(winner: Rule, loser: Rule) -> None:
    for rules in ([winner, loser], [loser, winner]):
        qns = Qns()
        for r in rules:
            qns.add(r)
        assert found(qns, TCP, "10.0.0.1", 1000, "198.51.100.1", 80) == winner.id


def test_ported_rules_never_match_packets_without_ports() -> None:
    qns = Qns()
    qns.add(rule(1, SNAT, "10.0.0.0/24", 0))
    assert found(qns, ICMP, "10.0.0.1", 0, "8.8.8.8", 0) is None
    assert found(qns, 47, "10.0.0.1", 0, "8.8.8.8", 0) is None
    assert found(qns, TCP, "10.0.0.1", 0, "8.8.8.8", 0) == 1


def test_duplicate_id_and_duplicate_match_are_refused() -> None:
    qns = Qns()
    qns.add(rule(1, SNAT, "10.0.0.0/24", 80, Protocol.TCP))
    with pytest.raises(RuleExists):
        qns.add(rule(1, SNAT, "10.9.0.0/24"))
    with pytest.raises(RuleExists):
        qns.add(rule(2, SNAT, "10.0.0.0/24", 80, Protocol.TCP))
    # Same prefix under the other kind, or another port, is a different rule.
    qns.add(rule(3, DNAT, "10.0.0.0/24", 80, Protocol.TCP))
    qns.add(rule(4, SNAT, "10.0.0.0/24", 81, Protocol.TCP))
    assert len(qns) == 3


def test_invalid_rules_are_refused() -> None:
    qns = Qns()
    with pytest.raises(InvalidRule):
        qns.add(rule(0, SNAT, "10.0.0.0/24"))
    with pytest.raises(InvalidRule):
        qns.add(rule(1, SNAT, "10.0.0.0/24", 7, Protocol.ICMP))
    assert len(qns) == 0


def test_remove_restores_the_previous_answer_and_empty_tables_are_skipped() -> None:
    qns = Qns()
    qns.add(rule(1, SNAT, "10.0.0.0/8"))
    qns.add(rule(2, SNAT, "10.0.0.0/24"))
    assert found(qns, TCP, "10.0.0.1", 1, "8.8.8.8", 2) == 2
    assert qns.remove(2).id == 2
    assert found(qns, TCP, "10.0.0.1", 1, "8.8.8.8", 2) == 1
    assert qns.get(2) is None
    with pytest.raises(RuleNotFound):
        qns.remove(2)
    qns.remove(1)
    assert found(qns, TCP, "10.0.0.1", 1, "8.8.8.8", 2) is None
    assert len(qns) == 0


def test_lookup_kind_restricts_to_one_kind() -> None:
    qns = Qns()
    qns.add(rule(1, DNAT, "203.0.113.0/24"))
    qns.add(rule(2, SNAT, "10.0.0.0/8"))
    assert qns.lookup(TCP, ip("10.0.0.1"), 1, ip("203.0.113.5"), 2).id == 1  # type: ignore[union-attr]
    snat = qns.lookup_kind(SNAT, TCP, ip("10.0.0.1"), 1)
    assert snat is not None and snat.id == 2
    assert qns.lookup_kind(DNAT, TCP, ip("10.0.0.1"), 1) is None


def test_random_rules_agree_with_linear_scan_through_adds_and_removes() -> None:
    rng = random.Random(5382)
    qns, reference = Qns(), LinearScan()
    live: list[int] = []
    for rule_id in range(1, 3000):
        if live and rng.random() < 0.3:
            victim = live.pop(rng.randrange(len(live)))
            assert qns.remove(victim) == reference.remove(victim)
            continue
        length = rng.choice([0, 8, 16, 24, 28, 32])
        kind = rng.choice([SNAT, DNAT])
        protocol = rng.choice([Protocol.TCP, Protocol.UDP, Protocol.ANY])
        port = rng.choice([None, 0, 80, 65535])
        address = (parse_ipv4("10.0.0.0") | rng.getrandbits(8)) & mask_of(length)
        candidate = Rule(rule_id, kind, Prefix(address, length), port, protocol)
        try:
            reference.add(candidate)
        except RuleExists:
            with pytest.raises(RuleExists):
                qns.add(candidate)
            continue
        qns.add(candidate)
        live.append(rule_id)
        for _ in range(3):
            proto = rng.choice([TCP, UDP, ICMP])
            src, dst = parse_ipv4("10.0.0.0") | rng.getrandbits(8), rng.getrandbits(32)
            sport, dport = rng.choice([0, 80, 65535, 1234]), rng.choice([0, 80, 53])
            if rng.random() < 0.5:
                src, dst = dst, src
            expected = reference.lookup(proto, src, sport, dst, dport)
            assert qns.lookup(proto, src, sport, dst, dport) is expected


def test_rules_around_block_boundaries_agree_with_linear_scan() -> None:
    """Lookups visit /16../32 sub-tables per /16 block and shorter ones always:
    rules just shorter than, as long as and longer than a block, over a few
    neighbouring blocks, added and removed until every list has been rebuilt."""
    rng = random.Random(1616)
    qns, reference = Qns(), LinearScan()
    live: list[int] = []
    taken: set[object] = set()  # match keys

    def near() -> int:  # 10.0.0.0/8 with bits 17..15 and the last octet varied
        return parse_ipv4("10.0.0.0") | rng.getrandbits(3) << 15 | rng.getrandbits(8)

    for rule_id in range(1, 4000):
        if live and rng.random() < (0.3 if rule_id < 3000 else 0.9):
            victim = live.pop(rng.randrange(len(live)))
            removed = qns.remove(victim)
            assert removed == reference.remove(victim)
            taken.remove(removed.match_key)
        else:
            length = rng.choice([0, 8, 14, 15, 16, 17, 24, 32])
            candidate = Rule(
                rule_id,
                rng.choice([SNAT, DNAT]),
                Prefix(near() & mask_of(length), length),
                rng.choice([None, 80]),
                rng.choice([Protocol.TCP, Protocol.ANY]),
            )
            if candidate.match_key in taken:
                continue
            qns.add(candidate)
            reference.add(candidate)
            live.append(rule_id)
            taken.add(candidate.match_key)
        for _ in range(3):
            proto, address, other, port = rng.choice([TCP, ICMP]), near(), near(), 80
            assert qns.lookup(proto, address, port, other, port) is reference.lookup(
                proto, address, port, other, port
            )
            for kind in (SNAT, DNAT):
                assert qns.lookup_kind(kind, proto, address, port) is reference.lookup_kind(
                    kind, proto, address, port
                )
    assert len(qns) == len(live)
