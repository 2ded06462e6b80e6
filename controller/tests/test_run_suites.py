"""make test's runner finds a switch or compiler that a variable names outside
PATH (README, "The P4 path on BMv2"), as the suites themselves do."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_suites", ROOT / "tests" / "run_suites.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_suites"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def sleeping(
    run_suites: ModuleType,
    stamps: Path,
    name: str,
    seconds: float,
    line: str = "1 passed, 0 failed",
    lab: str | None = None,
    alone: bool = False,
) -> object:
    """A suite that sleeps, stamping its start and end in stamps/name."""
    out = stamps / name
    command = [
        "sh",
        "-c",
        f"date +%s.%N > {out}; sleep {seconds}; date +%s.%N >> {out}; echo '{line}'",
    ]
    return run_suites.Suite(name, command, name, lab=lab, alone=alone)


def span(stamps: Path, name: str) -> tuple[float, float]:
    start, end = (float(t) for t in (stamps / name).read_text().split())
    return start, end


def test_a_tool_named_by_its_variable_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_suites = runner()
    suite = next(s for s in run_suites.SUITES if s.name == "ptf-bmv2")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("QUICKNAT_BMV2", raising=False)
    assert run_suites.missing_tools(suite) == ["simple_switch_grpc"]
    result = run_suites.run(suite)
    assert result.note == "simple_switch_grpc not on PATH ($QUICKNAT_BMV2 unset)"
    switch = tmp_path / "bmv2-fast" / "simple_switch_grpc"
    switch.parent.mkdir()
    switch.write_text("#!/bin/sh\n")
    switch.chmod(0o755)
    monkeypatch.setenv("QUICKNAT_BMV2", str(switch))
    assert run_suites.missing_tools(suite) == []
    p4 = next(s for s in run_suites.SUITES if s.name == "p4-artifacts")
    assert run_suites.missing_tools(p4) == ["p4c-bm2-ss"]
    monkeypatch.setenv("P4C_BMV2", str(switch))  # any executable will do for the lookup
    assert run_suites.missing_tools(p4) == []


def test_two_suites_at_a_time_never_two_on_one_lab_and_printed_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #33: two suites run at once, but a suite whose lab another
    running suite holds waits for it (their runs do not overlap, though a
    worker is free); a failure still counts, and the log lists the suites
    in SUITES order whichever finished first."""
    run_suites = runner()
    t = tmp_path
    monkeypatch.setattr(
        run_suites,
        "SUITES",
        [
            sleeping(run_suites, t, "lab-a", 1.0, "1 passed, 0 failed", "the lab"),
            sleeping(run_suites, t, "lab-b", 0.2, "2 passed, 0 failed", "the lab"),
            sleeping(run_suites, t, "free-c", 0.5, "0 passed, 1 failed"),
            sleeping(run_suites, t, "free-d", 0.1, "4 passed, 0 failed"),
        ],
    )
    results = run_suites.run_all(jobs=2)
    assert [(r.suite.name, r.passed, r.failed) for r in results] == [
        ("lab-a", 1, 0),
        ("lab-b", 2, 0),
        ("free-c", 0, 1),
        ("free-d", 4, 0),
    ]
    # lab-b waited for lab-a, while free-c and free-d ran beside lab-a
    assert span(t, "lab-b")[0] >= span(t, "lab-a")[1]
    assert span(t, "free-c")[0] < span(t, "lab-a")[1]
    assert span(t, "free-d")[1] < span(t, "lab-a")[1]
    out = capsys.readouterr().out
    headers = [line for line in out.splitlines() if line.startswith("=====")]
    assert headers == [f"===== {n}: {n}" for n in ("lab-a", "lab-b", "free-c", "free-d")]
    run_suites.run_all(jobs=1)
    order = sorted(("lab-a", "lab-b", "free-c", "free-d"), key=lambda n: span(t, n)[0])
    assert order == ["lab-a", "lab-b", "free-c", "free-d"]
    assert all(span(t, a)[1] <= span(t, b)[0] for a, b in itertools.pairwise(order))
    # a suite that runs alone: after the one before it, and nothing beside it
    monkeypatch.setattr(
        run_suites,
        "SUITES",
        [
            sleeping(run_suites, t, "free-e", 0.5),
            sleeping(run_suites, t, "alone-f", 0.3, alone=True),
            sleeping(run_suites, t, "free-g", 0.2),
        ],
    )
    results = run_suites.run_all(jobs=2)
    assert [r.status for r in results] == ["ok", "ok", "ok"]
    assert (
        span(t, "free-e")[1] <= span(t, "alone-f")[0]
        and span(t, "alone-f")[1] <= span(t, "free-g")[0]
    )


def test_a_skipped_suite_that_would_run_alone_holds_nothing_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A BMv2 lab runs alone, but where BMv2 is missing it is skipped: the
    suites after it start beside the ones before it (it once left the second
    vCPU idle for 100 s of make test)."""
    run_suites = runner()
    missing = run_suites.Suite(
        "alone-missing", ["true"], "alone-missing", requires=["quicknat-no-such-tool"], alone=True
    )
    monkeypatch.setattr(
        run_suites,
        "SUITES",
        [
            sleeping(run_suites, tmp_path, "free-h", 0.6),
            missing,
            sleeping(run_suites, tmp_path, "free-i", 0.1),
        ],
    )
    results = run_suites.run_all(jobs=2)
    assert [r.status for r in results] == ["ok", "skipped", "ok"]
    assert results[1].note == "quicknat-no-such-tool not on PATH"
    assert span(tmp_path, "free-i")[1] < span(tmp_path, "free-h")[1]
