"""lab.processes.stop_naming: what a PTF run left running (PTF ends a failed
run with os._exit, so the shared NAT's processes outlive it) is stopped by
the run's own directory in their command lines, and nothing else is."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from lab.processes import stop_naming

# a process that names its argument and waits (GNU sleep refuses a path)
SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_stops_what_names_the_directory_and_nothing_else(tmp_path: Path) -> None:
    run, other = tmp_path / "run", tmp_path / "other"
    run.mkdir(), other.mkdir()
    mine = subprocess.Popen([*SLEEPER, str(run / "controller.sock")])
    # a process that ignores SIGTERM is killed after the timeout
    stubborn = subprocess.Popen(
        ["sh", "-c", f"trap '' TERM; sleep 60; : {run}"], start_new_session=True
    )
    theirs = subprocess.Popen([*SLEEPER, str(other / "controller.sock")])
    time.sleep(0.2)  # the shell has set its trap
    try:
        assert sorted(stop_naming(run, timeout=1.0)) == sorted(["sh", Path(sys.executable).name])
        assert mine.wait(5) is not None and stubborn.wait(5) is not None
        assert theirs.poll() is None  # another run's: left alone
    finally:
        for proc in (mine, stubborn, theirs):
            proc.kill()
            proc.wait()
