"""p4src/swx_splice.py, which splices the established-flow fast path
(p4src/include/pna/fastpath.spec) into the PNA program's spec: the committed
specs hold the current one, stripping gives the program back, and a
template naming what the program does not have is refused with its name.
That the fast path decides as the program does is
swpath/swx/tests/test_program_fastpath.py's (suite swx-unit, DPDK)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "p4src"))
try:
    import swx_splice
finally:
    sys.path.pop(0)

SPECS = sorted((ROOT / "p4src" / "build" / "pna").glob("**/quicknat.spec"))
TEMPLATE = swx_splice.TEMPLATE.read_text()


def test_there_are_three_specs() -> None:
    assert len(SPECS) == 3, SPECS


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: str(p.parent.name))
def test_committed_spec_holds_the_current_fast_path(spec: Path) -> None:
    """What `make -C p4src` would write from the committed program, without
    p4c: so a template changed without the specs fails here too."""
    assert swx_splice.main(["--check", str(spec)]) == 0


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: str(p.parent.name))
def test_strip_gives_the_program_back_and_splicing_again_changes_nothing(spec: Path) -> None:
    text = spec.read_text()
    program = swx_splice.strip(text)
    assert swx_splice.BEGIN not in program and "FASTPATH_" not in program
    assert "fastpath" not in program
    assert swx_splice.splice(program, TEMPLATE) == text
    assert swx_splice.splice(text, TEMPLATE) == text


def test_the_fast_path_starts_after_rx_and_hands_on_to_the_program() -> None:
    lines = SPECS[0].read_text().splitlines()
    start = lines.index("apply {")
    assert lines[start + 1 : start + 4] == [*swx_splice.ANCHOR, swx_splice.BEGIN]
    end = lines.index(swx_splice.END, start)
    # the program's first instruction follows the hand-on point
    assert lines[end + 1].startswith("\tmov m.local_metadata___")
    assert any(line.startswith("\tFASTPATH_FULL : ") for line in lines[start:end])


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("@md.flow_src@", "@md.no_such_field@"),
        ("table core_routing_egress_mtu", "table core_routing_no_such_table"),
        ("jmpa FASTPATH_EXIT_7 core_nat_hairpin_pending_0", "jmpa FASTPATH_EXIT_7 no_such_action"),
        ("@const.ZONE_INSIDE@", "@const.NO_SUCH_CONSTANT@"),
    ],
)
def test_a_name_the_program_does_not_have_is_refused(change: str, named: str) -> None:
    program = swx_splice.strip(SPECS[0].read_text())
    assert change in TEMPLATE
    with pytest.raises(swx_splice.SpliceError) as refused:
        swx_splice.splice(program, TEMPLATE.replace(change, named, 1))
    assert named.split()[-1].strip("@").split(".")[-1] in str(refused.value)


@pytest.mark.parametrize(
    ("change", "to", "said"),
    [
        ("exit 6: core_zone_port_zone hit", "exit 6: core_zone_no_such_table hit", "no_such_table"),
        ("exit 6: core_zone_port_zone hit", "exit 6: core_zone_port_zone hits", "hit|miss"),
        ("; fastpath exit 13:", "; fastpath exit 14:", "free slot"),
        ("; fastpath exit 13:", "; fastpath exit 12:", "free slot"),
    ],
)
def test_an_exit_line_quicknat_swx_cannot_use_is_refused(change: str, to: str, said: str) -> None:
    """The exit lines tell quicknat-swx which lookups a packet handed on
    made twice (swpath/swx/src/fastpath_stats.h)."""
    program = swx_splice.strip(SPECS[0].read_text())
    assert change in TEMPLATE
    with pytest.raises(swx_splice.SpliceError, match=said.replace("|", r"\|")):
        swx_splice.splice(program, TEMPLATE.replace(change, to, 1))


def test_a_program_that_does_not_start_with_rx_is_refused() -> None:
    program = swx_splice.strip(SPECS[0].read_text()).replace(swx_splice.ANCHOR[1], "", 1)
    with pytest.raises(swx_splice.SpliceError, match="rx"):
        swx_splice.splice(program, TEMPLATE)
