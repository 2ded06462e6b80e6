"""The namespace lab in offload mode (docs/offload.md): the NAT is BMv2 with
the controller as offload manager, and a quicknat-swpath slow-path instance
behind the switch's port 9 that takes every miss (`make run-offload`, lab.e2e).

The nodes and links are the namespace lab's (topology.py); in the NAT's
namespace BMv2 owns the lab's NAT ends plus `sp0`, whose veth peer `sp0-sw`
is the instance's DPDK port 0. One configuration describes the system:
topo/lab.toml plus the [[slow_path]] this module adds (its control socket
lives in the work directory); the instance's commands come from it
(`quicknat swpath-commands --slow-path sp0`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lab import topology
from lab.bmv2 import switch_command
from lab.netns import SLOW_PATH_PORT, add_veth, set_up_plain
from lab.netns_lab import NAT as NAT_NAMESPACE
from lab.netns_lab import NetnsLab
from lab.processes import signals_ignored, wait_for_unix_socket, wait_until
from lab.swpath import QUICKNAT, compile_commands, swpath_command

GRPC_PORT = 50011
SLOW_PATH, SLOW_PATH_PEER = "sp0", "sp0-sw"


def missing() -> list[str]:
    needs = [] if shutil.which("simple_switch_grpc") else ["simple_switch_grpc"]
    if os.geteuid() != 0:
        needs.append("root")
    return needs


# The offload lab's UDP timeout: short, so that lab.e2e sees the switch's idle
# notification end an offloaded session (and a live one outlast it).
UDP_TIMEOUT_S = 10


def _replaced(text: str, old: str, new: str) -> str:
    assert old in text, f"topo/lab.toml no longer has {old.strip()!r}: update offload_lab.py"
    return text.replace(old, new)


def lab_config(
    workdir: Path,
    slow_path: bool = True,
    after_packets: int = 1,
    batch_window_ms: int = 10,
    udp_timeout: int | None = None,
    per_host: int | None = None,
) -> Path:
    """topo/lab.toml as this lab runs it: in offload mode with the lab's
    slow-path instance, the offload policy ([offload]) and UDP_TIMEOUT_S;
    `udp_timeout` and `per_host` (both [limits]) where a benchmark needs
    others (many flows from one host, alive together)."""
    text = topology.CONFIG.read_text()
    udp = udp_timeout if udp_timeout is not None else (UDP_TIMEOUT_S if slow_path else None)
    if udp is not None:
        text = _replaced(text, "\nudp = 120 ", f"\nudp = {udp} ")
    if per_host is not None:
        text = _replaced(text, "\nports_per_host = 4096\n", f"\nports_per_host = {per_host}\n")
        text = _replaced(
            text, "\nsessions_per_host = 4096\n", f"\nsessions_per_host = {per_host}\n"
        )
    if slow_path:
        text += (
            "\n# The slow-path instance behind the switch (topo/lab/offload_lab.py).\n"
            + f'[[slow_path]]\nname = "sp0"\nport = {SLOW_PATH_PORT}\n'
            + f'control = "{workdir / "sp0.sock"}"\n'
            + f"\n[offload]\nafter_packets = {after_packets}\n"
            + f"batch_window_ms = {batch_window_ms}\n"
        )
    path = workdir / ("offload.toml" if slow_path else "controller.toml")
    path.write_text(text)
    return path


class OffloadLab(NetnsLab):
    """With `slow_path` False, the same namespaces with BMv2 in controller mode
    (topo/lab.toml as it is): bench/offload_bench.py compares the two."""

    def __init__(
        self,
        workdir: Path,
        slow_path: bool = True,
        program: Path | None = None,
        **settings: Any,
    ) -> None:
        """`program`: a directory with another build of the P4 program (e.g.
        p4src/build/small/, 64-entry connection tables) for the controller;
        `settings`: lab_config's (the offload policy, timeouts, limits)."""
        super().__init__(workdir)
        self.slow_path = slow_path
        self.program = program
        # the sessions are the instance's (quicknat sessions/stats, the tests);
        # the controller's socket tells the offload manager's counters
        self.controller_socket = workdir / "controller.sock"
        self.socket = workdir / "sp0.sock" if slow_path else self.controller_socket
        self.config = lab_config(workdir, slow_path, **settings)

    def build(self) -> None:
        super().build()
        if not self.slow_path:
            return
        add_veth(NAT_NAMESPACE, SLOW_PATH, NAT_NAMESPACE, SLOW_PATH_PEER)
        for dev in (SLOW_PATH, SLOW_PATH_PEER):
            set_up_plain(NAT_NAMESPACE, dev)  # the 802.1Q tags stay in the frames

    def start_offload(self) -> None:
        """The instance, the switch, then the controller (until connected)."""
        if self.slow_path:
            self.start_instance()
        ports = {**topology.nat_ports(), **({SLOW_PATH_PORT: SLOW_PATH} if self.slow_path else {})}
        self.switch = switch = self.start(
            topology.NAT,
            switch_command(ports, f"127.0.0.1:{GRPC_PORT}", self.workdir),
            "switch.log",
        )
        controller_command = [
            str(QUICKNAT),
            "controller",
            "--config",
            str(self.config),
            "--grpc-addr",
            f"127.0.0.1:{GRPC_PORT}",
            "--socket",
            str(self.controller_socket),
        ]
        if self.program is not None:
            controller_command += [
                "--p4info",
                str(self.program / "quicknat.p4info.txtpb"),
                "--bmv2-json",
                str(self.program / "quicknat.json"),
            ]
        wait_until("the switch listens", lambda: self._listens(), 30, switch)
        self.controller = controller = self.start(
            topology.NAT, controller_command, "controller.log"
        )
        wait_until("the controller connects to the switch", self.connected, 30, controller)

    def start_instance(self) -> None:
        commands = compile_commands(self.config, self.workdir / "sp0.cmds", slow_path="sp0")
        self._start_swpath(commands, "af_packet")

    def _start_swpath(self, commands: Path, pmd: str) -> None:
        """The instance on the switch's veth (af_packet keeps the 802.1Q tags),
        with its sessions kept for a restart (restart_swpath)."""
        command = swpath_command(
            {0: SLOW_PATH_PEER}, commands, self.socket, self.prefix, pmd, self.state
        )
        self.commands, self.pmd = commands, pmd
        self.swpath = self.start(topology.NAT, command, "sp0.log")
        wait_for_unix_socket(self.socket, 30, self.swpath)

    def _listens(self) -> bool:
        return self.listening(topology.NAT, GRPC_PORT)

    def connected(self) -> bool:
        try:
            return bool(self.controller_stats()["connected"])
        except (ValueError, KeyError, TypeError):
            return False

    def controller_stats(self) -> dict[str, object]:
        """`quicknat stats` of the controller (the offload manager's counters)."""
        proc = subprocess.run(
            [str(QUICKNAT), "stats", "--socket", str(self.controller_socket)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        answer = json.loads(proc.stdout)
        assert isinstance(answer, dict)
        return answer


@contextlib.contextmanager
def running_lab(
    workdir: Path, slow_path: bool = True, program: Path | None = None, **settings: Any
) -> Iterator[OffloadLab]:
    """The lab built and its NAT running; torn down on the way out, whatever
    happened."""
    lab = OffloadLab(workdir, slow_path, program, **settings)
    try:
        lab.build()
        lab.start_offload()
        yield lab
    finally:
        with signals_ignored():
            lab.stop_processes()
            lab.delete()
