"""The namespace lab with the NAT on quicknat-swpath: its nodes and its life
(`make run-swpath`: topo/run_swpath.py; lab.e2e; bench/linux_compare.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from lab import topology
from lab.netns import (
    add_veth,
    create_namespace,
    delete_namespace,
    in_namespace,
)
from lab.nodes import QUICKNAT, Nodes
from lab.processes import remove_runtime_dir, signals_ignored, wait_for_unix_socket
from lab.swpath import (
    SWPATH,
    compile_commands,
    state_file,
    swpath_command,
)

REPO = Path(__file__).resolve().parents[2]
NAT = "qn-lab-nat"
# swpath's worker polls adaptively (--idle-sleep-us): the lab shares its
# CPUs with the hosts' and the kernel's work (srv's receive runs in softirqs
# on them), which a worker polling without a pause would starve; the peak
# rate is the same either way (docs/benchmarks.md).
IDLE_SLEEP_US = 20
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
        self.pmd = ""  # the PMD swpath runs on
        self.prefix = f"quicknat-lab-{os.getpid()}"
        self.state = state_file(self.prefix)  # its sessions, for a restart
        self.commands: Path | None = None

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
        self.state.unlink(missing_ok=True)
        remove_runtime_dir(self.prefix)

    def start_swpath(self, commands: Path | None = None, pmd: str | None = None) -> None:
        """swpath with topo/lab.toml's commands, or `commands` (a benchmark's),
        on AF_XDP where it works (the kernel's XDP on veth, DPDK's net_af_xdp),
        else on af_packet, with one line saying why; `pmd` (or
        $QUICKNAT_LAB_PMD) forces one."""
        if commands is None:
            commands = compile_commands(topology.CONFIG, self.workdir / "nat.cmds")
        choice = pmd or os.environ.get("QUICKNAT_LAB_PMD", "af_xdp")
        if choice == "af_xdp":
            try:
                self._start_swpath(commands, "af_xdp")
                return
            except RuntimeError:
                log = (self.workdir / "swpath.log").read_text(errors="replace").splitlines()
                why = next((x for x in reversed(log) if x.strip()), "no message")
                print(f"swpath: AF_XDP not usable here ({why.strip()}); using af_packet")
                (self.workdir / "swpath.log").rename(self.workdir / "swpath-af_xdp.log")
        self._start_swpath(commands, "af_packet")

    def _start_swpath(self, commands: Path, pmd: str) -> None:
        command = swpath_command(
            topology.nat_ports(), commands, self.socket, self.prefix, pmd, self.state, IDLE_SLEEP_US
        )
        self.commands = commands
        self.swpath = self.start(topology.NAT, command, "swpath.log")
        try:
            wait_for_unix_socket(self.socket, 30, self.swpath)
        except RuntimeError:
            self.stop_process(self.swpath)
            self.swpath = None
            raise
        self.pmd = pmd

    def restart_swpath(self, sig: int = signal.SIGKILL, keep_state: bool = True) -> float:
        """Ends swpath with `sig` (kill -9 by default: a crash) and runs the same
        command again, which takes over its sessions (unless `keep_state` is
        False: its state file is deleted in between, as a reboot would); the
        seconds from the signal until the new one serves its control socket."""
        assert self.swpath is not None and self.commands is not None
        start = time.monotonic()
        os.killpg(self.swpath.pid, sig)
        self.swpath.wait(15)
        self.procs.remove(self.swpath)
        if not keep_state:
            self.state.unlink(missing_ok=True)
        self._start_swpath(self.commands, self.pmd)
        return time.monotonic() - start


@contextlib.contextmanager
def running_lab(
    workdir: Path, nat: bool = True, commands: Path | None = None, pmd: str | None = None
) -> Iterator[NetnsLab]:
    """The lab built, with swpath running if `nat` (on `commands` and `pmd`
    when given); torn down on the way out, whatever happened."""
    lab = NetnsLab(workdir)
    try:
        lab.build()
        if nat:
            lab.start_swpath(commands, pmd)
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
