"""quicknat-swx for the P4Runtime tests: started on net_null ports (it sees
no packets) by lab.swx, the one place that knows how to start it, and
stopped, its DPDK runtime directory removed, whatever the tests did."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from lab import swx

# Its pipeline thread naps this long when idle: the tests send it no packet,
# and a 50 us nap would wake it 20,000 times a second beside them.
IDLE_SLEEP_US = 1000
START_S = 15

requires_switch = pytest.mark.skipif(
    os.geteuid() != 0 or bool(swx.missing()),
    reason="needs root and make -C swpath/swx",
)


@dataclass(frozen=True)
class Switch:
    address: str
    """Its P4Runtime address."""
    prefix: str
    """Its EAL file prefix (lab.swx.telemetry)."""
    process: subprocess.Popen[bytes]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_switch() -> Iterator[Switch]:
    """quicknat-swx with P4 ports 1 and 2 on net_null devices and no program."""
    workdir = Path(tempfile.mkdtemp(prefix="swx-p4rt-"))
    address = f"127.0.0.1:{free_port()}"
    devices = {port: f"net_null{port},no-rx=1" for port in (1, 2)}
    command = swx.command(devices, address, workdir, idle_sleep_us=IDLE_SLEEP_US)
    log_path = workdir / "switch.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"quicknat-swx exited: {log_path.read_text()}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", int(address.rsplit(":", 1)[1]))) == 0:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"quicknat-swx not listening after {START_S} s: {log_path.read_text()}")
            time.sleep(0.1)
        yield Switch(address, swx.file_prefix(workdir), proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        swx.remove_runtime_dir(workdir)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def switch() -> Iterator[Switch]:
    """One switch for a test module."""
    with running_switch() as s:
        yield s
