"""`make install` for a PREFIX, staged under DESTDIR as a package build does,
and `make uninstall` removing what it wrote. Runs the real targets: a venv and
a pip install of the controller (about 30 s; pip needs its index or cache)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "/opt/qn"
UNITS = ("quicknat-controller@.service", "quicknat-swpath@.service", "quicknat-exporter@.service")


def make(target: str, destdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-s", "-C", str(ROOT), target, f"DESTDIR={destdir}", f"PREFIX={PREFIX}"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MAKEFLAGS": ""},
    )


def files_under(directory: Path) -> set[str]:
    return {
        str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file() or p.is_symlink()
    }


@pytest.mark.skipif(
    not (ROOT / "swpath" / "build" / "app" / "quicknat-swpath").exists(),
    reason="quicknat-swpath is not built (make build)",
)
@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_install_for_a_prefix_then_uninstall(tmp_path: Path) -> None:
    stage = tmp_path / "stage"
    done = make("install", stage)
    assert done.returncode == 0, done.stdout + done.stderr
    bin_dir = stage / PREFIX.lstrip("/") / "bin"
    assert os.access(bin_dir / "quicknat-swpath", os.X_OK)
    # the CLI links to the venv where it will be, not where it was staged
    assert os.readlink(bin_dir / "quicknat") == f"{PREFIX}/lib/quicknat/bin/quicknat"
    script = stage / PREFIX.lstrip("/") / "lib/quicknat/bin/quicknat"
    assert script.read_text().splitlines()[0] == f"#!{PREFIX}/lib/quicknat/bin/python3"
    for name in UNITS:
        text = (stage / "etc/systemd/system" / name).read_text()
        assert "@PREFIX@" not in text and "/usr/local" not in text, name
        programs = re.findall(r"(/[\w/.-]*/bin/quicknat[\w-]*)", text)
        assert programs and {p.rsplit("/", 1)[0] for p in programs} == {f"{PREFIX}/bin"}, name
    assert "/var/log/quicknat/*.log" in (stage / "etc/logrotate.d/quicknat").read_text()
    scripts = [p for p in script.parent.iterdir() if p.is_file() and not p.is_symlink()]
    assert not [p.name for p in scripts if str(stage) in p.read_text(errors="replace")]
    installed = files_under(stage)
    done = make("uninstall", stage)
    assert done.returncode == 0, done.stdout + done.stderr
    assert files_under(stage) == set(), f"left behind of {len(installed)} files"
