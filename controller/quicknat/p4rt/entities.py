"""Generic P4Runtime entity builders over a P4Info (no program knowledge)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from finsy.proto import p4r

from quicknat.p4rt.p4info import P4Info, decode, encode

Exact = int
Lpm = tuple[int, int]  # (value, prefix length)


@dataclass(frozen=True, slots=True)
class Ternary:
    value: int
    mask: int


def table_entry(
    p4info: P4Info,
    table: str,
    match: Mapping[str, Exact | Lpm | Ternary],
    action: str | None = None,
    params: Mapping[str, int] | None = None,
    idle_timeout_ns: int = 0,
    priority: int = 0,
    group_id: int | None = None,
) -> p4r.TableEntry:
    """A TableEntry; an LPM field is given as (value, prefix length). An LPM of
    length 0 and a ternary of mask 0 are left out, as the spec requires for a
    don't-care match. An entry of a table with an action selector names a
    group (group_id) instead of an action."""
    t = p4info.table(table)
    entry = p4r.TableEntry(table_id=t.id, idle_timeout_ns=idle_timeout_ns, priority=priority)
    if group_id is not None:
        entry.action.action_profile_group_id = group_id
    for name, value in match.items():
        f = t.field(name)
        if isinstance(value, Ternary):
            if value.mask:
                entry.match.add(
                    field_id=f.id,
                    ternary=p4r.FieldMatch.Ternary(
                        value=encode(value.value & value.mask, f.bitwidth),
                        mask=encode(value.mask, f.bitwidth),
                    ),
                )
        elif isinstance(value, tuple):
            address, length = value
            if length:
                entry.match.add(
                    field_id=f.id,
                    lpm=p4r.FieldMatch.LPM(value=encode(address, f.bitwidth), prefix_len=length),
                )
        else:
            entry.match.add(
                field_id=f.id, exact=p4r.FieldMatch.Exact(value=encode(value, f.bitwidth))
            )
    if action is not None:
        a = p4info.action(action)
        entry.action.action.action_id = a.id
        for name, value in (params or {}).items():
            p = a.param(name)
            entry.action.action.params.add(param_id=p.id, value=encode(value, p.bitwidth))
    return entry


def action_profile_member(
    p4info: P4Info, profile: str, member_id: int, action: str, params: Mapping[str, int]
) -> p4r.ActionProfileMember:
    """A member of an action profile or selector: one action with its
    parameters, referred to by groups."""
    a = p4info.action(action)
    member = p4r.ActionProfileMember(
        action_profile_id=p4info.object_id(profile), member_id=member_id
    )
    member.action.action_id = a.id
    for name, value in params.items():
        p = a.param(name)
        member.action.params.add(param_id=p.id, value=encode(value, p.bitwidth))
    return member


def action_profile_group(
    p4info: P4Info, profile: str, group_id: int, member_ids: Sequence[int], max_size: int = 0
) -> p4r.ActionProfileGroup:
    """A group of an action selector: the switch picks one member per packet
    by the selector's hash."""
    group = p4r.ActionProfileGroup(
        action_profile_id=p4info.object_id(profile), group_id=group_id, max_size=max_size
    )
    for m in member_ids:
        group.members.add(member_id=m, weight=1)
    return group


def update(
    kind: p4r.Update.Type.ValueType,
    entry: p4r.TableEntry | p4r.ActionProfileMember | p4r.ActionProfileGroup,
) -> p4r.Update:
    if isinstance(entry, p4r.ActionProfileMember):
        return p4r.Update(type=kind, entity=p4r.Entity(action_profile_member=entry))
    if isinstance(entry, p4r.ActionProfileGroup):
        return p4r.Update(type=kind, entity=p4r.Entity(action_profile_group=entry))
    return p4r.Update(type=kind, entity=p4r.Entity(table_entry=entry))


def exact_fields(p4info: P4Info, entry: p4r.TableEntry) -> dict[str, int]:
    """The exact match fields of an entry read back from the switch, by name."""
    t = p4info.table_by_id[entry.table_id]
    names = {f.id: f.name for f in t.fields.values()}
    return {names[m.field_id]: decode(m.exact.value) for m in entry.match if m.HasField("exact")}


def lpm_fields(p4info: P4Info, entry: p4r.TableEntry) -> dict[str, Lpm]:
    """The LPM match fields of an entry read back, by name, as (value, prefix
    length); a don't-care (length 0) is left out of the entry, so of this."""
    t = p4info.table_by_id[entry.table_id]
    names = {f.id: f.name for f in t.fields.values()}
    return {
        names[m.field_id]: (decode(m.lpm.value), m.lpm.prefix_len)
        for m in entry.match
        if m.HasField("lpm")
    }


def action_params(p4info: P4Info, entry: p4r.TableEntry) -> tuple[str, dict[str, int]]:
    action = p4info.action_by_id[entry.action.action.action_id]
    names = {p.id: p.name for p in action.params.values()}
    return action.name.rsplit(".", 1)[-1], {
        names[p.param_id]: decode(p.value) for p in entry.action.action.params
    }


def packet_metadata(
    p4info: P4Info, header: str, values: Mapping[str, int]
) -> list[p4r.PacketMetadata]:
    fields = p4info.packet_metadata(header)
    return [
        p4r.PacketMetadata(metadata_id=fields[name].id, value=encode(value, fields[name].bitwidth))
        for name, value in values.items()
    ]
