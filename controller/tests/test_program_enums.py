"""One vocabulary for the program and the controller: the enums program.py
copies from p4src/include/define.p4, held against the P4Info (punt reasons,
packet-out modes: also checked at every start, Pipeline.load) and against
define.p4 itself (drop reasons, which no P4Info type carries)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from quicknat.controller.program import (
    DropReason,
    PacketOutMode,
    Pipeline,
    PipelineMismatch,
    PuntReason,
    check_enums,
)

DEFINE = Path(__file__).resolve().parents[2] / "p4src" / "include" / "define.p4"


def p4_enum(name: str) -> dict[str, int]:
    """`enum bit<8> NAME { A = 0, B = 1 ... }` of define.p4, comments dropped."""
    text = re.sub(r"//[^\n]*", "", DEFINE.read_text())
    body = re.search(rf"enum\s+bit<\d+>\s+{name}\s*\{{(.*?)\}}", text, re.S)
    assert body, f"{name} not in {DEFINE}"
    return {m[1]: int(m[2]) for m in re.finditer(r"(\w+)\s*=\s*(\d+)", body[1])}


@pytest.mark.parametrize(
    ("p4_name", "ours"),
    [
        ("DropReason_t", DropReason),
        ("PuntReason_t", PuntReason),
        ("PacketOutMode_t", PacketOutMode),
    ],
)
def test_enums_match_define_p4(p4_name: str, ours: type) -> None:
    theirs = p4_enum(p4_name)
    theirs.pop("NONE", None)
    assert {m.name: m.value for m in ours} == theirs


def test_committed_p4info_matches_and_a_mismatch_is_one_clear_message() -> None:
    pipeline = Pipeline.load()  # checks at load
    info = pipeline.p4info
    assert info.serializable_enum("PuntReason_t")["FRAGMENT"] == PuntReason.FRAGMENT
    enums = info.proto.type_info.serializable_enums
    member = next(m for m in enums["PuntReason_t"].members if m.name == "FRAGMENT")
    member.value = b"\x63"
    with pytest.raises(PipelineMismatch, match=r"PuntReason_t.FRAGMENT: program 99, controller 9"):
        check_enums(info)
