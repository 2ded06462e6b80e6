"""A running lab's nodes (topology.NODES), whichever lab made them.

A lab says how to run a command in one of its nodes (`ip netns exec` for the
namespace lab, `mnexec -a` for Mininet's hosts) and where its NAT answers
`quicknat sessions` / `stats`; the configuration of the nodes, the servers the
demo and the tests start, and their clean-up are written once here.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

from . import topology
from .netns import set_up_plain_in
from .processes import start, stop, wait_until
from .swpath import QUICKNAT

# iperf3 as the demo and the tests run it (its default port).
IPERF_PORT = 5201


class Nodes:
    def __init__(self, workdir: Path, socket: Path) -> None:
        self.workdir = workdir
        self.socket = socket  # the NAT's status socket (quicknat sessions/stats)
        self.procs: list[subprocess.Popen[bytes]] = []

    def command(self, node: str, *args: str) -> list[str]:
        """The argument list that runs `args` inside `node` (a topology.NODES
        name, or topology.NAT where the NAT's ends are)."""
        raise NotImplementedError

    def device(self, end: topology.End) -> str:
        """The name of the interface at `end` in this lab."""
        return end.interface

    def run(self, node: str, *args: str, timeout: float = 30) -> str:
        """Run to completion in `node`; its output, or RuntimeError with it."""
        proc = subprocess.run(
            self.command(node, *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{node}: {' '.join(args)}: exit {proc.returncode}: {proc.stdout}")
        return proc.stdout

    def configure(self) -> None:
        """Once the links exist: every end up with its MAC (topology.LINKS), then
        the nodes' addresses, routes and bridge (topology.NODES). The NAT's ends
        get no address: the data path owns them, and carries its MACs itself
        (theirs are only for readable captures)."""
        for link in topology.LINKS:
            for end in (link.a, link.b):
                inside = functools.partial(self.command, end.node)
                set_up_plain_in(inside, self.device(end), mac=end.mac)
        for node in topology.NODES:
            for args in node.commands:
                self.run(node.name, *args)

    def start(self, node: str, args: list[str], log: str) -> subprocess.Popen[bytes]:
        """A process in `node` that stop_processes() ends; its output goes to `log`
        in the work directory."""
        proc = start(self.command(node, *args), self.workdir / log)
        self.procs.append(proc)
        return proc

    def stop_process(self, proc: subprocess.Popen[bytes]) -> None:
        stop(proc)
        self.procs.remove(proc)

    def stop_processes(self) -> None:
        for proc in reversed(self.procs):
            stop(proc)
        self.procs.clear()

    def listening(self, node: str, port: int, udp: bool = False) -> bool:
        out = subprocess.run(
            self.command(node, "ss", "-Hlun" if udp else "-Hltn", f"sport = :{port}"),
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return bool(out.stdout.strip())

    def start_server(
        self, node: str, args: list[str], port: int, log: str, udp: bool = False
    ) -> subprocess.Popen[bytes]:
        """A server in `node`, once it listens on `port` (bounded wait)."""
        proc = self.start(node, args, log)
        what = f"{args[0]} listens on {node}:{port}"
        wait_until(what, lambda: self.listening(node, port, udp), 15, proc)
        return proc

    def quicknat(self, *args: str, socket: Path | None = None) -> str:
        """`quicknat ARGS --socket` against this lab's NAT (or `socket`): its
        output."""
        proc = subprocess.run(
            [str(QUICKNAT), *args, "--socket", str(socket or self.socket)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        return proc.stdout.rstrip()

    def sessions(self, *filters: str) -> list[dict[str, Any]]:
        """`quicknat sessions --json FILTERS` of every part of the NAT that
        holds sessions (the offload lab: each instance)."""
        rows: list[dict[str, Any]] = json.loads(self.quicknat("sessions", "--json", *filters))
        return rows
