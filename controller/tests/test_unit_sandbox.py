"""The hardened controller and exporter units still run their daemons: each
unit's ExecStart (and the controller's ExecReload) under its capability
bounding set and no_new_privs, with every system call, socket family and
mapping it used inside what the unit allows (unit_sandbox.py says how far
this imitates systemd). swpath's unit is checked the same way, under the lab
lock, by swpath/tests/sp_restart.py."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from quicknat.controller.status import query
from unit_sandbox import ROOT, Unit, missing_tool, stop

QUICKNAT = ROOT / ".venv" / "bin" / "quicknat"
CONFIG = ROOT / "controller" / "tests" / "configs" / "switch.toml"
pytestmark = [
    pytest.mark.skipif(missing_tool() is not None, reason=f"{missing_tool()} is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="setpriv --bounding-set needs root"),
]


def unit(template: str, tmp_path: Path) -> Unit:
    (tmp_path / "etc").mkdir(exist_ok=True)
    (tmp_path / "etc" / "lab.toml").write_text(CONFIG.read_text())
    return Unit(
        ROOT / "controller" / "systemd" / template,
        "lab",
        {
            "@PREFIX@/bin/quicknat": str(QUICKNAT),
            "/run/quicknat/": f"{tmp_path}/",
            "/etc/quicknat/": f"{tmp_path}/etc/",
        },
    )


def wait_answer(sock: Path, proc: subprocess.Popen[str]) -> object:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            return query(sock, "stats", timeout=2)
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{sock} never answered")


def test_controller_runs_and_reloads_in_its_sandbox(tmp_path: Path) -> None:
    """No switch answers (port 1), so it serves its socket and retries: the
    status socket, a reload through it, and a clean stop, all sandboxed."""
    controller = unit("quicknat-controller@.service.in", tmp_path)
    assert controller.capabilities() == []
    argv = controller.command("ExecStart", {"QUICKNAT_ARGS": "--grpc-addr 127.0.0.1:1"})
    sock = tmp_path / "controller-lab.sock"
    assert str(sock) in argv
    proc = controller.start(argv, tmp_path / "controller.trace")
    try:
        stats = wait_answer(sock, proc)
        assert isinstance(stats, dict) and stats["connected"] is False
        reload = controller.command("ExecReload", {})
        done = subprocess.run(
            controller.wrap(reload, tmp_path / "reload.trace"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0 and "rules" in done.stdout, done.stdout + done.stderr
    finally:
        _out, err = stop(proc)
    assert proc.returncode == 0, err
    assert not sock.exists()
    assert controller.problems(tmp_path / "controller.trace") == []
    assert controller.problems(tmp_path / "reload.trace") == []


def test_exporter_runs_in_its_sandbox(tmp_path: Path) -> None:
    """Nothing at swpath's socket: it serves quicknat_up 0."""
    exporter = unit("quicknat-exporter@.service.in", tmp_path)
    assert exporter.capabilities() == []
    argv = exporter.command("ExecStart", {"EXPORTER_ARGS": "--listen 127.0.0.1:0"})
    assert str(tmp_path / "swpath-lab.sock") in argv
    # an ephemeral port cannot be read back: take a free one instead
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv[argv.index("127.0.0.1:0")] = f"127.0.0.1:{port}"
    proc = exporter.start(argv, tmp_path / "exporter.trace")
    try:
        body = ""
        deadline = time.monotonic() + 30
        while "quicknat_up" not in body and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    body = r.read().decode()
            except OSError:
                time.sleep(0.2)
        assert 'quicknat_up{path="swpath"} 0' in body or "quicknat_up 0" in body, body[:500]
    finally:
        stop(proc)
    assert exporter.problems(tmp_path / "exporter.trace") == []
