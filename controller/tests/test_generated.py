"""Files generated from another source of truth are what that source gives
today: the P4 program's constants (p4src/gen_constants.py) for Python and C."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_p4_constants_are_current() -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "p4src" / "gen_constants.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr


def test_a_changed_source_is_caught(tmp_path: Path) -> None:
    """The check fails when define.p4 says something the files do not."""
    sys.path.insert(0, str(ROOT / "p4src"))
    try:
        import gen_constants
    finally:
        sys.path.pop(0)
    sources = []
    for path in gen_constants.SOURCES:
        copy = tmp_path / path.name
        copy.write_text(
            path.read_text().replace("SLOW_PATH_VID_RELAY    = 5", "SLOW_PATH_VID_RELAY = 6")
        )
        sources.append(copy)
    changed = gen_constants.outputs(gen_constants.read(sources))
    assert "SLOW_PATH_VID_RELAY = 6" in changed[gen_constants.PYTHON_OUT]
    assert "#define P4_SLOW_PATH_VID_RELAY 6" in changed[gen_constants.C_OUT]
    assert changed[gen_constants.PYTHON_OUT] != gen_constants.PYTHON_OUT.read_text()
