"""quicknat-swx as its systemd unit runs it (swpath/systemd/quicknat-swx@.service.in):
the unit's ExecStart, with its paths moved into a temporary directory, under
its capability bounding set and no_new_privs, serving P4Runtime and taking
a pushed program, which it compiles with cc in the cache directory the unit
names; every system call, socket family and mapping of it and of the
compiler it runs inside what the unit allows (controller/tests/
unit_sandbox.py: PID 1 here is not systemd, so this is as close to the unit
as a test gets)."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import time
from pathlib import Path

import pytest
from lab import swx

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "controller" / "tests"))
from unit_sandbox import Unit, missing_tool, stop  # noqa: E402

UNIT = REPO / "swpath" / "systemd" / "quicknat-swx@.service.in"
INTERNAL = sorted(REPO.glob(".deps/dpdk-*/lib/pipeline"))

pytestmark = [
    pytest.mark.skipif(missing_tool() is not None, reason=f"{missing_tool()} is not installed"),
    pytest.mark.skipif(
        os.geteuid() != 0 or bool(swx.missing()), reason="needs root and quicknat-swx (make build)"
    ),
    pytest.mark.skipif(not INTERNAL, reason="no DPDK pipeline headers (make deps)"),
]


def test_the_switch_runs_and_compiles_a_program_in_its_sandbox(tmp_path: Path) -> None:
    name = f"sbx{os.getpid()}"
    (tmp_path / "cache").mkdir()
    unit = Unit(
        UNIT,
        name,
        {
            "@PREFIX@/bin/quicknat-swx": str(swx.SWX),
            "@PREFIX@/share/quicknat/dpdk-internal": str(INTERNAL[-1]),
            "/var/cache/quicknat/": f"{tmp_path}/cache/",
        },
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    eal = "-l 0,1 --no-huge -m 512 --no-pci --no-shconf --vdev net_null1,no-rx=1"
    argv = unit.command(
        "ExecStart",
        {"SWX_EAL": eal, "SWX_ARGS": f"--port 1=net_null1 --grpc-addr 127.0.0.1:{port}"},
    )
    cache = tmp_path / "cache" / f"swx-{name}"
    assert str(cache) in argv
    proc = unit.start(argv, tmp_path / "swx.trace")
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "quicknat-swx is not serving P4Runtime"
            time.sleep(0.2)
        swx.push_with_finsy(f"127.0.0.1:{port}", 180)
        assert list(cache.glob("pipeline-*.so")), "the program was not compiled in the cache"
    finally:
        _out, err = stop(proc)
        shutil.rmtree(Path("/var/run/dpdk") / f"quicknat-swx-{name}", ignore_errors=True)
    assert proc.returncode == 0, err[-2000:]
    assert unit.problems(tmp_path / "swx.trace") == []
