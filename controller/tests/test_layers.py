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
    "counter_families": {"counters"},  # the Prometheus family of each counter
    "latency": set(),  # latency histograms
    "log_format": set(),
    "rules": {"addr"},
    "config": {"addr", "rules", "p4"},
    "nat": {"addr", "rules", "config", "p4"},
    "packet": {"addr", "rules", "config", "nat", "p4"},
    "icmp_error": {"addr", "rules", "config", "nat", "packet", "p4"},
    "icmp_gen": {"addr", "rules", "config", "nat", "packet", "p4"},
    "events": {"addr", "rules", "config", "nat", "event_export", "ipfix"},
    "event_export": {"addr", "ipfix"},
    "ipfix": set(),
    "metrics": {"counters", "counter_families", "switch_metrics"},
    "switch_metrics": set(),  # quicknat-swx's telemetry as metric families
    "dpdk_telemetry": set(),  # a DPDK process's telemetry socket (the exporter's --swx)
    "p4rt": set(),
    "p4": set(),  # the compiled P4 program, and its constants (generated)
    "offload": {"addr", "nat"},  # a slow-path instance's session events
    "socket_paths": set(),  # where each daemon's socket is (reads /run/quicknat)
    "stats_view": set(),  # `quicknat stats` as a table
}
# Layers without I/O: no event loop, socket, gRPC or subprocess.
PURE = {
    "addr",
    "counters",
    "counter_families",
    "latency",
    "log_format",
    "rules",
    "config",
    "nat",
    "packet",
    "icmp_error",
    "icmp_gen",
    "ipfix",
    "p4",
    "stats_view",
    "switch_metrics",
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
    assert layers - set(ALLOWED) == {
        "controller",
        "cli",
        "cli_args",
        "cli_reload",
        "__init__",
        "__main__",
    }


# Within the service layer (quicknat/controller/), the modules stand on
# floors: each imports only modules of the floors below its own, so the
# writer knows no mode, a mode no service, and the house has no circle.
CONTROLLER_FLOORS = {
    # what the P4 program and the target are, the install states, the
    # counters, the status socket, the read-back tables, run-time changes
    "install_state": 1,
    "program": 1,
    "target": 1,
    "stats": 1,
    "status": 1,
    "systemd": 1,
    "recovery": 1,
    "reconfigure": 1,
    # what a mode is built with; offload mode's view of its instances'
    # answers; the switch's routes as `quicknat routes` shows them
    "context": 2,
    "modes.offload_view": 2,
    "route_view": 2,
    # the one writer of sessions' entries
    "writer": 3,
    # the packet-in handlers
    "punts": 4,
    # the configuration's own entries; the modes' protocol and I/O
    "switch_config": 5,
    "modes.base": 5,
    "modes.offload_io": 5,
    # the two modes, and the choice between them
    "modes.controller_mode": 6,
    "modes.offload_mode": 6,
    "modes": 7,
    # the connection, arbitration and sync
    "service": 8,
}
CONTROLLER = PACKAGE / "controller"


def _controller_module(path: Path) -> str:
    parts = path.relative_to(CONTROLLER).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _controller_imports(path: Path) -> set[str]:
    """The quicknat.controller modules a file imports (`from
    quicknat.controller import systemd` names quicknat.controller.systemd)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "quicknat.controller":
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n.startswith("quicknat.controller.")}


CONTROLLER_MODULES = sorted(
    p for p in CONTROLLER.rglob("*.py") if _controller_module(p) not in ("", "__init__")
)


@pytest.mark.parametrize("path", CONTROLLER_MODULES, ids=lambda p: str(p.relative_to(CONTROLLER)))
def test_the_service_layer_imports_only_floors_below(path: Path) -> None:
    module = _controller_module(path)
    assert module in CONTROLLER_FLOORS, f"{module}: give it a floor in CONTROLLER_FLOORS"
    floor = CONTROLLER_FLOORS[module]
    for name in _controller_imports(path):
        target = name.removeprefix("quicknat.controller.")
        assert target in CONTROLLER_FLOORS, f"{module} imports {name}, which has no floor"
        assert CONTROLLER_FLOORS[target] < floor, f"{module} (floor {floor}) imports {name}"
