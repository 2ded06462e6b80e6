#!/usr/bin/env python3
"""`make run`: the network-namespace lab with the NAT on quicknat-swpath (DPDK).

Builds the topology of netns_lab.toml out of namespaces and veths, starts
quicknat-swpath in the "nat" namespace on net_af_packet devices bound to its
veth ends, then shows translated traffic from the inside hosts: ping, a download
with curl from a web server on the outside host, iperf3 TCP for 3 s, and the
session table and counters swpath keeps. `--shell` then keeps the lab up until
Ctrl-C. Processes and namespaces are removed on exit, on error and on
SIGINT/SIGTERM. Needs root and `make build`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lab.netns import (  # noqa: E402
    add_veth,
    create_namespace,
    delete_namespace,
    in_namespace,
    listening,
    run,
    set_up_plain,
)
from lab.processes import start, stop, wait_for_unix_socket, wait_until  # noqa: E402
from lab.swpath import SWPATH, swpath_command  # noqa: E402

REPO = HERE.parent
QUICKNAT = REPO / ".venv" / "bin" / "quicknat"
CONFIG = HERE / "netns_lab.toml"
NAT = "qn-lab-nat"
DOWNLOAD_MB = 20
STEP_TIMEOUT_S = 30


@dataclass(frozen=True)
class Host:
    """A host namespace with one interface, eth0, whose peer `nat_end` sits in
    the NAT's namespace. Addresses and MACs match netns_lab.toml."""

    namespace: str
    address: str  # a.b.c.d/len
    gateway: str
    mac: str
    nat_end: str
    router_mac: str

    @property
    def ip(self) -> str:
        return self.address.split("/")[0]


H1 = Host("qn-lab-h1", "10.0.0.10/24", "10.0.0.1", "02:00:00:00:01:10", "in0", "02:00:00:00:00:01")
H2 = Host("qn-lab-h2", "10.0.1.10/24", "10.0.1.1", "02:00:00:00:02:10", "in1", "02:00:00:00:00:02")
SRV = Host(
    "qn-lab-srv",
    "198.51.100.10/24",
    "198.51.100.1",
    "02:00:00:00:03:10",
    "out0",
    "02:00:00:00:00:03",
)
HOSTS = (H1, H2, SRV)  # DPDK port N is HOSTS[N].nat_end (the config's `port`)


def missing() -> str | None:
    if os.geteuid() != 0:
        return "make run needs root (network namespaces, af_packet)"
    if not SWPATH.exists():
        return f"make run needs {SWPATH.relative_to(REPO)}: run `make build`"
    if not QUICKNAT.exists():
        return f"make run needs {QUICKNAT.relative_to(REPO)}: run `make deps`"
    return None


def build_topology() -> None:
    create_namespace(NAT)
    for host in HOSTS:
        create_namespace(host.namespace)
        add_veth(NAT, host.nat_end, host.namespace, "eth0")
        # The NAT end carries the router's MAC only for readable captures:
        # af_packet reads every frame whatever its destination.
        set_up_plain(NAT, host.nat_end, mac=host.router_mac)
        set_up_plain(host.namespace, "eth0", mac=host.mac)
        run("ip", "-n", host.namespace, "addr", "add", host.address, "dev", "eth0")
        run("ip", "-n", host.namespace, "route", "add", "default", "via", host.gateway)


def delete_topology() -> None:
    for namespace in (NAT, *(host.namespace for host in HOSTS)):
        delete_namespace(namespace)


class Lab:
    """The running lab: what it started, so that stop() can end all of it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.socket = workdir / "swpath.sock"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.swpath: subprocess.Popen[bytes] | None = None

    def start_swpath(self) -> None:
        commands = self.workdir / "nat.cmds"
        compiled = subprocess.run(
            [str(QUICKNAT), "swpath-commands", str(CONFIG)],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        commands.write_text(compiled.stdout)
        command = swpath_command(
            dict(enumerate(host.nat_end for host in HOSTS)),
            commands,
            self.socket,
            f"quicknat-lab-{os.getpid()}",
        )
        self.swpath = self._start(in_namespace(NAT, *command), "swpath.log")
        wait_for_unix_socket(self.socket, 30, self.swpath)

    def start_servers(self) -> None:
        www = self.workdir / "www"
        www.mkdir()
        (www / "download.bin").write_bytes(os.urandom(DOWNLOAD_MB << 20))
        web = self._start(
            in_namespace(
                SRV.namespace,
                sys.executable,
                "-m",
                "http.server",
                "80",
                "--bind",
                SRV.ip,
                "--directory",
                str(www),
            ),
            "http.log",
        )
        iperf = self._start(in_namespace(SRV.namespace, "iperf3", "-s"), "iperf3.log")
        wait_until("the web server listens", lambda: listening(SRV.namespace, 80), 15, web)
        wait_until("iperf3 listens", lambda: listening(SRV.namespace, 5201), 15, iperf)

    def _start(self, args: list[str], log: str) -> subprocess.Popen[bytes]:
        proc = start(args, self.workdir / log)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.procs):
            stop(proc)
        (self.workdir / "www" / "download.bin").unlink(missing_ok=True)


def step(title: str, host: Host, command: list[str]) -> bool:
    print(f"\n=== {title}: {' '.join(command)}", flush=True)
    try:
        proc = subprocess.run(
            in_namespace(host.namespace, *command),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=STEP_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        print(f"(no answer within {STEP_TIMEOUT_S} s)")
        return False
    print(proc.stdout.rstrip())
    return proc.returncode == 0


def quicknat(*args: str) -> str:
    return subprocess.run(
        [str(QUICKNAT), *args], capture_output=True, text=True, timeout=30, check=False
    ).stdout.rstrip()


def demo(lab: Lab) -> bool:
    url = f"http://{SRV.ip}/download.bin"
    results = [
        step("ping from h1 to srv", H1, ["ping", "-c", "3", "-W", "2", SRV.ip]),
        step("ping from h2 to srv", H2, ["ping", "-c", "3", "-W", "2", SRV.ip]),
        step(
            f"{DOWNLOAD_MB} MB from the web server on srv, fetched by h1",
            H1,
            [
                "curl",
                "-sS",
                "-o",
                "/dev/null",
                "--max-time",
                "20",
                "-w",
                "HTTP %{http_code}, %{size_download} bytes in %{time_total} s\n",
                url,
            ],
        ),
        step(
            "iperf3 TCP from h1 to srv (3 s)",
            H1,
            ["iperf3", "-c", SRV.ip, "-t", "3", "--connect-timeout", "5000"],
        ),
    ]
    print(f"\n=== sessions in quicknat-swpath: quicknat sessions --socket {lab.socket}")
    sessions = quicknat("sessions", "--socket", str(lab.socket))
    print(sessions)
    print(f"\n=== counters (non-zero): quicknat stats --socket {lab.socket}")
    print(nonzero_counters(quicknat("stats", "--socket", str(lab.socket))))
    return all(results) and not sessions.startswith("0 sessions")


def nonzero_counters(stats_json: str) -> str:
    """The totals of `quicknat stats`, without the zeros and the per-worker
    copies: the 40-odd counters would hide the few that moved."""
    try:
        counters = json.loads(stats_json)["counters"]
    except (ValueError, KeyError, TypeError):
        return stats_json
    return "\n".join(f"  {name:<20} {value}" for name, value in counters.items() if value)


def shell_help(lab: Lab) -> None:
    print("\nThe lab stays up until Ctrl-C. Enter a host with:")
    for host in HOSTS:
        print(f"  ip netns exec {host.namespace} bash    # {host.ip}")
    print(f"Watch the sessions:\n  watch -n1 {QUICKNAT} sessions --socket {lab.socket}")
    print(f"Counters: {QUICKNAT} stats --socket {lab.socket}")


def interrupted(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shell", action="store_true", help="keep the lab up until Ctrl-C")
    args = parser.parse_args()
    reason = missing()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="quicknat-netns-lab-"))
    lab = Lab(workdir)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, interrupted)
    try:
        build_topology()
        lab.start_swpath()
        lab.start_servers()
        ok = demo(lab)
        if args.shell:
            shell_help(lab)
            assert lab.swpath is not None
            try:
                code = lab.swpath.wait()
            except SystemExit:
                return 0  # Ctrl-C is how --shell ends
            print(f"quicknat-swpath exited with {code}; see {workdir / 'swpath.log'}")
            return 1
        return 0 if ok else 1
    except (RuntimeError, subprocess.SubprocessError) as exc:
        print(f"netns lab: {exc}; logs in {workdir}", file=sys.stderr)
        return 1
    finally:
        # A second Ctrl-C must not cut the clean-up short.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
        lab.stop()
        delete_topology()
        print(f"\nlab stopped, namespaces removed; logs: {workdir}")


if __name__ == "__main__":
    sys.exit(main())
