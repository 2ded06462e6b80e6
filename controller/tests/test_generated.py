"""Files generated from another source of truth are what that source gives
today: the P4 program's constants (p4src/gen_constants.py) for Python and C,
and the swpath command language (swpath/spec/gen_commands.py): swpath's parser
table, the controller's vocabulary, the syntax in docs/swpath-commands.md."""

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


def _gen_commands():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "swpath" / "spec"))
    try:
        import gen_commands
    finally:
        sys.path.pop(0)
    return gen_commands


def test_command_language_is_current() -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "swpath" / "spec" / "gen_commands.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr


def test_a_changed_command_spec_is_caught(tmp_path: Path) -> None:
    """A range changed in commands.toml changes all three outputs."""
    gen_commands = _gen_commands()
    spec = tmp_path / "commands.toml"
    spec.write_text(gen_commands.SPEC.read_text().replace("max = 9216", "max = 9000"))
    changed = gen_commands.outputs(gen_commands.read(spec))
    assert 'kw("mtu", "uint", min=576, max=9000' in changed[gen_commands.PYTHON_OUT]
    assert ".max = 9000u," in changed[gen_commands.C_OUT]
    assert changed[gen_commands.C_OUT] != gen_commands.C_OUT.read_text()
    assert changed[gen_commands.DOC] == gen_commands.DOC.read_text()  # [mtu N]: no range


def test_the_docs_show_the_syntax_of_every_command() -> None:
    gen_commands = _gen_commands()
    doc = gen_commands.DOC.read_text()
    for command in gen_commands.read().commands:
        assert "\n" + command.syntax in doc, command.name


def test_the_labs_cpu_port_is_the_programs() -> None:
    """topo/lab/bmv2.py keeps BMv2's CPU port as a literal (it runs without
    the quicknat package under Debian's python3 for Mininet)."""
    from quicknat.p4.constants import V1MODEL_CPU_PORT

    text = (ROOT / "topo" / "lab" / "bmv2.py").read_text()
    assert f"\nCPU_PORT = {V1MODEL_CPU_PORT}\n" in text
