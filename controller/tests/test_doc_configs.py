"""Every configuration file the README and docs/ tell a reader to run a
command on exists in the repository, or is made by the same page (as
docs/offload.md's `cat ... > offload.toml`): a reader who copies a command
finds the file (issue #32 found `nat.toml`, which the repository never had)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a command that reads a configuration, then the file
USE = re.compile(
    r"(?:--config|quicknat check|lookup|swpath-commands(?: --slow-path \S+)?) (\S+\.toml)"
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_configurations_named_exist(page: Path) -> None:
    text = page.read_text()
    made = set(re.findall(r"> (\S+\.toml)", text))
    for name in set(USE.findall(text)) - made:
        assert (ROOT / name).is_file(), f"{page.name} runs a command on {name}: no such file"


def test_the_pattern_finds_what_readers_run() -> None:
    found = set(USE.findall((ROOT / "README.md").read_text()))
    assert "topo/lab.toml" in found
