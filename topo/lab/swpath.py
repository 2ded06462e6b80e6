"""The one place that knows how to start quicknat-swpath on veths (labs, PTF)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SWPATH = REPO / "swpath" / "build" / "app" / "quicknat-swpath"
# The `quicknat` the labs, PTF and benches run: this tree's, or an installed
# one named by $QUICKNAT (e.g. a plain `pip install`'s, to test that install).
QUICKNAT = Path(os.environ.get("QUICKNAT", REPO / ".venv" / "bin" / "quicknat"))

# af_packet's default ring of 512 frames overflows under a TCP burst (iperf3)
# before a worker drains it; 32768 frames of 2 KB keep up.
AF_PACKET_FRAMES = 32768


def compile_commands(config: Path, out: Path, slow_path: str | None = None) -> Path:
    """The TOML configuration as swpath's command lines, written to `out`, by
    the one configuration parser (`quicknat swpath-commands`); with
    `slow_path`, those of that [[slow_path]] instance (offload mode)."""
    instance = ["--slow-path", slow_path] if slow_path is not None else []
    compiled = subprocess.run(
        [str(QUICKNAT), "swpath-commands", *instance, str(config)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    out.write_text(compiled.stdout)
    return out


def state_file(file_prefix: str) -> Path:
    """Where an instance keeps its sessions for a successor (--state): shared
    memory, named after its EAL file prefix, which is unique per lab."""
    return Path("/dev/shm") / f"{file_prefix}.state"


def swpath_command(
    ports: Mapping[int, str],
    commands: Path,
    control: Path,
    file_prefix: str,
    pmd: str = "af_packet",
    state: Path | None = None,
    idle_sleep_us: int = 0,
) -> list[str]:
    """quicknat-swpath with DPDK port N on interface `ports[N]` (net_af_packet, or
    net_af_xdp with pmd="af_xdp": no hugepages or NIC needed either way), its
    own EAL file prefix and control socket, so that several instances (a lab, a
    test run) never share one.

    DPDK numbers ports in --vdev order from 0, so a number below the highest
    that names no interface gets a net_null placeholder: a configuration written
    for BMv2's port numbers (from 1) then runs unchanged. swpath starts only the
    ports its configuration names, so a placeholder never sends or receives.
    With `state` (state_file()), the same command run again takes over the
    sessions of the process it replaces (docs/swpath.md); with
    `idle_sleep_us`, its worker polls adaptively (--idle-sleep-us)."""
    vdevs = []
    for port in range(max(ports) + 1):
        if port in ports and pmd == "af_xdp":
            device = f"net_af_xdp{port},iface={ports[port]}"
        elif port in ports:
            device = f"net_af_packet{port},iface={ports[port]},framecnt={AF_PACKET_FRAMES}"
        else:
            device = f"net_null{port}"
        vdevs += ["--vdev", device]
    return [
        str(SWPATH),
        *vdevs,
        "--file-prefix",
        file_prefix,
        "--no-shconf",
        "--no-huge",
        "-m",
        "512",
        "--no-pci",
        "--",
        "--commands",
        str(commands),
        "--control",
        str(control),
        *(["--state", str(state)] if state is not None else []),
        *(["--idle-sleep-us", str(idle_sleep_us)] if idle_sleep_us else []),
    ]
