"""The controller package's import rules (docs/architecture.md): each layer
imports only the layers below it, and the NAT's decisions carry no I/O, so they
are tested (and vector-checked against swpath) without a switch or a socket."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "quicknat"

# layer -> the quicknat layers it may import (its own always)
ALLOWED = {
    "addr": set(),
    "counters": set(),
    "log_format": set(),
    "rules": {"addr"},
    "config": {"addr", "rules", "p4"},
    "nat": {"addr", "rules", "config", "p4"},
    "packet": {"addr", "rules", "config", "nat", "p4"},
    "icmp_error": {"addr", "rules", "config", "nat", "packet", "p4"},
    "icmp_gen": {"addr", "rules", "config", "nat", "packet", "p4"},
    "events": {"addr", "rules", "config", "nat", "event_export"},
    "event_export": {"addr"},
    "metrics": {"counters"},
    "p4rt": set(),
    "p4": set(),  # the compiled P4 program, and its constants (generated)
    "offload": {"addr", "nat"},  # a slow-path instance's session events
}
# Layers without I/O: no event loop, socket, gRPC or subprocess.
PURE = {
    "addr",
    "counters",
    "log_format",
    "rules",
    "config",
    "nat",
    "packet",
    "icmp_error",
    "icmp_gen",
    "p4",
}
IO_MODULES = {"asyncio", "socket", "grpc", "subprocess", "finsy"}


def _layer(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if _layer(p) in ALLOWED)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layer_imports_only_what_is_below_it(path: Path) -> None:
    layer = _layer(path)
    for name in _imports(path):
        top = name.split(".")[0]
        if top == "quicknat" and "." in name:
            target = name.split(".")[1]
            assert target == layer or target in ALLOWED[layer], f"{layer} imports {name}"
        if layer in PURE:
            assert top not in IO_MODULES, f"{layer} is I/O-free but imports {name}"


def test_every_layer_is_listed() -> None:
    layers = {_layer(p) for p in PACKAGE.rglob("*.py")}
    assert layers - set(ALLOWED) == {"controller", "cli", "__init__", "__main__"}
