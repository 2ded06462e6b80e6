"""One vocabulary for the program and the controller: the enums are generated
from p4src/include/define.p4 (quicknat/p4/constants.py, checked current by
test_generated.py), and the P4Info a switch runs is held against them at
every start (Pipeline.load): a mismatch is one clear message."""

from __future__ import annotations

import pytest
from quicknat.controller.program import Pipeline, PipelineMismatch, check_enums
from quicknat.p4.constants import PuntReason


def test_committed_p4info_matches_and_a_mismatch_is_one_clear_message() -> None:
    pipeline = Pipeline.load()  # checks at load
    info = pipeline.p4info
    assert info.serializable_enum("PuntReason_t")["FRAGMENT"] == PuntReason.FRAGMENT
    enums = info.proto.type_info.serializable_enums
    member = next(m for m in enums["PuntReason_t"].members if m.name == "FRAGMENT")
    member.value = b"\x63"
    with pytest.raises(PipelineMismatch, match=r"PuntReason_t.FRAGMENT: program 99, controller 9"):
        check_enums(info)
