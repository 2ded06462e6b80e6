"""make test's runner finds a switch or compiler that a variable names outside
PATH (README, "The P4 path on BMv2"), as the suites themselves do."""

from __future__ import annotations

import importlib.util
import sys
import time
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


def test_lab_free_suites_run_beside_the_lab_and_print_in_order(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #33: a lab-free suite runs while a lab suite does (the two
    sleeps overlap), its failure still counts, and the log lists the suites
    in SUITES order whichever finished first."""
    run_suites = runner()
    suite = run_suites.Suite

    def sleeping(name: str, seconds: float, line: str, lab_free: bool) -> object:
        command = ["sh", "-c", f"sleep {seconds}; echo '{line}'"]
        return suite(name, command, name, lab_free=lab_free)

    monkeypatch.setattr(
        run_suites,
        "SUITES",
        [
            sleeping("free-a", 1.0, "1 passed, 0 failed", True),
            sleeping("lab-b", 1.0, "2 passed, 0 failed", False),
            sleeping("free-c", 0.1, "0 passed, 1 failed", True),
            sleeping("lab-d", 1.0, "4 passed, 0 failed", False),
        ],
    )
    start = time.monotonic()
    results = run_suites.run_all(serial=False)
    assert time.monotonic() - start < 2.8  # serial: 3.1 s
    assert [(r.suite.name, r.passed, r.failed) for r in results] == [
        ("free-a", 1, 0),
        ("lab-b", 2, 0),
        ("free-c", 0, 1),
        ("lab-d", 4, 0),
    ]
    out = capsys.readouterr().out
    headers = [line for line in out.splitlines() if line.startswith("=====")]
    assert headers == [f"===== {n}: {n}" for n in ("free-a", "lab-b", "free-c", "lab-d")]
    start = time.monotonic()
    run_suites.run_all(serial=True)
    assert time.monotonic() - start >= 3.0
