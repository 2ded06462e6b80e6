"""The shared QNS vectors (tests/vectors/qns/), also run by swpath's C runner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from quicknat.nat.linear_scan import LinearScan
from quicknat.nat.qns import Qns
from quicknat.nat.qns_vectors import Lookup, load_vector, run_vector

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors" / "qns"
FILES = sorted(VECTORS.glob("*.json"))


def test_vector_set_is_complete() -> None:
    names = {path.name for path in FILES}
    assert {"paper_example.json", "edge_cases.json", "generated.json"} <= names
    generated = load_vector(VECTORS / "generated.json")
    assert sum(isinstance(step, Lookup) for step in generated.steps) >= 1000


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_qns_passes_vector(path: Path) -> None:
    assert run_vector(load_vector(path), Qns()) == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_linear_scan_reference_agrees_with_vector(path: Path) -> None:
    # The hand-written expectations are checked by a second, obvious implementation.
    assert run_vector(load_vector(path), LinearScan()) == []


def test_generated_vector_is_what_the_generator_writes(tmp_path: Path) -> None:
    out = tmp_path / "generated.json"
    subprocess.run(
        [sys.executable, str(VECTORS / "gen_generated.py"), str(out)], check=True, timeout=120
    )
    assert out.read_text() == (VECTORS / "generated.json").read_text(), (
        "tests/vectors/qns/generated.json is stale: re-run gen_generated.py and commit it"
    )
