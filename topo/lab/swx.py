"""The one place that knows how to start quicknat-swx, the P4 program on DPDK's
SWX pipeline (swpath/swx/, docs/p4-targets.md), on veths: as simple_switch_grpc
--no-p4, it starts with no program and the controller pushes one."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from pathlib import Path

from lab import processes
from lab.swpath import AF_PACKET_FRAMES

REPO = Path(__file__).resolve().parents[2]
SWX = REPO / "swpath" / "build" / "swx" / "quicknat-swx"
# The program's PNA builds (p4src/Makefile: the default in BUILD, the
# variants in BUILD/small, BUILD/lab) and the file quicknat-swx is pushed.
BUILD = REPO / "p4src" / "build" / "pna"
DEVICE_CONFIG = "quicknat.spec"
# A pipeline thread that found no packet sleeps this long (quicknat-swx
# --idle-sleep-us): a lab shares its two CPUs with hosts, a controller and
# PTF, which a thread polling flat out would starve. 50 us adds at most that
# to a packet that arrives while it sleeps.
IDLE_SLEEP_US = 50


def missing() -> list[str]:
    """What this machine lacks to run the switch."""
    return [] if SWX.exists() else [f"{SWX.relative_to(REPO)} (make build)"]


def file_prefix(workdir: Path) -> str:
    """The EAL file prefix of the switch a lab or test run keeps in `workdir`:
    one per run, so two runs never share DPDK's runtime directory."""
    return "quicknat-swx-" + hashlib.sha256(str(workdir).encode()).hexdigest()[:12]


def switch_command(
    ports: Mapping[int, str],
    grpc_addr: str,
    workdir: Path,
    idle_sleep_us: int = IDLE_SLEEP_US,
) -> list[str]:
    """quicknat-swx with P4 port N on interface `ports[N]` (net_af_packet: no
    hugepages or NIC needed), one pipeline thread on lcore 1, P4Runtime on
    `grpc_addr`. Its CPU port (0) is internal: packet-ins and packet-outs go
    through the P4Runtime stream."""
    devices = {
        port: f"net_af_packet{port},iface={name},framecnt={AF_PACKET_FRAMES}"
        for port, name in ports.items()
    }
    return command(devices, grpc_addr, workdir, idle_sleep_us)


def null_switch_command(ports: list[int], grpc_addr: str, workdir: Path) -> list[str]:
    """The same on net_null devices: a switch that sees no packets (for the
    control plane alone: P4Runtime benchmarks and tests)."""
    return command({port: f"net_null{port},no-rx=1" for port in ports}, grpc_addr, workdir)


def command(
    devices: Mapping[int, str],
    grpc_addr: str,
    workdir: Path,
    idle_sleep_us: int = IDLE_SLEEP_US,
) -> list[str]:
    """quicknat-swx with P4 port N on the DPDK virtual device `devices[N]`;
    its pipeline thread sleeps `idle_sleep_us` after a round with few
    packets (0: it polls its core without a pause, as deployed). Its
    learner timeout classes come with the program (the controller's
    [offload] learn_timeouts)."""
    vdevs, mapping = [], []
    for port, device in sorted(devices.items()):
        vdevs += ["--vdev", device]
        mapping += ["--port", f"{port}={device.split(',')[0]}"]
    return [
        str(SWX),
        "-l",
        "0,1",
        *vdevs,
        "--file-prefix",
        file_prefix(workdir),
        # no files of its own: a switch killed and started again (a test
        # of a crash) finds none of its predecessor's in its way
        "--no-shconf",
        "--no-huge",
        "-m",
        "512",
        "--no-pci",
        "--",
        *mapping,
        "--grpc-addr",
        grpc_addr,
        "--idle-sleep-us",
        str(idle_sleep_us),
    ]


def push_with_finsy(grpc_addr: str, timeout: float) -> None:
    """The program (BUILD's spec and P4Info) pushed to the switch at
    `grpc_addr` by finsy, a P4Runtime client from PyPI that nobody here
    wrote, within `timeout` seconds (a first push compiles the pipeline).
    (Imported here, as in learned().)"""
    import finsy

    options = finsy.SwitchOptions(
        p4info=BUILD / "quicknat.p4info.txtpb", p4blob=BUILD / DEVICE_CONFIG, device_id=1
    )

    async def push() -> None:
        async with finsy.Switch("quicknat-swx", grpc_addr, options):
            pass

    asyncio.run(asyncio.wait_for(push(), timeout))


def learned(grpc_addr: str) -> int:
    """Sessions the switch learned so far, by the program's own count: the
    learn tags that missed its in2out learner and so added an entry
    (learn_counter[LEARN_IN2OUT_ADDED], nat.p4), read over P4Runtime (a
    read needs no arbitration: a second client beside the controller).
    (Imported here: the Mininet lab runs lab/ under Debian's Python, which
    has neither gRPC nor the controller.)"""
    import grpc
    from finsy.proto import p4r, p4r_grpc
    from quicknat.p4.constants import LEARN_IN2OUT_ADDED
    from quicknat.p4rt.p4info import P4Info

    info = P4Info.load(BUILD / "quicknat.p4info.txtpb")
    counter = p4r.CounterEntry(
        counter_id=info.object_id("learn_counter"), index=p4r.Index(index=LEARN_IN2OUT_ADDED)
    )

    async def read() -> int:
        async with grpc.aio.insecure_channel(grpc_addr) as channel:
            stub = p4r_grpc.P4RuntimeStub(channel)
            request = p4r.ReadRequest(device_id=1, entities=[p4r.Entity(counter_entry=counter)])
            async for reply in stub.Read(request):
                for entity in reply.entities:
                    return int(entity.counter_entry.data.packet_count)
        return 0

    return asyncio.run(read())


def remove_runtime_dir(workdir: Path) -> None:
    """DPDK's runtime directory of a stopped switch (its telemetry socket):
    the EAL leaves it behind."""
    processes.remove_runtime_dir(file_prefix(workdir))


def telemetry(prefix: str, command: str) -> object:
    """One command over the telemetry socket of the DPDK process of EAL file
    prefix `prefix` (file_prefix for a lab's switch): quicknat.dpdk_telemetry,
    the exporter's reader. (Imported here, as in learned().)"""
    from quicknat.dpdk_telemetry import query

    return query(prefix, command)
