"""p4src/swx_slots.py, which folds p4c-dpdk's temporaries into few metadata
fields so that DPDK 22.11's 8-bit operand offsets reach them: what may share
a field, what must stay, and that the committed specs are within the limit.
That the folded program forwards as the P4 says is PTF's (target swx)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "p4src"))
try:
    import swx_slots
finally:
    sys.path.pop(0)

SPEC = """\
struct ethernet_t {
\tbit<48> dst
}
struct m_t {
\tbit<32> pna_main_input_metadata_input_port
\tbit<32> MainControlT_a
\tbit<32> MainControlT_b
\tbit<32> MainControlT_c
\tbit<32> MainControlT_d
\tbit<16> tmpxor_0
\tbit<32> MainControlT_in_action
}
metadata instanceof m_t

action set_it args none {
\tmov m.MainControlT_in_action 0x1
\treturn
}

apply {
\trx m.pna_main_input_metadata_input_port
\tmov m.MainControlT_a 0x1
\tmov m.MainControlT_b m.MainControlT_a
\tjmpeq LABEL_END m.MainControlT_b 0x2
\tmov m.MainControlT_c 0x3
\tmov m.tmpxor_0 0xFFFF
\tLABEL_END :\tmov m.MainControlT_d m.MainControlT_c
\tadd m.MainControlT_d m.MainControlT_a
\ttx m.pna_main_input_metadata_input_port
}
"""


def test_temporaries_never_live_at_once_share_a_field() -> None:
    spec = swx_slots.parse(SPEC)
    slots = swx_slots.allocate(spec)
    by = slots.by_temp
    # b is written where a's value is still wanted (d adds it): apart
    assert by["MainControlT_a"] != by["MainControlT_b"]
    # c is read after the label, and the jump there skips its write, so its
    # (undefined) value is live from the start: it shares with nothing
    assert by["MainControlT_c"] not in {by["MainControlT_a"], by["MainControlT_b"]}
    # b's value dies at the jump; d is born after it: one field
    assert by["MainControlT_d"] == by["MainControlT_b"]
    # one pool per width: the 16-bit one gets its own field
    assert by["tmpxor_0"].startswith("slot_16_")
    # what an action names is laid out by the tables: never moved
    assert "MainControlT_in_action" not in by
    text = swx_slots.rewrite(spec, slots)
    assert "\tbit<32> MainControlT_in_action" in text
    assert "MainControlT_b" not in text
    assert len(slots.fields) == 4  # three 32-bit fields and one 16-bit


def test_a_backward_jump_is_refused() -> None:
    looped = SPEC.replace("\tmov m.MainControlT_c 0x3\n", "\tLOOP :\tmov m.MainControlT_c 0x3\n")
    looped = looped.replace("\ttx m.", "\tjmp LOOP\n\ttx m.")
    with pytest.raises(swx_slots.SpecError, match="backward jump"):
        swx_slots.allocate(swx_slots.parse(looped))


@pytest.mark.parametrize("variant", ["", "small", "lab"])
def test_the_committed_specs_fit_an_instruction_operand(variant: str) -> None:
    spec = swx_slots.parse((ROOT / "p4src/build/pna" / variant / "quicknat.spec").read_text())
    _, last = swx_slots.metadata_bytes(spec)
    assert last < swx_slots.LIMIT_BYTES, f"a metadata field starts at byte {last}"
    left = {name for _, name in spec.fields if swx_slots.TEMPORARY.match(name)}
    assert left <= swx_slots.pinned(spec), "temporaries left unfolded"
