"""`make install` for a PREFIX, staged under DESTDIR as a package build does,
and `make uninstall` removing what it wrote. Runs the real targets: a venv and
a pip install of the controller (about 30 s; pip needs its index or cache)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from lab import swx
from lab.processes import start, stop, wait_for_tcp

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "/opt/qn"
UNITS = (
    "quicknat-controller@.service",
    "quicknat-swpath@.service",
    "quicknat-swx@.service",
    "quicknat-exporter@.service",
)
SWX_HEADERS = ("rte_swx_pipeline_internal.h", "rte_swx_pipeline_spec.h")


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
    assert os.access(bin_dir / "quicknat-swx", os.X_OK)
    share = stage / PREFIX.lstrip("/") / "share/quicknat/dpdk-internal"
    assert sorted(p.name for p in share.iterdir()) == sorted(SWX_HEADERS)
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
    if os.geteuid() == 0:
        a_program_compiles_with_the_installed_headers(stage, tmp_path)
    installed = files_under(stage)
    done = make("uninstall", stage)
    assert done.returncode == 0, done.stdout + done.stderr
    assert files_under(stage) == set(), f"left behind of {len(installed)} files"


def a_program_compiles_with_the_installed_headers(stage: Path, tmp_path: Path) -> None:
    """The staged quicknat-swx, told what quicknat-swx@.service tells it
    (--dpdk-internal PREFIX/share/..., a cache of its own), takes the
    program pushed by finsy: its pipeline compiles with the headers that
    `make install` put there and no others."""
    prefix = stage / PREFIX.lstrip("/")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    command = swx.null_switch_command([1], f"127.0.0.1:{port}", tmp_path)
    command[0] = str(prefix / "bin/quicknat-swx")
    command += ["--cache", str(tmp_path / "cache"),
                "--dpdk-internal", str(prefix / "share/quicknat/dpdk-internal")]  # fmt: skip
    proc = start(command, tmp_path / "swx.log")
    try:
        wait_for_tcp("127.0.0.1", port, 30, proc)
        swx.push_with_finsy(f"127.0.0.1:{port}", 120)
        assert list((tmp_path / "cache").glob("pipeline-*.so")), (tmp_path / "swx.log").read_text()
    finally:
        stop(proc)
        swx.remove_runtime_dir(tmp_path)
