"""Names to ids, and values to P4Runtime bytestrings, from a P4Info.

Objects are found by full name (``QuickNatIngress.nat.nat_in2out``) or alias
(``nat_in2out``); a name that is not in the P4Info raises KeyError naming what
exists, so a program/controller mismatch is reported at start-up, not per packet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from finsy.proto import p4i
from google.protobuf import text_format

T = TypeVar("T")


def encode(value: int, bitwidth: int) -> bytes:
    """P4Runtime canonical bytestring (spec 8.4: shortest form, at least one byte)."""
    if value < 0 or value >> bitwidth:
        raise ValueError(f"{value} does not fit in {bitwidth} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def decode(data: bytes) -> int:
    return int.from_bytes(data, "big")


@dataclass(frozen=True, slots=True)
class Field:
    id: int
    name: str
    bitwidth: int


@dataclass(frozen=True, slots=True)
class Table:
    id: int
    name: str
    fields: dict[str, Field]
    action_ids: frozenset[int]

    def field(self, name: str) -> Field:
        try:
            return self.fields[name]
        except KeyError:
            raise KeyError(
                f"table {self.name} has no match field {name!r} (has {', '.join(self.fields)})"
            ) from None


@dataclass(frozen=True, slots=True)
class Action:
    id: int
    name: str
    params: dict[str, Field]

    def param(self, name: str) -> Field:
        try:
            return self.params[name]
        except KeyError:
            raise KeyError(f"action {self.name} has no parameter {name!r}") from None


class P4Info:
    def __init__(self, info: p4i.P4Info) -> None:
        self.proto = info
        self._tables: dict[str, Table] = {}
        self._actions: dict[str, Action] = {}
        self._ids: dict[str, int] = {}  # counters, meters, action profiles
        self.table_by_id: dict[int, Table] = {}
        self.action_by_id: dict[int, Action] = {}
        for t in info.tables:
            fields = {f.name: Field(f.id, f.name, f.bitwidth) for f in t.match_fields}
            table = Table(
                t.preamble.id, t.preamble.name, fields, frozenset(ref.id for ref in t.action_refs)
            )
            self._index(self._tables, t.preamble, table)
            self.table_by_id[table.id] = table
        for a in info.actions:
            params = {p.name: Field(p.id, p.name, p.bitwidth) for p in a.params}
            action = Action(a.preamble.id, a.preamble.name, params)
            self._index(self._actions, a.preamble, action)
            self.action_by_id[action.id] = action
        for group in (
            info.counters,
            info.direct_counters,
            info.meters,
            info.direct_meters,
            info.action_profiles,
        ):
            for obj in group:
                self._index(self._ids, obj.preamble, obj.preamble.id)
        self._metadata = {
            m.preamble.name: {f.name: Field(f.id, f.name, f.bitwidth) for f in m.metadata}
            for m in info.controller_packet_metadata
        }

    def serializable_enum(self, name: str) -> dict[str, int]:
        """A serializable enum of the program (e.g. ``PuntReason_t``): member ->
        value. Only the enums a controller can see (in packet metadata, keys,
        parameters) are in the P4Info."""
        enums = self.proto.type_info.serializable_enums
        if name not in enums:
            raise KeyError(f"P4Info has no serializable enum {name!r}")
        return {m.name: int.from_bytes(m.value, "big") for m in enums[name].members}

    @staticmethod
    def _index(index: dict[str, Any], preamble: p4i.Preamble, value: object) -> None:
        index[preamble.name] = value
        if preamble.alias:
            index[preamble.alias] = value

    @classmethod
    def load(cls, path: str | Path) -> P4Info:
        info = p4i.P4Info()
        text_format.Parse(Path(path).read_text(), info)
        return cls(info)

    def table(self, name: str) -> Table:
        return _find(self._tables, "table", name)

    def action(self, name: str) -> Action:
        return _find(self._actions, "action", name)

    def object_id(self, name: str) -> int:
        """Id of a counter, direct counter, meter or action profile."""
        return _find(self._ids, "counter, meter or action profile", name)

    def packet_metadata(self, header: str) -> dict[str, Field]:
        """Fields of the controller header ``packet_in`` or ``packet_out``."""
        return _find(self._metadata, "controller packet header", header)


def _find(index: dict[str, T], kind: str, name: str) -> T:
    try:
        return index[name]
    except KeyError:
        known = sorted(n for n in index if "." not in n) or sorted(index)
        raise KeyError(f"P4Info has no {kind} {name!r} (has: {', '.join(known)})") from None
