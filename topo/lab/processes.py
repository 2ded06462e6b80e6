"""Starting and stopping the processes under test, with bounded waits."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TypeVar

T = TypeVar("T")

# DPDK's af_packet PMD names its sockets' PACKET_FANOUT group
# (pid ^ ifindex) & 0xffff (drivers/net/af_packet, 22.11), and fanout groups
# are per network namespace: two DPDK processes there (a switch and a
# slow-path instance) can draw one group for different interfaces, and the
# second fails with this line (EINVAL). A new process has another pid.
FANOUT_CLASH = "could not set PACKET_FANOUT"
FANOUT_ATTEMPTS = 3


def remove_runtime_dir(file_prefix: str) -> None:
    """DPDK's runtime directory of a stopped process of EAL file prefix
    `file_prefix` (its telemetry socket). quicknat-swpath removes its own at
    a clean exit (swpath/src/control/eal.c); the switch, and an instance
    killed (a crash, or SIGKILL when it did not stop in time), leave it."""
    shutil.rmtree(Path("/var/run/dpdk") / file_prefix, ignore_errors=True)


def start_dpdk(start_once: Callable[[], T], log: Path) -> T:
    """start_once() (which starts a DPDK process logging to `log` and waits
    for it), again while it fails on a fanout group clash (FANOUT_CLASH), at
    most FANOUT_ATTEMPTS times; any other failure is raised at once."""
    for attempt in range(FANOUT_ATTEMPTS):
        size = log.stat().st_size if log.exists() else 0
        try:
            return start_once()
        except (RuntimeError, AssertionError):
            with log.open("rb") as f:
                f.seek(size)
                clash = FANOUT_CLASH in f.read().decode(errors="replace")
            if not clash or attempt + 1 == FANOUT_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def wait_for_tcp(host: str, port: int, timeout: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode} before listening")
        with socket.socket() as sock:
            sock.settimeout(0.2)
            if sock.connect_ex((host, port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout} s")


def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """A child in its own process group, so stop() also ends its children."""
    with log.open("ab") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen[bytes] | None, timeout: float = 10.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout)


def wait_for_unix_socket(path: Path, timeout: float, proc: subprocess.Popen[bytes]) -> None:
    """Until something accepts connections on `path` (a process that dies first
    is reported at once, not after the timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode} before listening")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.2)
            if sock.connect_ex(str(path)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {path} after {timeout} s")


def wait_until(
    what: str, predicate: Callable[[], bool], timeout: float, *procs: subprocess.Popen[bytes]
) -> None:
    """Poll `predicate` until it holds; fail at once if one of `procs` died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode} before {what}")
        if predicate():
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not happen within {timeout} s")


def stop_pid_file(path: Path, timeout: float = 10.0) -> None:
    """Stop the process group whose leader's pid a file records (a child that a
    test started in place of ours), if it still runs."""
    try:
        pid = int(path.read_text())
        os.killpg(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except OSError:
            return
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def stop_naming(path: Path, timeout: float = 10.0) -> list[str]:
    """Stop every process whose command line names `path` (a run's own
    directory), but this one and its ancestors: what a run started and a
    crash left running. PTF ends a run with a failed test by os._exit(1),
    so no atexit handler stops the NAT the last scenarios shared
    (ptf-tests/harness/shared_nat.py). The names of those it stopped."""
    keep, pid = set(), os.getpid()
    while pid > 1:  # this process and its ancestors (flock, make, the runner)
        keep.add(pid)
        try:
            pid = int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    needle, found = str(path).encode(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in keep:
            continue
        with contextlib.suppress(OSError):
            args = (entry / "cmdline").read_bytes().split(b"\0")
            if any(needle in arg for arg in args):
                found[int(entry.name)] = Path(args[0].decode(errors="replace")).name
    for signo in (signal.SIGTERM, signal.SIGKILL):
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signo)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(_alive(p) for p in found):
            time.sleep(0.05)
    return sorted(found.values())


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie is gone but for its parent's wait


@contextlib.contextmanager
def signals_ignored() -> Iterator[None]:
    """SIGINT and SIGTERM ignored for the duration (a clean-up that a second
    Ctrl-C must not cut short), then as they were."""
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def raise_on_signals() -> None:
    """SIGINT and SIGTERM raise SystemExit, so that `finally` clean-ups run
    when a lab or a test run is interrupted or timed out."""

    def interrupted(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, interrupted)
