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


def test_a_regadd_of_constants_is_refused() -> None:
    """DPDK 22.11 adds a constant to a constant index of the pipeline's first
    register array whatever array it names: such a count is refused, one
    indexed from metadata passes, and no committed spec has one."""
    counted = SPEC.replace("\ttx m.", "\tregadd core_learn_counter 0x2 1\n\ttx m.")
    with pytest.raises(swx_slots.SpecError, match="first register array"):
        swx_slots.constant_regadd(swx_slots.parse(counted))
    indexed = SPEC.replace("\ttx m.", "\tregadd core_learn_counter m.MainControlT_a 1\n\ttx m.")
    swx_slots.constant_regadd(swx_slots.parse(indexed))
    for variant in ("", "small", "lab"):
        swx_slots.constant_regadd(
            swx_slots.parse((ROOT / "p4src/build/pna" / variant / "quicknat.spec").read_text())
        )


def test_learner_arguments_share_their_staging_fields() -> None:
    """Two learning actions' copies of their add_entry arguments become one
    set of fields (an action runs whole); the learn lines keep their order."""
    learning = SPEC.replace(
        "\tbit<32> MainControlT_in_action\n",
        "\tbit<32> MainControlT_in_action\n"
        "\tbit<32> MainControlT_tmp_1\n\tbit<16> MainControlT_tmp_2\n"
        "\tbit<32> MainControlT_tmp_3\n\tbit<16> MainControlT_tmp_4\n\tbit<8> lease\n",
    ).replace(
        "apply {",
        "action learn_a args none {\n\tmov m.MainControlT_tmp_1 0x1\n"
        "\tmov m.MainControlT_tmp_2 0x2\n\tlearn hit_a m.MainControlT_tmp_1 m.lease\n"
        "\treturn\n}\n\naction learn_b args none {\n\tmov m.MainControlT_tmp_3 0x3\n"
        "\tmov m.MainControlT_tmp_4 0x4\n\tlearn hit_b m.MainControlT_tmp_3 m.lease\n"
        "\treturn\n}\n\napply {",
    )
    spec = swx_slots.parse(learning)
    mapping = swx_slots.share_learn_arguments(spec)
    assert mapping == {
        "MainControlT_tmp_3": "MainControlT_tmp_1",
        "MainControlT_tmp_4": "MainControlT_tmp_2",
    }
    text = swx_slots.rename(spec, mapping)
    assert "learn hit_b m.MainControlT_tmp_1 m.lease" in text
    assert "MainControlT_tmp_3" not in text and "MainControlT_tmp_4" not in text
