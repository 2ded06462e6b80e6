"""What ptf-tests/run.py prints after a run from the logs tests/base.py
writes: here, the packets that reached the ports after their test ended."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run_py():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("ptf_run", REPO / "ptf-tests" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


run = _run_py()


def test_no_late_packets(tmp_path: Path) -> None:
    assert run.late_packets(tmp_path / "late.tsv") == (
        "packets that came after their test ended: none"
    )


def test_late_packets_name_the_tests_that_waited_for_nothing(tmp_path: Path) -> None:
    log = tmp_path / "late.tsv"
    log.write_text(
        "test_rules.PortForwarding.runTest\t2\t0.00\n"
        "test_drops.TtlOneIsDropped.runTest\t1\t0.30\n"
        "test_filtering.Unsolicited.runTest\t3\t0.60\n"
    )
    assert run.late_packets(log).splitlines() == [
        "packets that came after their test ended: 6, after 3 tests; after one that "
        "waited for nothing:",
        "     1  test_drops.TtlOneIsDropped",
        "     3  test_filtering.Unsolicited",
    ]
