"""The namespace lab in offload mode (docs/offload.md): the NAT is a P4
switch (quicknat-swx, `make run`; or BMv2, `make run-offload`) with the
controller as offload manager, and quicknat-swpath slow-path instances
behind the switch's ports 9, 10, ... that take every miss (lab.e2e: two
instances; the benchmarks: one).

The nodes and links are the namespace lab's (topology.py); in the NAT's
namespace the switch owns the lab's NAT ends plus `sp0` (`sp1`, ...), whose veth
peer `sp0-sw` is that instance's DPDK port 0. One configuration describes
the system: topo/lab.toml plus the [[slow_path]]s this module adds (their
control sockets live in the work directory, their port blocks split the
pool's ports); each instance's commands come from it (`quicknat
swpath-commands --slow-path sp0`). With two, the last is the `default`
instance (config/instances.py): it takes the ICMP errors from outside and
the DNAT address, so h1, the lab's DNAT server, is pinned to it, while the
switch's selector hashes h2 to sp0: each instance has a host, and what
crosses between them (h2's ICMP errors, hairpins between h1 and h2) is
handed over through the switch. The tests' `socket` and restart_swpath are
the default instance's (h1's).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quicknat.controller.status import query
from quicknat.p4.constants import LEARN_TAG_BYTES

from lab import bmv2, swx, topology
from lab.netns import SLOW_PATH_PORT, add_veth, set_up_plain
from lab.netns_lab import NAT as NAT_NAMESPACE
from lab.netns_lab import NetnsLab
from lab.processes import (
    remove_runtime_dir,
    signals_ignored,
    start_dpdk,
    wait_for_unix_socket,
    wait_until,
)
from lab.swpath import (
    QUICKNAT,
    compile_commands,
    state_file,
    swpath_command,
)

GRPC_PORT = 50011
# The switches the lab runs: how to start each, and its builds.
SWITCHES = {"bmv2": bmv2, "swx": swx}
# The program's build with 1,024-entry connection tables (p4src/Makefile,
# `lab` in each switch's builds): the lab's switch is small, so that a burst
# of flows overflows it (issue #15).
LAB_TABLE = 1024


def lab_program(switch: str) -> Path:
    return SWITCHES[switch].BUILD / "lab"


# Pool ports 1024-65535 split between two instances (RFC 7422 blocks).
BLOCKS = {1: ["1024-65535"], 2: ["1024-33279", "33280-65535"]}
# What the instances' workers do when idle (swpath --idle-sleep-us): the lab
# shares the VM's two vCPUs between BMv2, the controller, the hosts and the
# instances, and a worker polling without a pause takes a whole vCPU from
# the switch (bench-offload measures both).
IDLE_SLEEP_US = 50


# The links between the switch and its instances: a full-size packet with
# its learn tag (install = "learn", docs/offload.md).
SLOW_PATH_LINK_MTU = 1500 + LEARN_TAG_BYTES


def instance_name(index: int) -> str:
    return f"sp{index}"


def missing(switch: str = "swx") -> list[str]:
    needs = SWITCHES[switch].missing()
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
    instances: int = 1,
    after_packets: int = 1,
    batch_window_ms: int | None = None,
    udp_timeout: int | None = None,
    per_host: int | None = None,
    learn_timeouts: tuple[int, ...] | None = None,
) -> Path:
    """topo/lab.toml as this lab runs it: in offload mode with `instances`
    slow-path instances, the offload policy ([offload]: its own default
    batch window unless `batch_window_ms` names one) and UDP_TIMEOUT_S;
    `udp_timeout` and `per_host` (both [limits]) where a benchmark needs
    others (many flows from one host, alive together); `learn_timeouts`:
    install = "learn" (the switch learns the sessions) with these timeout
    classes (the controller gives them to quicknat-swx with the program)."""
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
        text += "\n# The slow-path instances behind the switch (topo/lab/offload_lab.py).\n"
        for index, block in enumerate(BLOCKS[instances]):
            name = instance_name(index)
            default = "default = true\n" if index == instances - 1 > 0 else ""
            text += (
                f'[[slow_path]]\nname = "{name}"\nport = {SLOW_PATH_PORT + index}\n'
                + f'control = "{workdir / f"{name}.sock"}"\nports = "{block}"\n{default}\n'
            )
        text += f"[offload]\nafter_packets = {after_packets}\n"
        if batch_window_ms is not None:
            text += f"batch_window_ms = {batch_window_ms}\n"
        if learn_timeouts is not None:
            text += f'install = "learn"\nlearn_timeouts = {list(learn_timeouts)}\n'
    path = workdir / ("offload.toml" if slow_path else "controller.toml")
    path.write_text(text)
    return path


@dataclass(frozen=True)
class LabSpec:
    """Which NAT an offload lab runs: its switch, and the slow-path
    instances behind it (lab_config's settings say how it is configured)."""

    slow_path: bool = True
    """False: the same namespaces with the switch in controller mode
    (topo/lab.toml as it is): bench/offload_bench.py compares the two"""
    program: Path | None = None
    """a directory with another build of the P4 program for `switch` (e.g.
    lab_program(switch), 1,024-entry connection tables) for the controller"""
    instances: int = 2
    """how many slow-path instances (1 or 2)"""
    idle_sleep_us: int | None = None
    """the instances' --idle-sleep-us (None: IDLE_SLEEP_US; 0 polls without
    a pause)"""
    switch: str = "swx"
    """the switch: swx (quicknat-swx) or bmv2"""
    switch_idle_sleep_us: int | None = None
    """quicknat-swx's pipeline thread's (None: lab/swx.py's)"""


class OffloadLab(NetnsLab):
    """The namespaces with the NAT a LabSpec says."""

    def __init__(self, workdir: Path, spec: LabSpec, **settings: Any) -> None:
        """`settings`: lab_config's (the offload policy, timeouts, limits)."""
        super().__init__(workdir)
        slow_path, switch, instances = spec.slow_path, spec.switch, spec.instances
        idle_sleep_us = spec.idle_sleep_us
        self.slow_path = slow_path
        self.switch_name = switch
        self.switch_idle_sleep_us = spec.switch_idle_sleep_us
        self.program = spec.program
        self.instances = instances if slow_path else 0
        # the default instance: h1's (its sessions: quicknat sessions/stats,
        # the tests; restart_swpath restarts it)
        self.main = max(self.instances - 1, 0)
        self.idle_sleep_us = idle_sleep_us if idle_sleep_us is not None else IDLE_SLEEP_US
        # the controller's socket tells the offload manager's counters
        self.controller_socket = workdir / "controller.sock"
        main = instance_name(self.main)
        self.socket = workdir / f"{main}.sock" if slow_path else self.controller_socket
        self.config = lab_config(workdir, slow_path, max(instances, 1), **settings)
        self.learn_timeouts: tuple[int, ...] | None = settings.get("learn_timeouts")
        if self.learn_timeouts is not None and switch != "swx":
            raise ValueError(f"{switch} does not learn sessions: only swx does")

    def switch_learned(self) -> int:
        """What the switch learned so far (lab/swx.py's `learned`), asked
        from the NAT's namespace, where its P4Runtime server listens."""
        script = f"from lab.swx import learned; print(learned('127.0.0.1:{GRPC_PORT}'))"
        return int(self.run(topology.NAT, sys.executable, "-c", script).split()[-1])

    def sockets(self) -> list[Path]:
        """Every instance's control socket, in order."""
        return [self.workdir / f"{instance_name(i)}.sock" for i in range(self.instances)]

    def sessions(self, *filters: str) -> list[dict[str, Any]]:
        """Every instance's sessions (the switch's copies are in them)."""
        rows: list[dict[str, Any]] = []
        for socket in self.sockets() or [self.socket]:
            rows += json.loads(self.quicknat("sessions", "--json", *filters, socket=socket))
        return rows

    def build(self) -> None:
        super().build()
        for index in range(self.instances):
            name = instance_name(index)
            add_veth(NAT_NAMESPACE, name, NAT_NAMESPACE, f"{name}-sw")
            for dev in (name, f"{name}-sw"):
                # the 802.1Q tags stay in the frames (veth allows their 4
                # bytes past the MTU), and a learn tag's 16 need room too
                set_up_plain(NAT_NAMESPACE, dev, mtu=SLOW_PATH_LINK_MTU)

    def delete(self) -> None:
        super().delete()
        for index in range(self.instances):
            state_file(self._prefix(index)).unlink(missing_ok=True)
            remove_runtime_dir(self._prefix(index))
        swx.remove_runtime_dir(self.workdir)

    def _prefix(self, index: int) -> str:
        return self.prefix if index == self.main else f"{self.prefix}-{instance_name(index)}"

    def start_offload(self) -> None:
        """The instances, the switch, then the controller (until connected)."""
        for index in range(self.instances):
            self.start_instance(index)
        ports = {
            **topology.nat_ports(),
            **{SLOW_PATH_PORT + i: instance_name(i) for i in range(self.instances)},
        }
        starter = SWITCHES[self.switch_name]
        grpc = f"127.0.0.1:{GRPC_PORT}"
        if self.switch_name == "swx":
            command = swx.switch_command(
                ports,
                grpc,
                self.workdir,
                self.switch_idle_sleep_us
                if self.switch_idle_sleep_us is not None
                else swx.IDLE_SLEEP_US,
            )
        else:
            command = starter.switch_command(ports, grpc, self.workdir)
        self.switch = start_dpdk(lambda: self._start_switch(command), self.workdir / "switch.log")
        controller_command = [
            str(QUICKNAT),
            "controller",
            "--target",
            self.switch_name,
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
                "--device-config",
                str(self.program / starter.DEVICE_CONFIG),
            ]
        self.controller = controller = self.start(
            topology.NAT, controller_command, "controller.log"
        )
        wait_until("the controller connects to the switch", self.connected, 30, controller)

    def _start_switch(self, command: list[str]) -> subprocess.Popen[bytes]:
        switch = self.start(topology.NAT, command, "switch.log")
        try:
            wait_until("the switch listens", lambda: self._listens(), 30, switch)
        except RuntimeError:
            self.stop_process(switch)
            raise
        return switch

    def start_instance(self, index: int = 0) -> None:
        """Instance `index` on its veth to the switch (af_packet keeps the
        802.1Q tags), with its sessions kept for a restart (restart_swpath
        restarts the default instance)."""
        name = instance_name(index)
        commands = compile_commands(self.config, self.workdir / f"{name}.cmds", slow_path=name)
        if index == self.main:
            self._start_swpath(commands, "af_packet")
            return
        socket = self.workdir / f"{name}.sock"
        command = self._instance_command(index, commands, socket, "af_packet")

        def start_once() -> None:
            process = self.start(topology.NAT, command, f"{name}.log")
            try:
                wait_for_unix_socket(socket, 30, process)
            except RuntimeError:
                self.stop_process(process)
                raise

        start_dpdk(start_once, self.workdir / f"{name}.log")

    def _instance_command(self, index: int, commands: Path, socket: Path, pmd: str) -> list[str]:
        prefix = self._prefix(index)
        return swpath_command(
            {0: f"{instance_name(index)}-sw"},
            commands,
            socket,
            prefix,
            pmd,
            state_file(prefix),
            self.idle_sleep_us,
        )

    def _start_swpath(self, commands: Path, pmd: str) -> None:
        """The default instance (also restart_swpath's)."""
        command = self._instance_command(self.main, commands, self.socket, pmd)
        self.commands, self.pmd = commands, pmd
        log = f"{instance_name(self.main)}.log"

        def start_once() -> subprocess.Popen[bytes]:
            process = self.start(topology.NAT, command, log)
            try:
                wait_for_unix_socket(self.socket, 30, process)
            except RuntimeError:
                self.stop_process(process)
                raise
            return process

        self.swpath = start_dpdk(start_once, self.workdir / log)

    def _listens(self) -> bool:
        return self.listening(topology.NAT, GRPC_PORT)

    def connected(self) -> bool:
        try:
            return bool(self.controller_stats()["connected"])
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def controller_stats(self) -> dict[str, object]:
        """`quicknat stats` of the controller (the offload manager's counters,
        and every instance's: it asks them), asked on its socket from this
        process: a `quicknat` process costs 0.2 s of CPU to start, which the
        VM's two vCPUs would take from the NAT being measured."""
        answer = query(self.controller_socket, "stats", timeout=30)
        assert isinstance(answer, dict)
        return answer

    def controller_counters(self) -> dict[str, int]:
        """The controller's own counters (the socket's `counters`: no
        instance asked), what a benchmark polls while it measures."""
        answer = query(self.controller_socket, "counters", timeout=30)
        assert isinstance(answer, dict) and isinstance(answer["counters"], dict)
        return answer["counters"]


@contextlib.contextmanager
def running_lab(
    workdir: Path,
    slow_path: bool = True,
    program: Path | None = None,
    instances: int = 2,
    idle_sleep_us: int | None = None,
    switch: str = "swx",
    switch_idle_sleep_us: int | None = None,
    **settings: Any,
) -> Iterator[OffloadLab]:
    """The lab built and its NAT running (two instances unless told
    otherwise); torn down on the way out, whatever happened."""
    spec = LabSpec(
        slow_path=slow_path,
        program=program,
        instances=instances,
        idle_sleep_us=idle_sleep_us,
        switch=switch,
        switch_idle_sleep_us=switch_idle_sleep_us,
    )
    lab = OffloadLab(workdir, spec, **settings)
    try:
        lab.build()
        lab.start_offload()
        yield lab
    finally:
        with signals_ignored():
            lab.stop_processes()
            lab.delete()
