"""What the P4 sources must say for every target, checked on the text (no
compiler needed): the parser's start state gives every field of
local_metadata_t a value. v1model zeroes user metadata per packet, but DPDK's
SWX pipeline keeps a thread's metadata from one packet to the next, so a
field left out carries the last packet's value: a ROUTE packet-out's
`skip_nat` once let every later packet leave untranslated."""

from __future__ import annotations

import re
from pathlib import Path

INCLUDE = Path(__file__).resolve().parents[2] / "p4src" / "include"
# Set where they are used, before any read: the v1model options walk's
# scratch, and what a target's TARGET_PARSER_INIT sets.
SET_BY_THEIR_STATES = {"opt_scan", "opt_left", "meter_len"}


def struct_fields(text: str, name: str) -> list[tuple[str, str]]:
    """(type, field) of a struct, comments and annotations dropped."""
    body = re.search(rf"struct {name} \{{(.*?)\n\}}", text, re.S)
    assert body, name
    fields = []
    for line in body[1].splitlines():
        line = re.sub(r"//.*", "", line).strip()
        m = re.match(r"^(\w+(?:<\d+>)?)\s+(\w+);$", line)
        if m:
            fields.append((m[1], m[2]))
    return fields


def metadata_fields() -> set[str]:
    """Every leaf of local_metadata_t, nested structs as `a.b`."""
    header = (INCLUDE / "header.p4").read_text()
    structs = set(re.findall(r"^struct (\w+) \{", header, re.M))
    leaves = set()
    for kind, name in struct_fields(header, "local_metadata_t"):
        if kind in structs:
            leaves |= {f"{name}.{sub}" for _, sub in struct_fields(header, kind)}
        else:
            leaves.add(name)
    return leaves


def start_state_assignments() -> set[str]:
    parser = (INCLUDE / "parser.p4").read_text()
    start = re.search(r"state start \{(.*?)\n    \}", parser, re.S)
    assert start
    return set(re.findall(r"local_md\.([\w.]+)\s*=", start[1]))


def test_the_parser_gives_every_metadata_field_a_value() -> None:
    missing = metadata_fields() - start_state_assignments() - SET_BY_THEIR_STATES
    assert missing == set(), f"parser.p4's start state leaves out: {sorted(missing)}"


def test_the_check_sees_nested_fields() -> None:
    fields = metadata_fields()
    assert {"nat.src_addr", "flow.dport", "skip_nat", "drop_reason"} <= fields


def test_learner_timeouts_are_the_controllers_default() -> None:
    """The leases offload mode counts on by default (config's
    P4C_DPDK_LEARN_TIMEOUTS) are the timeout classes every learner of the
    committed PNA builds has (p4c-dpdk fixes them at compile time)."""
    from quicknat.config.model import P4C_DPDK_LEARN_TIMEOUTS

    build = INCLUDE.parent / "build" / "pna"
    specs = sorted(build.glob("**/quicknat.spec"))
    assert specs
    for spec in specs:
        text = spec.read_text()
        learners = re.findall(r"^learner (\w+) \{(.*?)\n\}", text, re.S | re.M)
        assert {name for name, _ in learners} == {
            "core_nat_nat_in2out_learned",
            "core_nat_nat_out2in_learned",
        }, spec
        for name, body in learners:
            block = re.search(r"timeout \{(.*?)\}", body, re.S)
            assert block, (spec, name)
            assert tuple(int(v) for v in block[1].split()) == P4C_DPDK_LEARN_TIMEOUTS
