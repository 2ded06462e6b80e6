#!/usr/bin/env python3
"""`make run`: the network-namespace lab with the NAT on quicknat-swpath (DPDK).

Builds the lab's topology (topo/lab/topology.py) out of network namespaces
(qn-lab-NODE) and veths, starts quicknat-swpath with topo/lab.toml in the
qn-lab-nat namespace on net_af_packet devices bound to its veth ends, then
shows translated traffic (topo/lab/demo.py): ping, a download with curl, iperf3
TCP for 3 s, a traceroute through the NAT and the router beyond it, and the
session table and counters swpath keeps. `--shell` then keeps the lab up until
Ctrl-C. Processes and namespaces are removed on exit, on error and on
SIGINT/SIGTERM. Needs root and `make build`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lab import topology  # noqa: E402
from lab.demo import demo  # noqa: E402
from lab.netns import (  # noqa: E402
    add_veth,
    create_namespace,
    delete_namespace,
    in_namespace,
)
from lab.nodes import QUICKNAT, Nodes  # noqa: E402
from lab.processes import raise_on_signals, signals_ignored, wait_for_unix_socket  # noqa: E402
from lab.swpath import SWPATH, swpath_command  # noqa: E402

REPO = HERE.parent
NAT = "qn-lab-nat"
DOWNLOAD_MB = 20


def namespace(node: str) -> str:
    return NAT if node == topology.NAT else f"qn-lab-{node}"


def missing() -> str | None:
    if os.geteuid() != 0:
        return "the namespace lab needs root (network namespaces, af_packet)"
    if not SWPATH.exists():
        return f"the namespace lab needs {SWPATH.relative_to(REPO)}: run `make build`"
    if not QUICKNAT.exists():
        return f"the namespace lab needs {QUICKNAT.relative_to(REPO)}: run `make deps`"
    return None


class NetnsLab(Nodes):
    """The topology in named namespaces, and what runs in them."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir, workdir / "swpath.sock")
        self.swpath: subprocess.Popen[bytes] | None = None

    def command(self, node: str, *args: str) -> list[str]:
        return in_namespace(namespace(node), *args)

    def build(self) -> None:
        """Namespaces, veths, and the nodes' addresses and routes."""
        create_namespace(NAT)
        for node in topology.NODES:
            create_namespace(namespace(node.name))
        for link in topology.LINKS:
            a, b = link.a, link.b
            add_veth(namespace(a.node), a.interface, namespace(b.node), b.interface)
        self.configure()

    def delete(self) -> None:
        for node in (topology.NAT, *(node.name for node in topology.NODES)):
            delete_namespace(namespace(node))

    def start_swpath(self) -> None:
        commands = self.workdir / "nat.cmds"
        compiled = subprocess.run(
            [str(QUICKNAT), "swpath-commands", str(topology.CONFIG)],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        commands.write_text(compiled.stdout)
        command = swpath_command(
            topology.nat_ports(), commands, self.socket, f"quicknat-lab-{os.getpid()}"
        )
        self.swpath = self.start(topology.NAT, command, "swpath.log")
        wait_for_unix_socket(self.socket, 30, self.swpath)


@contextlib.contextmanager
def running_lab(workdir: Path, nat: bool = True) -> Iterator[NetnsLab]:
    """The lab built, with swpath running if `nat`; torn down on the way out,
    whatever happened."""
    lab = NetnsLab(workdir)
    try:
        lab.build()
        if nat:
            lab.start_swpath()
        yield lab
    finally:
        with signals_ignored():
            lab.stop_processes()
            lab.delete()


def shell_help(lab: NetnsLab) -> None:
    print("\nThe lab stays up until Ctrl-C. Enter a node with:")
    for node in topology.NODES:
        print(f"  ip netns exec {namespace(node.name)} bash    # {node.name} {node.ip}")
    print(f"Watch the sessions:\n  watch -n1 {QUICKNAT} sessions --socket {lab.socket}")
    print(f"Counters: {QUICKNAT} stats --socket {lab.socket}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shell", action="store_true", help="keep the lab up until Ctrl-C")
    args = parser.parse_args()
    reason = missing()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="quicknat-netns-lab-"))
    raise_on_signals()
    try:
        with running_lab(workdir) as lab:
            ok = demo(lab, DOWNLOAD_MB)
            if not args.shell:
                return 0 if ok else 1
            shell_help(lab)
            assert lab.swpath is not None
            try:
                code = lab.swpath.wait()
            except SystemExit:
                return 0  # Ctrl-C is how --shell ends
            print(f"quicknat-swpath exited with {code}; see {workdir / 'swpath.log'}")
            return 1
    except (RuntimeError, subprocess.SubprocessError) as exc:
        print(f"netns lab: {exc}; logs in {workdir}", file=sys.stderr)
        return 1
    finally:
        (workdir / "www" / "download.bin").unlink(missing_ok=True)
        print(f"\nlab stopped, namespaces removed; logs: {workdir}")


if __name__ == "__main__":
    sys.exit(main())
