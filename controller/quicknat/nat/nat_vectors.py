"""Reading and running the shared NAT behaviour vectors (tests/vectors/nat/).

The format is documented in tests/vectors/nat/README.md; swpath's C runner
(swpath/tests/nat_vectors.c) reads the same files. A vector's configuration is
read by the configuration's own parser, so it means what a TOML file would.

The core (`Nat`) decides new flows; what a data path does around it is modelled
here the way both data paths do it: a packet of a session refreshes it (a TCP
RST does not, TCP-3), TCP segments are tracked, a hairpinned packet passes the
partner session too (HP-1), and a session idle for its timeout is removed.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quicknat.addr import Prefix, format_ipv4, parse_ipv4
from quicknat.config.model import Config, Zone
from quicknat.config.parse import config_from_data
from quicknat.nat import tcp_state
from quicknat.nat.allocator import Endpoint
from quicknat.nat.core import Nat, Refused
from quicknat.nat.session import FlowKey, Mapping, Session
from quicknat.rules import PORTED_PROTOCOLS, Protocol

# The interfaces a vector's configuration gets when it names none: the core
# never looks at them, the configuration's validation wants both zones.
_INTERFACES = [
    {"name": "in0", "zone": "inside", "port": 1},
    {"name": "out0", "zone": "outside", "port": 2},
]

_FLAG_LETTERS = {
    "F": tcp_state.FLAG_FIN,
    "S": tcp_state.FLAG_SYN,
    "R": tcp_state.FLAG_RST,
    "P": 0x08,
    "A": 0x10,
    "U": 0x20,
}

_PACKET = re.compile(
    r"^(?P<zone>inside|outside) (?P<proto>\w+) (?P<src>[\d.]+(?::\d+)?) > "
    r"(?P<dst>[\d.]+(?::\d+)?)(?: id (?P<id>\d+))?(?: (?P<flags>[FSRPAU]+))?$"
)


class VectorError(ValueError):
    """A vector file that does not follow tests/vectors/nat/README.md."""


@dataclass(frozen=True, slots=True)
class Packet:
    zone: Zone
    key: FlowKey
    flags: int = 0


@dataclass(frozen=True, slots=True)
class Step:
    at: float
    packet: Packet | None
    label: str | None
    expect: dict[str, Any]


@dataclass
class Vector:
    name: str
    requirements: list[str]
    description: str
    config: Config
    capacity: int | None
    steps: list[Step] = field(default_factory=list)


# -- reading ------------------------------------------------------------------


def _endpoint(text: str, ported: bool, where: str) -> tuple[int, int]:
    address, _, port = text.partition(":")
    if ported != bool(port):
        raise VectorError(f"{where}: {text!r}: " + ("needs a port" if ported else "takes no port"))
    return parse_ipv4(address), int(port) if port else 0


def parse_packet(text: str, where: str) -> Packet:
    """`inside tcp 10.0.0.10:1234 > 198.51.100.10:80 S`, `inside icmp 10.0.0.10 >
    198.51.100.10 id 7` (an echo: the identifier is both ports of its key)."""
    match = _PACKET.match(text)
    if match is None:
        raise VectorError(f"{where}: packet {text!r}: not 'ZONE PROTO SRC > DST [id N] [FLAGS]'")
    proto = match["proto"]
    protocol = int(proto) if proto.isdigit() else int(Protocol.parse(proto))
    ported = protocol in PORTED_PROTOCOLS
    src, sport = _endpoint(match["src"], ported, where)
    dst, dport = _endpoint(match["dst"], ported, where)
    if protocol == Protocol.ICMP:
        if match["id"] is None:
            raise VectorError(f"{where}: an ICMP echo needs 'id N'")
        sport = dport = int(match["id"])
    flags = 0
    for letter in match["flags"] or "":
        flags |= _FLAG_LETTERS[letter]
    if flags and protocol != Protocol.TCP:
        raise VectorError(f"{where}: flags on a {proto} packet")
    return Packet(Zone(match["zone"]), FlowKey(protocol, src, dst, sport, dport), flags)


def _vector(data: dict[str, Any], defaults: dict[str, Any], where: str) -> Vector:
    sections = {**defaults, **data.get("config", {})}
    sections.setdefault("interface", _INTERFACES)
    config = config_from_data(sections, where)
    steps: list[Step] = []
    at = 0.0
    for index, step in enumerate(data["steps"]):
        here = f"{where}: steps[{index}]"
        unknown = set(step) - {"at", "packet", "as", "expect", "note"}
        if unknown:
            raise VectorError(f"{here}: unknown fields {sorted(unknown)}")
        if step.get("at", at) < at:
            raise VectorError(f"{here}: time goes back")
        at = float(step.get("at", at))
        packet = parse_packet(step["packet"], here) if "packet" in step else None
        steps.append(Step(at, packet, step.get("as"), step.get("expect", {})))
    return Vector(
        data["name"],
        list(data["requirements"]),
        data.get("description", ""),
        config,
        data.get("capacity"),
        steps,
    )


def load_vectors(path: Path) -> list[Vector]:
    data = json.loads(path.read_text())
    defaults = data.get("config", {})
    return [
        _vector(v, defaults, f"{path.name}: {v.get('name', i)}")
        for i, v in enumerate(data["vectors"])
    ]


# -- running ------------------------------------------------------------------


@dataclass
class Outcome:
    """What a data path did with one packet (or one second pass)."""

    session: Session | None = None
    new: bool = False
    refused: str | None = None


class PythonCore:
    """The Python core with what the data paths do around it (module doc)."""

    def __init__(self, vector: Vector, seed: int = 1) -> None:
        self.events: list[str] = []
        self.nat = Nat(
            vector.config,
            random.Random(seed),
            on_mapping=self._mapping_event,
            on_quota=self._quota_event,
            capacity=vector.capacity,
            on_exhausted=self._exhaustion_event,
        )
        self.last_seen: dict[int, float] = {}

    def _mapping_event(self, event: str, mapping: Mapping, now: float) -> None:
        proto = Protocol(mapping.protocol)
        self.events.append(f"{event} {proto} {_format_endpoint(mapping.internal)}")

    def _quota_event(self, limit: str, address: int, value: int, now: float) -> None:
        self.events.append(f"quota {limit} {format_ipv4(address)}")

    def _exhaustion_event(
        self, what: str, address: int, pool_id: int, protocol: int, now: float
    ) -> None:
        proto = Protocol(protocol)
        if what == "ports":
            self.events.append(f"ports-exhausted {proto} {format_ipv4(address)}")
        else:
            self.events.append(f"addresses-exhausted {proto} {pool_id}")

    def age(self, now: float) -> None:
        for session in list(self.nat.sessions()):
            if now - self.last_seen[session.id] >= self.nat.timeout(session):
                self.nat.remove(session, now)
                del self.last_seen[session.id]

    def packet(self, packet: Packet, now: float) -> tuple[Outcome, Outcome | None]:
        key, flags = packet.key, packet.flags
        before = self.nat.session_for(key)
        try:
            session = self.nat.new_flow(packet.zone, key, now, flags)
        except Refused as exc:
            return Outcome(refused=exc.reason.name.lower()), None
        self._seen(session, now, flags, new=before is None)
        second = None
        if session.hairpin and key == session.in2out:
            partner_before = session.partner
            try:
                partner = self.nat.open_hairpin(session, now, flags)
            except Refused as exc:
                second = Outcome(refused=exc.reason.name.lower())
            else:
                new = partner_before is None and partner.id not in self.last_seen
                self._seen(partner, now, flags, new=new)
                second = Outcome(partner, new)
        if key.protocol == Protocol.TCP:
            self.nat.tcp_segment(session, key, flags)
        return Outcome(session, before is None), second

    def _seen(self, session: Session, now: float, flags: int, new: bool) -> None:
        if new or not flags & tcp_state.FLAG_RST:  # TCP-3
            self.last_seen[session.id] = now

    def alive(self, session: Session) -> bool:
        return self.nat.contains(session)


def _format_endpoint(endpoint: Endpoint) -> str:
    return f"{format_ipv4(endpoint.address)}:{endpoint.port}"


def _check_external(
    expect: Any, session: Session, labels: dict[str, Session], where: str
) -> list[str]:
    ext, internal = session.external, session.internal
    got = _format_endpoint(ext)
    if isinstance(expect, str):
        want_port = ":" in expect
        shown = got if want_port else format_ipv4(ext.address)
        return [] if shown == expect else [f"{where}: external {shown}, expected {expect}"]
    failures = []

    def fail(what: str) -> None:
        failures.append(f"{where}: external {got}: {what}")

    for name, value in expect.items():
        if name == "same_as":
            if labels[value].external != ext:
                fail(f"expected {value}'s, {_format_endpoint(labels[value].external)}")
        elif name == "differs_from":
            for label in [value] if isinstance(value, str) else value:
                if labels[label].external == ext:
                    fail(f"expected other than {label}'s")
        elif name == "address_of":
            if labels[value].external.address != ext.address:
                fail(f"expected {value}'s address")
        elif name == "not_address_of":
            if labels[value].external.address == ext.address:
                fail(f"expected other than {value}'s address")
        elif name == "in":
            if ext.address not in Prefix.parse(value):
                fail(f"expected within {value}")
        elif name == "ports":
            low, high = (int(p) for p in value.split("-"))
            if not low <= ext.port <= high:
                fail(f"expected a port in {value}")
        elif name == "parity":
            if (ext.port & 1) != (internal.port & 1):
                fail(f"expected the parity of {internal.port}")
        elif name == "port_is_internal":
            if (ext.port == internal.port) != value:
                fail(f"expected the internal port {internal.port} {'' if value else 'not '}kept")
        elif name == "not_next_to":
            if abs(labels[value].external.port - ext.port) <= 1:
                fail(f"a port next to {value}'s: predictable")
        else:
            raise VectorError(f"{where}: unknown external check {name!r}")
    return failures


def _check_outcome(
    expect: dict[str, Any],
    got: Outcome | None,
    labels: dict[str, Session],
    label: str | None,
    where: str,
) -> list[str]:
    if got is None:
        return [f"{where}: no second pass (not a hairpinned packet)"]
    if "refused" in expect:
        if got.refused != expect["refused"]:
            did = f"refused: {got.refused}" if got.refused else "a session"
            return [f"{where}: {did}, expected refused: {expect['refused']}"]
        return []
    if got.session is None:
        return [f"{where}: refused: {got.refused}, expected a session"]
    session = got.session
    failures = []
    want = expect.get("session")
    if want == "new" and not got.new:
        failures.append(f"{where}: an existing session, expected a new one")
    elif want not in (None, "new") and labels[want] is not session:
        failures.append(f"{where}: not the session of {want}")
    if label is not None:
        labels[label] = session
    if "internal" in expect:
        shown = _format_endpoint(session.internal)
        if shown != expect["internal"]:
            failures.append(f"{where}: internal {shown}, expected {expect['internal']}")
    if "external" in expect:
        failures += _check_external(expect["external"], session, labels, where)
    return failures


def run_vector(vector: Vector, seed: int = 1) -> list[str]:
    """Run a vector against the Python core; one message per failed check."""
    core = PythonCore(vector, seed)
    labels: dict[str, Session] = {}
    failures: list[str] = []
    known = {"session", "refused", "internal", "external", "hairpin", "events"}
    known |= {"sessions", "alive", "gone"}
    for index, step in enumerate(vector.steps):
        where = f"{vector.name}: steps[{index}]"
        unknown = set(step.expect) - known
        if unknown:
            raise VectorError(f"{where}: unknown expectations {sorted(unknown)}")
        core.events.clear()
        core.age(step.at)
        if step.packet is not None:
            first, second = core.packet(step.packet, step.at)
            failures += _check_outcome(step.expect, first, labels, step.label, where)
            if "hairpin" in step.expect:
                hairpin = step.expect["hairpin"]
                failures += _check_outcome(
                    hairpin, second, labels, hairpin.get("as"), f"{where}: hairpin"
                )
        expect = step.expect
        if "events" in expect and sorted(core.events) != sorted(expect["events"]):
            failures.append(f"{where}: events {core.events}, expected {expect['events']}")
        if "sessions" in expect and core.nat.session_count != expect["sessions"]:
            failures.append(
                f"{where}: {core.nat.session_count} sessions, expected {expect['sessions']}"
            )
        for label in expect.get("alive", []):
            if not core.alive(labels[label]):
                failures.append(f"{where}: session {label} is gone, expected alive")
        for label in expect.get("gone", []):
            if core.alive(labels[label]):
                failures.append(f"{where}: session {label} is alive, expected gone")
    return failures
