"""Reading, writing and running the shared QNS test vectors (tests/vectors/qns/).

The format is documented in tests/vectors/qns/README.md. Rules are read with
the configuration's own rule parser, so a vector cannot mean something the
configuration would read differently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from typing import Protocol as TypingProtocol

from quicknat.addr import format_ipv4, parse_ipv4
from quicknat.config.parse import RULE_MATCH_FIELDS, ConfigError, rule_match
from quicknat.config.reader import Problems, TableReader
from quicknat.nat.qns import QnsError, RuleExists, RuleNotFound
from quicknat.rules import PORTED_PROTOCOLS, Protocol, Rule, RuleKind


@dataclass(frozen=True, slots=True)
class Packet:
    protocol: int
    src: int
    dst: int
    sport: int = 0
    dport: int = 0


@dataclass(frozen=True, slots=True)
class Lookup:
    packet: Packet
    expect: int | None
    kind: RuleKind | None = None


@dataclass(frozen=True, slots=True)
class Add:
    rule: Rule
    expect_error: str | None = None


@dataclass(frozen=True, slots=True)
class Remove:
    rule_id: int
    expect_error: str | None = None


Step = Lookup | Add | Remove


@dataclass
class Vector:
    name: str
    description: str
    rules: list[Rule] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)


class RuleTable(TypingProtocol):
    """What a vector runs against: QNS, or the linear-scan reference."""

    def add(self, rule: Rule) -> None: ...
    def remove(self, rule_id: int) -> Rule: ...
    def lookup(self, protocol: int, src: int, sport: int, dst: int, dport: int) -> Rule | None: ...
    def lookup_kind(
        self, kind: RuleKind, protocol: int, address: int, port: int
    ) -> Rule | None: ...


# -- reading ------------------------------------------------------------------


def _rule(data: Any, where: str) -> Rule:
    problems = Problems(where)
    rule = rule_match(TableReader(problems, "rule", data, RULE_MATCH_FIELDS), 0)
    if problems.errors or rule is None or rule.id == 0:
        raise ConfigError(problems.errors or [f"{where}: rule: needs an id"])
    return rule


def _protocol(value: Any) -> int:
    if isinstance(value, int) and 0 <= value <= 255:
        return value
    return int(Protocol.parse(value))


def _packet(data: dict[str, Any]) -> Packet:
    protocol = _protocol(data["protocol"])
    ported = protocol in PORTED_PROTOCOLS
    return Packet(
        protocol,
        parse_ipv4(data["src"]),
        parse_ipv4(data["dst"]),
        data["sport"] if ported else 0,
        data["dport"] if ported else 0,
    )


def _step(data: dict[str, Any], where: str) -> Step:
    if "lookup" in data:
        kind = RuleKind(data["kind"]) if "kind" in data else None
        return Lookup(_packet(data["lookup"]), data["expect"], kind)
    if "add" in data:
        return Add(_rule(data["add"], where), data.get("expect_error"))
    if "remove" in data:
        return Remove(int(data["remove"]), data.get("expect_error"))
    raise ValueError(f"{where}: a step needs 'lookup', 'add' or 'remove'")


def load_vector(path: Path) -> Vector:
    data = json.loads(path.read_text())
    return Vector(
        data["name"],
        data.get("description", ""),
        [_rule(rule, f"{path.name}: rules[{i}]") for i, rule in enumerate(data["rules"])],
        [_step(step, f"{path.name}: steps[{i}]") for i, step in enumerate(data["steps"])],
    )


# -- writing ------------------------------------------------------------------


def rule_to_json(rule: Rule) -> dict[str, Any]:
    data: dict[str, Any] = {"id": rule.id, "type": str(rule.kind), "prefix": str(rule.prefix)}
    if rule.port is not None:
        data["port"] = rule.port
    data["protocol"] = str(rule.protocol)
    return data


def packet_to_json(packet: Packet) -> dict[str, Any]:
    protocol: int | str = packet.protocol
    if protocol in (Protocol.TCP, Protocol.UDP, Protocol.ICMP):
        protocol = str(Protocol(protocol))
    data: dict[str, Any] = {"protocol": protocol, "src": format_ipv4(packet.src)}
    if packet.protocol in PORTED_PROTOCOLS:
        data["sport"] = packet.sport
    data["dst"] = format_ipv4(packet.dst)
    if packet.protocol in PORTED_PROTOCOLS:
        data["dport"] = packet.dport
    return data


def step_to_json(step: Step) -> dict[str, Any]:
    if isinstance(step, Lookup):
        data: dict[str, Any] = {"lookup": packet_to_json(step.packet)}
        if step.kind is not None:
            data["kind"] = str(step.kind)
        data["expect"] = step.expect
        return data
    data = {"add": rule_to_json(step.rule)} if isinstance(step, Add) else {"remove": step.rule_id}
    if step.expect_error:
        data["expect_error"] = step.expect_error
    return data


def dump_vector(vector: Vector) -> str:
    """One step per line: diffs of generated files stay readable."""
    lines = [
        "{",
        f'  "name": {json.dumps(vector.name)},',
        f'  "description": {json.dumps(vector.description)},',
        '  "rules": [',
        ",\n".join(f"    {json.dumps(rule_to_json(r))}" for r in vector.rules),
        "  ],",
        '  "steps": [',
        ",\n".join(f"    {json.dumps(step_to_json(s))}" for s in vector.steps),
        "  ]",
        "}",
    ]
    return "\n".join(lines) + "\n"


# -- running ------------------------------------------------------------------

_ERRORS: dict[str, type[QnsError]] = {"exists": RuleExists, "not_found": RuleNotFound}


def run_vector(vector: Vector, qns: RuleTable) -> list[str]:
    """Apply the vector to an empty rule table; return one message per failed check."""
    failures: list[str] = []
    for rule in vector.rules:
        qns.add(rule)
    for index, step in enumerate(vector.steps):
        where = f"{vector.name}: steps[{index}]"
        if isinstance(step, Lookup):
            p = step.packet
            if step.kind is None:
                found = qns.lookup(p.protocol, p.src, p.sport, p.dst, p.dport)
            elif step.kind is RuleKind.SNAT:
                found = qns.lookup_kind(step.kind, p.protocol, p.src, p.sport)
            else:
                found = qns.lookup_kind(step.kind, p.protocol, p.dst, p.dport)
            got = None if found is None else found.id
            if got != step.expect:
                failures.append(f"{where}: {packet_to_json(p)}: expected {step.expect}, got {got}")
            continue
        expected = _ERRORS[step.expect_error] if step.expect_error else None
        try:
            if isinstance(step, Add):
                qns.add(step.rule)
            else:
                qns.remove(step.rule_id)
        except QnsError as exc:
            if expected is None or not isinstance(exc, expected):
                failures.append(f"{where}: unexpected {type(exc).__name__}: {exc}")
        else:
            if expected is not None:
                failures.append(f"{where}: expected {step.expect_error}, the change was accepted")
    return failures
