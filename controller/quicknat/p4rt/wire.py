"""Table-entry Updates in protobuf's wire format, for the per-flow write path.

Every new flow costs the controller two table entries (controller mode: the
flow's sessions; offload mode: the sessions an instance opens), so how an
entry becomes bytes is on the per-flow path. Built as protobuf messages (upb)
an Update costs about 11 us of Python, one call per field and nested message,
and gRPC serializes the request once more; a connection record is seven to
nine small fields whose sizes only vary with the values' canonical lengths.
So `ExactTableUpdates` resolves ids and every field's framing once, and an
Update is the concatenation of those pieces and the values: about 3 us
(`controller/tests/test_wire.py` shows both give the same bytes; the profile is in
docs/benchmarks.md, offload mode's controller CPU per flow). The bytes are
what ``p4r.Update.SerializeToString()`` gives for the same entry, byte for byte
(the test compares them over random entries), and P4RuntimeClient.write sends
them as they are.

Protobuf's encoding (protobuf.dev/programming-guides/encoding): a field is a
tag (number << 3 | wire type) then a varint, or for a message or bytes a
varint length then the payload; fields in field-number order, proto3 defaults
(0, empty) left out, as SerializeToString writes them. Field numbers are read
from the descriptors, not written here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from finsy.proto import p4r

from quicknat.p4rt.p4info import P4Info

#: A p4.v1.Update, serialized (what SerializeToString gives).
EncodedUpdate = bytes

_VARINT, _LEN = 0, 2


def varint(n: int) -> bytes:
    """Protobuf's base-128 varint of a non-negative int."""
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# Lengths of an entry's pieces: most are below 128 (one byte); a table entry
# with metadata can pass it.
_LENGTHS = [varint(n) for n in range(1 << 14)]


def _tag(message: type, field: str, wire_type: int) -> bytes:
    number = message.DESCRIPTOR.fields_by_name[field].number  # type: ignore[attr-defined]
    return varint(number << 3 | wire_type)


_ENTRY_TABLE_ID = _tag(p4r.TableEntry, "table_id", _VARINT)
_ENTRY_MATCH = _tag(p4r.TableEntry, "match", _LEN)
_ENTRY_ACTION = _tag(p4r.TableEntry, "action", _LEN)
_ENTRY_IDLE_TIMEOUT = _tag(p4r.TableEntry, "idle_timeout_ns", _VARINT)
_ENTRY_METADATA = _tag(p4r.TableEntry, "metadata", _LEN)
_MATCH_FIELD_ID = _tag(p4r.FieldMatch, "field_id", _VARINT)
_MATCH_EXACT = _tag(p4r.FieldMatch, "exact", _LEN)
_EXACT_VALUE = _tag(p4r.FieldMatch.Exact, "value", _LEN)
_TABLE_ACTION_ACTION = _tag(p4r.TableAction, "action", _LEN)
_ACTION_ID = _tag(p4r.Action, "action_id", _VARINT)
_ACTION_PARAMS = _tag(p4r.Action, "params", _LEN)
_PARAM_ID = _tag(p4r.Action.Param, "param_id", _VARINT)
_PARAM_VALUE = _tag(p4r.Action.Param, "value", _LEN)
_UPDATE_TYPE = _tag(p4r.Update, "type", _VARINT)
_UPDATE_ENTITY = _tag(p4r.Update, "entity", _LEN)
_ENTITY_TABLE_ENTRY = _tag(p4r.Entity, "table_entry", _LEN)
_REQUEST_UPDATES = _tag(p4r.WriteRequest, "updates", _LEN)


def _exact_heads(field_id: int, bitwidth: int) -> list[bytes]:
    """A FieldMatch of this field, up to its value, for each canonical value
    length n (1 .. the bitwidth's bytes): the match is heads[n] + value."""
    heads = [b""]
    for n in range(1, (bitwidth + 7) // 8 + 1):
        exact = _EXACT_VALUE + varint(n)  # + n bytes of value
        body = _MATCH_FIELD_ID + varint(field_id) + _MATCH_EXACT + varint(len(exact) + n) + exact
        heads.append(_ENTRY_MATCH + varint(len(body) + n) + body)
    return heads


def _param_heads(param_id: int, bitwidth: int) -> list[bytes]:
    """An Action.Param, up to its value, for each canonical value length."""
    heads = [b""]
    for n in range(1, (bitwidth + 7) // 8 + 1):
        body = _PARAM_ID + varint(param_id) + _PARAM_VALUE + varint(n)
        heads.append(_ACTION_PARAMS + varint(len(body) + n) + body)
    return heads


class ExactTableUpdates:
    """Updates of one table whose match fields are all exact (the connection
    tables), with the actions named at construction; each action's
    parameters are given in the order named there."""

    def __init__(
        self, p4info: P4Info, table: str, key: Sequence[str], actions: Mapping[str, Sequence[str]]
    ) -> None:
        t = p4info.table(table)
        self._table_id = _ENTRY_TABLE_ID + varint(t.id)
        # per key field: its FieldMatch (tag included) for each value length
        self._fields = []
        for name in key:
            f = t.field(name)
            self._fields.append(_exact_heads(f.id, f.bitwidth))
        self._actions: dict[str, tuple[bytes, list[list[bytes]]]] = {}
        for name, params in actions.items():
            a = p4info.action(name)
            framed = [_param_heads(a.param(p).id, a.param(p).bitwidth) for p in params]
            self._actions[name] = (_ACTION_ID + varint(a.id), framed)

    def _match(self, key: Sequence[int]) -> bytes:
        parts = []
        for heads, value in zip(self._fields, key, strict=True):
            n = (value.bit_length() + 7) >> 3 or 1  # canonical: P4Runtime spec 8.4
            parts.append(heads[n] + value.to_bytes(n, "big"))
        return b"".join(parts)

    def update(
        self,
        kind: p4r.Update.Type.ValueType,
        key: Sequence[int],
        action: str | None = None,
        params: Sequence[int] = (),
        idle_timeout_ns: int = 0,
        metadata: bytes = b"",
    ) -> EncodedUpdate:
        """One Update of a table entry (INSERT, MODIFY, or DELETE by key
        alone); a value too wide for its field raises IndexError."""
        entry = [self._table_id, self._match(key)]
        if action is not None:
            action_id, framed = self._actions[action]
            parts = [action_id]
            for heads, value in zip(framed, params, strict=True):
                n = (value.bit_length() + 7) >> 3 or 1
                parts.append(heads[n] + value.to_bytes(n, "big"))
            body = b"".join(parts)
            inner = _TABLE_ACTION_ACTION + _LENGTHS[len(body)] + body
            entry += [_ENTRY_ACTION, _LENGTHS[len(inner)], inner]
        if idle_timeout_ns:
            entry += [_ENTRY_IDLE_TIMEOUT, varint(idle_timeout_ns)]
        if metadata:
            entry += [_ENTRY_METADATA, _LENGTHS[len(metadata)], metadata]
        table_entry = b"".join(entry)
        entity = _ENTITY_TABLE_ENTRY + _LENGTHS[len(table_entry)] + table_entry
        return b"".join((_UPDATE_TYPE, varint(kind), _UPDATE_ENTITY, _LENGTHS[len(entity)], entity))


def write_request(header: bytes, updates: Sequence[p4r.Update | EncodedUpdate]) -> bytes:
    """A WriteRequest: `header` (its other fields, serialized: device, election,
    atomicity) and the updates, each a message or already encoded. Protobuf
    parsers take fields in any order, and a repeated field's elements may
    come anywhere, so the updates simply follow. (Lengths from the table:
    varint() for each of a batch's 256 updates was half of this call.)"""
    parts = [header]
    lengths, limit = _LENGTHS, len(_LENGTHS)
    for u in updates:
        data = u if isinstance(u, bytes) else u.SerializeToString()
        n = len(data)
        parts += (_REQUEST_UPDATES, lengths[n] if n < limit else varint(n), data)
    return b"".join(parts)
