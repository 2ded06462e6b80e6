"""The one place that knows how to start simple_switch_grpc for QuickNAT."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

CPU_PORT = 255  # p4src/include/target.p4


def switch_command(ports: Mapping[int, str], grpc_addr: str, workdir: Path) -> list[str]:
    """simple_switch_grpc with no program (the controller pushes it), these
    port numbers on these interfaces, and its IPC sockets in `workdir` so that
    several switches (a lab, a test run) never share one."""
    interfaces = [arg for port, name in sorted(ports.items()) for arg in ("-i", f"{port}@{name}")]
    return [
        "simple_switch_grpc",
        "--device-id",
        "1",
        *interfaces,
        "--no-p4",
        "--notifications-addr",
        f"ipc://{workdir / 'bmv2-notifications.ipc'}",
        "--thrift-port",
        "0",
        # Target options follow "--".
        "--",
        "--grpc-server-addr",
        grpc_addr,
        "--cpu-port",
        str(CPU_PORT),
    ]
