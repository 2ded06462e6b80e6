"""The frame every live test program shares (sp_live, sp_slow_path,
sp_slow_path_learn, sp_restart, sp_unit).

A program is skipped, with the reason, without root or without its veth
pairs; its links are removed after the cases even when one fails or the
setup raises; each case prints a line with its seconds (issue #33: where the
suite's time goes) and the program ends with the one summary line that
tests/run_suites.py reads: "N passed, M failed".
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Tally:
    passed: int = 0
    failed: int = 0

    def add(self, counts: tuple[int, int]) -> None:
        self.passed += counts[0]
        self.failed += counts[1]

    def check(self, name: str, ok: bool, why: str) -> None:
        """A check of the program's own (a clean exit, the audit log)."""
        if ok:
            self.passed += 1
            print(f"ok   {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: {why}")


def parse_args(doc: str | None, cases: bool = False) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--app", required=True)
    if cases:
        parser.add_argument("cases", nargs="*", help="default: all")
    return parser.parse_args()


def run_alone(case: Callable[..., None], *args: object) -> tuple[int, int]:
    """One case, timed; a failure is printed: (passed, failed)."""
    start = time.monotonic()
    try:
        case(*args)
    except Exception as exc:
        print(f"FAIL {case.__name__} ({time.monotonic() - start:.2f} s): {exc}")
        if not isinstance(exc, AssertionError):
            traceback.print_exc()
        return 0, 1
    print(f"ok   {case.__name__} ({time.monotonic() - start:.2f} s)")
    return 1, 0


def run_cases(target: object, cases: list[Callable[..., None]]) -> tuple[int, int]:
    """Each case in order against one running target (a NAT): a failure is
    printed and the next case runs."""
    tally = Tally()
    for case in cases:
        tally.add(run_alone(case, target))
    return tally.passed, tally.failed


def run_each(cases: list[Callable[..., None]], app: str, prefix: str) -> tuple[int, int]:
    """Each case with a temporary directory of its own, for cases that start
    their own processes: case(app, directory)."""
    tally = Tally()
    for case in cases:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            tally.add(run_alone(case, app, Path(tmp)))
    return tally.passed, tally.failed


def live_main(
    name: str,
    make_links: Callable[[], None],
    remove_links: Callable[[], None],
    body: Callable[[Tally], None],
    n_cases: int = 1,
) -> int:
    """Runs body (which adds to the tally) between make_links and
    remove_links; the exit status for make: 1 if anything failed."""
    if os.geteuid() != 0:
        print(f"{name}: skipped: needs root")
        print(f"0 passed, 0 failed, {n_cases} skipped")
        return 0
    try:
        make_links()
    except subprocess.CalledProcessError as exc:
        remove_links()
        reason = exc.stderr.decode().strip() if isinstance(exc.stderr, bytes) else exc.stderr
        print(f"{name}: skipped: cannot create its veth pairs ({reason})")
        print(f"0 passed, 0 failed, {n_cases} skipped")
        return 0
    tally = Tally()
    try:
        body(tally)
    except Exception as exc:
        tally.failed += 1
        print(f"FAIL setup: {exc}")
        traceback.print_exc()
    finally:
        remove_links()
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed else 0
