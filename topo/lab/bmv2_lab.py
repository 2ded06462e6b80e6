"""The Mininet lab with the NAT on BMv2 and the controller: its nodes and its
life (`make run-bmv2`: topo/run_bmv2.py; lab.e2e)."""

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
from lab.bmv2 import switch_binary, switch_command
from lab.nodes import QUICKNAT, Nodes
from lab.processes import (
    signals_ignored,
    wait_for_tcp,
    wait_until,
)

GRPC_PORT = 50001
SWITCH = "s1"
DOWNLOAD_MB = 5  # BMv2 forwards in software, one packet at a time


def missing() -> list[str]:
    needs = []
    if shutil.which(switch_binary()) is None:
        needs.append("simple_switch_grpc (BMv2 with P4Runtime, built from p4lang sources)")
    try:
        import mininet  # noqa: F401
    except ImportError:
        needs.append("Mininet for this python (apt-get install mininet, or `make deps`)")
    if not QUICKNAT.exists():
        needs.append(f"{QUICKNAT} (run `make deps`)")
    if os.geteuid() != 0:
        needs.append("root")
    return needs


class MininetLab(Nodes):
    """The topology as Mininet hosts; the switch and the controller run in the
    root namespace."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir, workdir / "controller.sock")
        self.net: Any = None
        self.switch: subprocess.Popen[bytes] | None = None

    def command(self, node: str, *args: str) -> list[str]:
        if node == topology.NAT:
            return list(args)
        # mnexec -a: into the network (and mount) namespace of the host's shell.
        return ["mnexec", "-a", str(self.net.get(node).pid), *args]

    def device(self, end: topology.End) -> str:
        if end.node == topology.NAT:
            return f"{SWITCH}-eth{nat_port(end.interface)}"
        return end.interface

    def build(self) -> None:
        """The Mininet network, started: hosts, links and the switch process."""
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.node import Switch
        from mininet.topo import Topo

        lab = self

        class Bmv2Switch(Switch):  # type: ignore[misc]
            """simple_switch_grpc on the switch's interfaces (port N = s1-ethN)."""

            def start(self, controllers: object) -> None:
                ports = {self.ports[i]: i.name for i in self.intfList() if i.name != "lo"}
                command = switch_command(ports, f"127.0.0.1:{GRPC_PORT}", lab.workdir)
                lab.switch = lab.start(topology.NAT, command, "switch.log")

        class LabTopo(Topo):  # type: ignore[misc]
            def build(self) -> None:
                self.addSwitch(SWITCH, cls=Bmv2Switch, inNamespace=False)
                for node in topology.NODES:
                    self.addHost(node.name, ip=None)  # addresses: node.commands
                for link in topology.LINKS:
                    (a, a_port), (b, b_port) = (mininet_end(link.a), mininet_end(link.b))
                    self.addLink(
                        a,
                        b,
                        port1=a_port,
                        port2=b_port,
                        intfName1=lab.device(link.a),
                        intfName2=lab.device(link.b),
                        addr1=link.a.mac,
                        addr2=link.b.mac,
                    )

        setLogLevel("warning")
        self.net = Mininet(topo=LabTopo(), controller=None, autoSetMacs=False, build=False)
        self.net.build()
        self.net.start()
        self.configure()

    def start_nat(self) -> None:
        """Once the switch listens: the controller, until it says it is connected."""
        assert self.switch is not None
        wait_for_tcp("127.0.0.1", GRPC_PORT, 30, self.switch)
        command = [
            str(QUICKNAT),
            "controller",
            "--config",
            str(topology.CONFIG),
            "--grpc-addr",
            f"127.0.0.1:{GRPC_PORT}",
            "--socket",
            str(self.socket),
        ]
        controller = self.start(topology.NAT, command, "controller.log")
        wait_until("the controller connects to the switch", self.connected, 30, controller)

    def connected(self) -> bool:
        try:
            return bool(json.loads(self.quicknat("stats", "--json"))["connected"])
        except (ValueError, KeyError, TypeError):
            return False

    def stop(self) -> None:
        self.stop_processes()
        if self.net is not None:
            self.net.stop()


def nat_port(name: str) -> int:
    return next(port for port, interface in topology.nat_ports().items() if interface == name)


def mininet_end(end: topology.End) -> tuple[str, int | None]:
    """Mininet's node for an end, and the switch port number for the NAT's."""
    if end.node == topology.NAT:
        return SWITCH, nat_port(end.interface)
    return end.node, None


@contextlib.contextmanager
def running_lab(workdir: Path) -> Iterator[MininetLab]:
    """The lab built, the switch and the controller running; all of it stopped
    and removed on the way out, whatever happened."""
    lab = MininetLab(workdir)
    try:
        lab.build()
        lab.start_nat()
        yield lab
    finally:
        with signals_ignored():
            lab.stop()
