#!/usr/bin/env python3
"""Issue #31's size limits, kept from coming back (`make lint` runs this):
no source file over 800 lines, no function over 80 lines or over 8
parameters, in the code we ship and run (the controller, swpath's DPDK data
path, quicknat-swx, the benchmarks, the labs, p4src's generators).

Measured with lizard (PyPI), which parses Python, C and C++ alike; a
function's length is lizard's (its first line to its last). Not checked:
tests (files under a tests/ directory or named test_*), and generated files,
known by the header their generator writes ("generated ... do not edit" in
the first lines): `make generate` rewrites them, a person never edits them.

    check_source_limits.py [--root DIR]   prints each excess, then a summary
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import lizard

ROOT = Path(__file__).resolve().parent.parent
# What we ship and run; p4src holds only its Python generators here.
SCOPES = (
    "controller/quicknat",
    "swpath/src",
    "swpath/swx",
    "swpath/bench",
    "swpath/spec",
    "bench",
    "topo",
    "p4src",
)
SUFFIXES = {".py", ".c", ".h", ".cc", ".hh", ".cpp", ".hpp"}
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 80
MAX_PARAMETERS = 8
# A generator's header says so within its first lines, in any comment style.
GENERATED = re.compile(r"generated\b.*\bdo not edit", re.I | re.S)
GENERATED_HEADER_CHARS = 600
LIMITS = ("file lines", "function lines", "parameters")

# (path from the root, function name as lizard names it) -> why it may be long.
# Only table-driven parsers belong here: one case per line of a table, whose
# length is the table's, and which a split would scatter. Empty today.
EXEMPT_FUNCTIONS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Excess:
    path: str
    line: int
    what: str
    limit: str  # which of LIMITS it exceeds

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def is_test(relative: Path) -> bool:
    return "tests" in relative.parts or relative.name.startswith("test_")


def is_generated(text: str) -> bool:
    return GENERATED.search(text[:GENERATED_HEADER_CHARS]) is not None


def sources(root: Path) -> list[Path]:
    """The files the limits apply to, under the scopes, minus build output,
    virtual environments, tests and generated files."""
    found = []
    for scope in SCOPES:
        for path in sorted((root / scope).rglob("*")):
            relative = path.relative_to(root)
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            if {"build", ".venv", "__pycache__"} & set(relative.parts) or is_test(relative):
                continue
            if is_generated(path.read_text(errors="replace")):
                continue
            found.append(path)
    return found


def check_file(root: Path, path: Path) -> list[Excess]:
    relative = str(path.relative_to(root))
    text = path.read_text(errors="replace")
    excess = []
    lines = text.count("\n")
    if lines > MAX_FILE_LINES:
        excess.append(Excess(relative, 1, f"{lines} lines (limit {MAX_FILE_LINES})", LIMITS[0]))
    for function in lizard.analyze_file.analyze_source_code(str(path), text).function_list:
        if (relative, function.name) in EXEMPT_FUNCTIONS:
            continue
        where = f"{function.name}()"
        if function.length > MAX_FUNCTION_LINES:
            excess.append(
                Excess(
                    relative,
                    function.start_line,
                    f"{where} has {function.length} lines (limit {MAX_FUNCTION_LINES})",
                    LIMITS[1],
                )
            )
        if function.parameter_count > MAX_PARAMETERS:
            excess.append(
                Excess(
                    relative,
                    function.start_line,
                    f"{where} has {function.parameter_count} parameters (limit {MAX_PARAMETERS})",
                    LIMITS[2],
                )
            )
    return excess


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (tests: a copy)")
    root = parser.parse_args(argv).root.resolve()
    files = sources(root)
    excess = [e for path in files for e in check_file(root, path)]
    for e in excess:
        print(e)
    print(
        f"source limits: {len(files)} files, {len(excess)} over "
        f"({MAX_FILE_LINES} lines a file, {MAX_FUNCTION_LINES} a function, "
        f"{MAX_PARAMETERS} parameters)"
    )
    # one test per limit, as swpath's test programs count theirs
    failed = len({e.limit for e in excess})
    print(f"{len(LIMITS) - failed} passed, {failed} failed")
    return 1 if excess else 0


if __name__ == "__main__":
    sys.exit(main())
