"""make test's runner finds a switch or compiler that a variable names outside
PATH (README, "The P4 path on BMv2"), as the suites themselves do."""

from __future__ import annotations

import importlib.util
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
