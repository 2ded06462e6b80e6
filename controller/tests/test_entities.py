"""The generic P4Runtime builders against the program's P4Info: the match
kinds and the action-selector entities offload mode writes."""

from __future__ import annotations

from finsy.proto import p4r
from quicknat.controller.program import P4INFO
from quicknat.p4rt.entities import (
    Ternary,
    action_profile_group,
    action_profile_member,
    table_entry,
    update,
)
from quicknat.p4rt.p4info import P4Info, decode

P = P4Info.load(P4INFO)


def test_ternary_is_masked_and_a_zero_mask_left_out() -> None:
    entry = table_entry(
        P,
        "slow_path_out2in",
        {
            "ipv4_dst": Ternary(0xCB007102, 0xFFFFFFFC),
            "has_ports": Ternary(1, 1),
            "l4_dport": Ternary(0, 0),
        },
        "to_slow_path",
        {"port": 3},
        priority=10,
    )
    assert entry.priority == 10
    names = {f.id: f.name for f in P.table("slow_path_out2in").fields.values()}
    matched = {names[m.field_id]: m.ternary for m in entry.match}
    # l4_dport with mask 0 is a don't-care: absent (P4Runtime sec. 9.1.1)
    assert set(matched) == {"ipv4_dst", "has_ports"}
    # the value is stored masked: BMv2 refuses value bits outside the mask
    assert decode(matched["ipv4_dst"].value) == 0xCB007100
    assert decode(matched["ipv4_dst"].mask) == 0xFFFFFFFC


def test_selector_member_group_and_entry() -> None:
    member = action_profile_member(P, "slow_path_selector", 7, "to_slow_path", {"port": 4})
    group = action_profile_group(P, "slow_path_selector", 1, [7, 8], max_size=16)
    entry = table_entry(P, "slow_path_in2out", {"zone": 1}, group_id=1)
    assert member.action_profile_id == group.action_profile_id == P.object_id("slow_path_selector")
    assert decode(member.action.params[0].value) == 4
    assert [m.member_id for m in group.members] == [7, 8]
    assert entry.action.WhichOneof("type") == "action_profile_group_id"
    assert update(p4r.Update.INSERT, member).entity.WhichOneof("entity") == "action_profile_member"
    assert update(p4r.Update.INSERT, group).entity.WhichOneof("entity") == "action_profile_group"
    assert update(p4r.Update.INSERT, entry).entity.WhichOneof("entity") == "table_entry"
