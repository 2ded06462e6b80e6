"""The one counter vocabulary (quicknat/counters.py) against what each path
really counts: the P4 program's drop reasons, the controller's counters, the
core's refusals and swpath's counters.h; and docs/counters.md as its table."""

from __future__ import annotations

import os
import re
from pathlib import Path

from quicknat.controller.modes import OffloadMode, counter_names
from quicknat.counters import (
    LEARN,
    OFFLOAD,
    VOCABULARY,
    Kind,
    learn_markdown,
    markdown,
    offload_markdown,
    p4_natives,
    refusal_reasons,
)
from quicknat.nat.core import Refusal
from quicknat.p4.constants import DropReason

ROOT = Path(__file__).resolve().parents[2]

# Drop reasons only the P4 program has: its own plumbing (punts, packet-outs,
# ports) or what swpath handles otherwise (a fragment: reassembled, IN-IP-8; no
# route or a local address: counted, but no scenario reads them yet).
P4_ONLY = {
    DropReason.NONE,  # drop_counter's slot of packets not dropped
    DropReason.UNKNOWN_PORT,
    DropReason.ARP_IGNORED,
    DropReason.IPV4_FRAGMENT,
    DropReason.LOCAL_ADDRESS,
    DropReason.NO_ROUTE,
    DropReason.PUNT_RATE_LIMITED,
    DropReason.PUNT_LOOP,
    DropReason.BAD_PACKET_OUT,
    DropReason.NO_DECISION,
}


UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


def _swpath_counters_help() -> list[tuple[str, str]]:
    """(name, help) of every counter of swpath's counters.h, in its order."""
    text = (ROOT / "swpath" / "src" / "core" / "counters.h").read_text()
    return re.findall(r'X\((\w+), "((?:[^"\\]|\\.)*)"\)', text)


def _swpath_counters() -> set[str]:
    return {name for name, _ in _swpath_counters_help()}


def test_names_are_unique() -> None:
    names = [c.name for c in VOCABULARY]
    assert len(names) == len(set(names))


def test_every_swpath_name_is_a_counter_of_counters_h() -> None:
    unknown = {c.swpath for c in VOCABULARY} - _swpath_counters()
    assert unknown == set()


def test_every_p4_name_is_a_drop_reason_or_a_controller_counter() -> None:
    controller = set(counter_names())
    for c in VOCABULARY:
        for name in p4_natives(c):
            if name.startswith("drop."):
                assert name.removeprefix("drop.").upper() in DropReason.__members__, c
            else:
                assert name in controller, c


def test_every_drop_reason_of_the_p4_program_has_a_name() -> None:
    named = {
        name.removeprefix("drop.").upper()
        for c in VOCABULARY
        for name in p4_natives(c)
        if name.startswith("drop.")
    }
    unnamed = {r for r in DropReason if r.name not in named} - P4_ONLY
    assert unnamed == set()


def test_refusals_are_one_word_on_both_paths() -> None:
    """A refusal is refused.REASON in the controller and drop_REASON in swpath,
    the words the NAT vectors use. UNSUPPORTED is the core's guard: on P4 the
    switch drops such packets (UNSUPPORTED_L4), swpath's parser too."""
    core = {r.name.lower() for r in Refusal} - {"unsupported"}
    assert refusal_reasons() == core
    for c in VOCABULARY:
        if c.kind is Kind.REFUSED and c.name != "no_rule":
            assert (c.p4, c.swpath) == (f"refused.{c.name}", f"drop_{c.name}"), c


def test_docs_counters_md_is_the_table() -> None:
    doc = (ROOT / "docs" / "counters.md").read_text()
    assert markdown() in doc, "docs/counters.md: regenerate its table from quicknat.counters"


def test_docs_swpath_md_lists_every_counter_of_counters_h() -> None:
    """docs/swpath.md's table of swpath's counters is counters.h's, in its
    order and words (copied by hand, it had fallen 13 counters behind).
    UPDATE_GOLDEN=1 rewrites it."""
    rows = "".join(
        f"| `{name}` | {help.replace('|', chr(92) + '|')} |\n"
        for name, help in _swpath_counters_help()
    )
    path = ROOT / "docs" / "swpath.md"
    doc = path.read_text()
    head = "| counter | meaning |\n|---|---|\n"
    start = doc.index(head) + len(head)
    end = start
    while doc.startswith("| `", end):
        end = doc.index("\n", end) + 1
    if UPDATE:
        path.write_text(doc[:start] + rows + doc[end:])
        doc = path.read_text()
        end = start + len(rows)
    assert doc[start:end] == rows, "docs/swpath.md: UPDATE_GOLDEN=1 rewrites its counter table"


def test_offload_mode_counts_in_the_vocabulary() -> None:
    """Every counter offload mode keeps is in counters.OFFLOAD, under one name
    for one thing: the instances' counters of the same thing are swpath's."""
    names = [c.name for c in OFFLOAD]
    assert len(names) == len(set(names))
    assert not {c.name for c in OFFLOAD} & {c.name for c in VOCABULARY}
    assert set(OffloadMode.counter_names()) == {c.p4 for c in OFFLOAD}
    assert set(OffloadMode.counter_names()) <= set(counter_names())
    unknown = {c.swpath for c in OFFLOAD if c.swpath} - _swpath_counters()
    assert unknown == set()
    doc = (ROOT / "docs" / "counters.md").read_text()
    assert offload_markdown() in doc, "docs/counters.md: regenerate its offload table"


def test_learn_mode_counts_in_the_vocabulary() -> None:
    """swpath's learn_* counters are counters.LEARN, one name each, and
    docs/counters.md has their table."""
    names = [c.name for c in LEARN]
    assert len(names) == len(set(names))
    assert not set(names) & {c.name for c in VOCABULARY + OFFLOAD}
    learn_h = {n for n in _swpath_counters() if n.startswith("learn_")}
    assert {c.swpath for c in LEARN} == learn_h
    doc = (ROOT / "docs" / "counters.md").read_text()
    assert learn_markdown() in doc, "docs/counters.md: regenerate its learn mode table"
