"""The one place that knows how to start simple_switch_grpc for QuickNAT."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

# p4src/include/v1model/target.p4's CPU_PORT. A literal: the Mininet lab runs
# this module under Debian's python3, without the quicknat package;
# controller/tests/test_generated.py holds it to the generated constant.
CPU_PORT = 255
LOG_LEVELS = ("off", "error", "warn", "info", "debug", "trace")  # simple_switch -L
# The program's v1model builds (p4src/Makefile: the default in BUILD, the
# variants in BUILD/small, BUILD/lab) and the file BMv2 is pushed.
BUILD = Path(__file__).resolve().parents[2] / "p4src" / "build"
DEVICE_CONFIG = "quicknat.json"


def log_options() -> list[str]:
    """BMv2's default level is trace, and it formats every message even with
    no sink: a quarter of its CPU time per packet. So logging is off unless
    QUICKNAT_BMV2_LOG names a level, and then it goes to the console (the
    switch.log its starter writes)."""
    level = os.environ.get("QUICKNAT_BMV2_LOG", "off")
    if level not in LOG_LEVELS:
        raise SystemExit(f"QUICKNAT_BMV2_LOG={level}: expected one of {', '.join(LOG_LEVELS)}")
    return ["--log-level", level] if level == "off" else ["--log-console", "--log-level", level]


def missing() -> list[str]:
    """What this machine lacks to run the switch."""
    return [] if shutil.which(switch_binary()) else ["simple_switch_grpc"]


def switch_binary() -> str:
    """simple_switch_grpc from PATH, or the build QUICKNAT_BMV2 names: the
    benchmarks' figures are of a BMv2 configured for speed
    (docs/benchmarks.md, "The switch")."""
    return os.environ.get("QUICKNAT_BMV2", "simple_switch_grpc")


def switch_command(ports: Mapping[int, str], grpc_addr: str, workdir: Path) -> list[str]:
    """simple_switch_grpc with no program (the controller pushes it), these
    port numbers on these interfaces, and its IPC sockets in `workdir` so that
    several switches (a lab, a test run) never share one."""
    interfaces = [arg for port, name in sorted(ports.items()) for arg in ("-i", f"{port}@{name}")]
    return [
        switch_binary(),
        "--device-id",
        "1",
        *interfaces,
        "--no-p4",
        *log_options(),
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
