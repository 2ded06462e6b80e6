#!/usr/bin/env python3
"""`make run-bmv2`: the Mininet lab with the NAT on BMv2 and the QuickNAT controller.

Builds the topology of bmv2_lab.toml, starts simple_switch_grpc as the switch and
`quicknat controller`, then shows translated traffic from an inside host: ping,
a web page with curl, and iperf3, and lists the sessions the controller
installed. `--cli` then opens the Mininet CLI; otherwise the lab stops and
cleans up. Runs with Debian's python3 (Mininet comes from apt); the controller
runs from the project's virtualenv.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
QUICKNAT = REPO / ".venv" / "bin" / "quicknat"
CONFIG = HERE / "bmv2_lab.toml"
GRPC_PORT = 50001


def missing() -> list[str]:
    needs = []
    if shutil.which("simple_switch_grpc") is None:
        needs.append("simple_switch_grpc (BMv2 with P4Runtime, built from p4lang sources)")
    try:
        import mininet  # noqa: F401
    except ImportError:
        needs.append("Mininet (apt-get install mininet, or `make deps`)")
    if not QUICKNAT.exists():
        needs.append(f"{QUICKNAT} (run `make deps`)")
    if os.geteuid() != 0:
        needs.append("root")
    return needs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", action="store_true", help="open the Mininet CLI after the demo")
    args = parser.parse_args()
    needs = missing()
    if needs:
        print("make run-bmv2 needs: " + "; ".join(needs), file=sys.stderr)
        return 2

    sys.path.insert(0, str(HERE))
    from lab.bmv2 import switch_command
    from mininet.log import setLogLevel
    from mininet.net import Mininet
    from mininet.node import Switch
    from mininet.topo import Topo

    workdir = Path(tempfile.mkdtemp(prefix="quicknat-lab-"))

    class Bmv2Switch(Switch):  # type: ignore[misc]
        """simple_switch_grpc on the Mininet switch's interfaces (port N = sN-ethN)."""

        def start(self, controllers: object) -> None:
            ports = {self.ports[i]: i.name for i in self.intfList() if i.name != "lo"}
            command = switch_command(ports, f"127.0.0.1:{GRPC_PORT}", workdir)
            with open(workdir / "switch.log", "w") as log:
                self.proc = subprocess.Popen(
                    command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )

        def stop(self, deleteIntfs: bool = True) -> None:  # Mininet's parameter name
            if getattr(self, "proc", None) and self.proc.poll() is None:
                self.proc.terminate()
                self.proc.wait(10)
            super().stop(deleteIntfs)

    class LabTopo(Topo):  # type: ignore[misc]
        def build(self) -> None:
            s1 = self.addSwitch("s1", cls=Bmv2Switch, inNamespace=False)
            h1 = self.addHost(
                "h1", ip="10.0.0.10/24", mac="00:00:00:00:00:01", defaultRoute="via 10.0.0.1"
            )
            h2 = self.addHost(
                "h2", ip="10.0.1.10/24", mac="00:00:00:00:00:02", defaultRoute="via 10.0.1.1"
            )
            srv = self.addHost(
                "srv",
                ip="198.51.100.10/24",
                mac="00:00:00:00:00:03",
                defaultRoute="via 198.51.100.1",
            )
            for port, host in ((1, h1), (2, h2), (3, srv)):
                self.addLink(host, s1, port2=port)

    setLogLevel("warning")
    net = Mininet(topo=LabTopo(), controller=None, autoSetMacs=False)
    controller = None
    try:
        net.start()
        for host in net.hosts:
            # veth checksum offload would leave UDP/TCP checksums unfilled on the wire.
            host.cmd(f"ethtool -K {host.defaultIntf()} tx off rx off")
        wait_for_port("127.0.0.1", GRPC_PORT, 30)
        sock = workdir / "controller.sock"
        command = [
            str(QUICKNAT),
            "controller",
            "--config",
            str(CONFIG),
            "--grpc-addr",
            f"127.0.0.1:{GRPC_PORT}",
            "--socket",
            str(sock),
            "--reset",
        ]
        with open(workdir / "controller.log", "w") as log:
            controller = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_for_connected(sock, 30)
        demo(net, sock, workdir)
        print(f"\nlogs: {workdir}\nwatch sessions: {QUICKNAT} sessions --socket {sock}")
        if args.cli:
            from mininet.cli import CLI

            CLI(net)
        return 0
    finally:
        if controller is not None:
            controller.terminate()
            controller.wait(10)
        net.stop()


def wait_for_port(host: str, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit(f"simple_switch_grpc did not listen on {host}:{port}")


def wait_for_connected(sock: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(
            [str(QUICKNAT), "stats", "--socket", str(sock)],
            capture_output=True,
            text=True,
            check=False,
        )
        if '"connected": true' in out.stdout:
            return
        time.sleep(0.2)
    raise SystemExit("the controller did not connect to the switch; see its log")


def demo(net: object, sock: Path, workdir: Path) -> None:
    h1, srv = net.get("h1"), net.get("srv")  # type: ignore[attr-defined]
    www = workdir / "www"
    www.mkdir()
    (www / "download.bin").write_bytes(os.urandom(5 << 20))
    web = srv.popen(
        [
            sys.executable,
            "-m",
            "http.server",
            "80",
            "--bind",
            "198.51.100.10",
            "--directory",
            str(www),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    iperf = srv.popen(["iperf3", "-s"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for port in (80, 5201):  # bounded wait until both servers listen
            deadline = time.monotonic() + 15
            while f":{port} " not in srv.cmd("ss -Hltn"):
                if time.monotonic() > deadline:
                    raise SystemExit(f"srv: nothing listens on port {port}")
                time.sleep(0.1)
        steps = [
            ("ping from h1 to srv", h1, "ping -c 3 -W 2 198.51.100.10"),
            (
                "5 MB from the web server on srv, fetched by h1",
                h1,
                "curl -sS -o /dev/null --max-time 30 "
                "-w 'HTTP %{http_code}, %{size_download} bytes in %{time_total} s\\n' "
                "http://198.51.100.10/download.bin",
            ),
            (
                "iperf3 TCP from h1 to srv (3 s)",
                h1,
                "iperf3 -c 198.51.100.10 -t 3 --connect-timeout 5000 | tail -4",
            ),
        ]
        for title, host, command in steps:
            print(f"\n=== {title}: {command}")
            print(host.cmd(command).rstrip())
        print("\n=== sessions installed by the controller")
        print(
            subprocess.run(
                [str(QUICKNAT), "sessions", "--socket", str(sock)],
                capture_output=True,
                text=True,
                check=False,
            ).stdout
        )
    finally:
        for proc in (web, iperf):
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    sys.exit(main())
