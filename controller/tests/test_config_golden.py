"""Golden-file tests of the rules configuration parser.

bad/NAME.toml must be refused with exactly the messages in bad/NAME.err (its
errors, then its warnings, each found in one pass);
good/NAME.toml must parse to exactly the data in good/NAME.json, and compile to
exactly the swpath commands in good/NAME.cmds.
Regenerate the expectations after an intended change with
``UPDATE_GOLDEN=1 make test`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from quicknat.config import ConfigError, parse_config
from quicknat.config.commands import config_commands
from quicknat.config.dump import config_to_data

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


def _cases(kind: str) -> list[Path]:
    return sorted((GOLDEN / kind).glob("*.toml"))


def _parse(path: Path):  # type: ignore[no-untyped-def]
    # The source is the path relative to golden/, so messages do not depend on
    # where the checkout lives.
    return parse_config(path.read_text(), str(path.relative_to(GOLDEN)))


@pytest.mark.parametrize("path", _cases("bad"), ids=lambda p: p.stem)
def test_bad_config_is_refused_with_expected_messages(path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        _parse(path)
    warnings = [f"warning: {w}" for w in info.value.warnings]
    actual = "\n".join([*info.value.messages, *warnings]) + "\n"
    expected_path = path.with_suffix(".err")
    if UPDATE:
        expected_path.write_text(actual)
    assert actual == expected_path.read_text()


@pytest.mark.parametrize("path", _cases("good"), ids=lambda p: p.stem)
def test_good_config_parses_to_expected_tables(path: Path) -> None:
    actual = json.dumps(config_to_data(_parse(path)), indent=2) + "\n"
    expected_path = path.with_suffix(".json")
    if UPDATE:
        expected_path.write_text(actual)
    assert actual == expected_path.read_text()


@pytest.mark.parametrize("path", _cases("good"), ids=lambda p: p.stem)
def test_good_config_compiles_to_expected_swpath_commands(path: Path) -> None:
    actual = "\n".join(config_commands(_parse(path))) + "\n"
    expected_path = path.with_suffix(".cmds")
    if UPDATE:
        expected_path.write_text(actual)
    assert actual == expected_path.read_text()


def test_every_golden_case_has_its_expectation() -> None:
    for path in _cases("bad"):
        assert path.with_suffix(".err").exists(), path
    for path in _cases("good"):
        assert path.with_suffix(".json").exists(), path
        assert path.with_suffix(".cmds").exists(), path
