"""The light scan that gives configuration messages their line numbers
(quicknat/config/positions.py): what it must not be fooled by."""

from __future__ import annotations

import pytest
from quicknat.config import ConfigError, parse_config
from quicknat.config.positions import SourcePositions

TEXT = '''# a comment [[rule]]
title = """
[[rule]]
prefix = "not a key"
"""

[[rule]]   # first
type = "snat"
  "prefix" = "10.0.0.0/24"
addresses = [
  "203.0.113.1",
]

[timeouts]
udp = 300

[[rule]]
id = 2
'''


def test_entries_keys_and_tables_have_their_lines() -> None:
    positions = SourcePositions(TEXT)
    assert positions.line("rule", 1) == 7
    assert positions.line("rule", 1, "prefix") == 9  # quoted key, indented
    assert positions.line("rule", 1, "addresses") == 10
    assert positions.line("rule", 2, "id") == 18
    assert positions.line("timeouts", 0, "udp") == 15
    assert positions.line("", 0, "title") == 2


def test_multiline_strings_and_unknown_keys_are_not_positions() -> None:
    positions = SourcePositions(TEXT)
    assert positions.line("rule", 3) is None  # the [[rule]] inside the string
    assert positions.line("rule", 1, "to") == 7  # absent: the entry's line
    assert positions.line("limits") is None


def test_a_section_written_inline_has_its_key_line() -> None:
    positions = SourcePositions('x = 1\nrule = [{ type = "snat" }]\n')
    assert positions.line("rule") == 2


def test_errors_of_later_sections_come_with_those_of_earlier_ones() -> None:
    """[filtering], [limits], [icmp] and [offload] are read even when the
    interfaces are wrong; warnings come with the errors."""
    text = (
        '[[interface]]\nname = "in0"\nzone = "inside"\nmtu = 1\n'
        '[[interface]]\nname = "out0"\nzone = "outside"\n'
        '[timeouts]\nudp = 5\n'
        '[filtering]\ntcp = "strict"\n[limits]\nports_per_host = -1\n'
        '[icmp]\nburst = 0\n[offload]\nbatch_window_ms = 5000\n'
    )  # fmt: skip
    with pytest.raises(ConfigError) as info:
        parse_config(text, "x.toml")
    lines = [m.split(":")[1] for m in info.value.messages]
    assert lines == ["4", "11", "13", "15", "17"]
    assert info.value.warnings == ["x.toml:9: timeouts: udp 5: below the RFC minimum of 120 s"]
