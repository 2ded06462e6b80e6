"""The shared NAT behaviour vectors against the Python core (`Nat`).

swpath's C core runs the same files (swpath/tests/nat_vectors.c, `make -C
swpath/src nat-vectors`); each is one line in `make test`'s summary.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from quicknat.nat.nat_vectors import Vector, load_vectors, run_vector

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
FILES = sorted(HERE.glob("*.json"))
VECTORS = [v for path in FILES for v in load_vectors(path)]
SPEC = ROOT / "docs" / "nat-behavior.md"
PTF_TESTS = ROOT / "ptf-tests" / "tests"


def _requirement_ids() -> list[str]:
    """Every requirement ID the specification defines (its tables' first column)."""
    return re.findall(r"^\| ([A-Z]+(?:-[A-Z0-9]+)*-\d+) \|", SPEC.read_text(), re.M)


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_python_core_passes_vector(vector: Vector) -> None:
    assert run_vector(vector) == []


def test_vector_names_are_unique() -> None:
    names = [v.name for v in VECTORS]
    assert len(names) == len(set(names))
    assert len(names) >= 150


def test_every_requirement_is_covered() -> None:
    """Each ID is a vector's requirement, or, for what only a packet on the
    wire shows (parsing, checksums, ICMP errors), named by a PTF test that both
    data paths run. An ID that neither names is a requirement nothing checks."""
    ids = _requirement_ids()
    assert len(ids) >= 50, "the specification's tables were not read"
    in_vectors = {r for v in VECTORS for r in v.requirements}
    assert in_vectors <= set(ids), f"unknown IDs in vectors: {in_vectors - set(ids)}"
    ptf = "\n".join(p.read_text() for p in PTF_TESTS.glob("test_*.py"))
    uncovered = [i for i in ids if i not in in_vectors and not re.search(rf"\b{i}\b", ptf)]
    assert uncovered == []


def test_runner_finds_every_wrong_answer() -> None:
    """selftest/: vectors with wrong answers; exactly expect_failures checks
    fail in each, so a check the runner stopped making fails this test."""
    for path in sorted((HERE / "selftest").glob("*.json")):
        data = json.loads(path.read_text())
        for vector, raw in zip(load_vectors(path), data["vectors"], strict=True):
            failures = run_vector(vector)
            assert len(failures) == raw["expect_failures"], (vector.name, failures)


def test_generated_vectors_are_what_the_generator_writes(tmp_path: Path) -> None:
    out = tmp_path / "generated.json"
    subprocess.run([sys.executable, str(HERE / "gen_generated.py"), str(out)], check=True)
    assert out.read_text() == (HERE / "generated.json").read_text(), (
        "tests/vectors/nat/generated.json is stale: re-run gen_generated.py and commit it"
    )
