#!/usr/bin/env python3
"""`make bench-bmv2`: new-flow setup through the controller, side by side with the
raw P4Runtime write rate of the same simple_switch_grpc, in one run.

1. raw: a trivial client inserts NAT entries in WriteRequests of 500 (entries/s);
2. setup: a burst of distinct UDP flows enters the inside port; the rate is flows
   whose two entries are installed per second (packet-in -> QNS -> allocate ->
   one WriteRequest per drain -> packet-out), and every first packet must come
   out translated (no first-packet loss);
3. latency: flows one at a time, first packet in -> translated packet out;
4. memory: controller bytes per session (tracemalloc over the NAT state of
   100,000 sessions).
Target: setup flows/s >= 70% of raw entries/s / 2. Writes bench/results/bmv2.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cpu_times import cpu_seconds, thread_cpu_seconds
from lab.bmv2 import switch_binary, switch_command
from lab.netns import Topology, in_namespace
from lab.processes import start, stop, wait_for_tcp, wait_for_unix_socket
from lab.swpath import QUICKNAT
from quicknat.config import parse_config
from quicknat.config.model import Zone
from quicknat.controller.install_state import Installs
from quicknat.controller.program import Pipeline
from quicknat.controller.status import query
from quicknat.nat.core import Nat
from quicknat.nat.session import FlowKey, Session
from quicknat.p4.constants import PacketOutMode
from quicknat.p4rt.client import P4RuntimeClient
from quicknat.p4rt.entities import packet_metadata, table_entry, update
from quicknat.packet import checksum

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

GRPC = "127.0.0.1:9560"
SOL_PACKET, PACKET_STATISTICS = 263, 6  # linux/if_packet.h; not in Python's socket
NAMESPACE = "qn-bench"
ROUTER_IN_MAC = bytes.fromhex("020000000001")
HOST_MAC = bytes.fromhex("020000000110")
# The controller tests' configuration pieces (controller/tests/configs/): the
# switch's two ports, and one SNAT rule over the /16 the bench's hosts are in.
CONFIG = "\n".join(
    (REPO / "controller" / "tests" / "configs" / f"{piece}.toml").read_text()
    for piece in ("switch", "snat_bench")
)


def udp_frame(src: int, sport: int, dst: int, dport: int) -> bytes:
    """A UDP packet from an inside host, built by hand so thousands take no time."""
    payload = b"quicknat-bench"
    udp_len = 8 + len(payload)
    ip = bytearray(20)
    ip[0], ip[8], ip[9] = 0x45, 64, 17
    ip[2:4] = (20 + udp_len).to_bytes(2, "big")
    ip[12:16], ip[16:20] = src.to_bytes(4, "big"), dst.to_bytes(4, "big")
    ip[10:12] = checksum(bytes(ip)).to_bytes(2, "big")
    udp = bytearray(
        sport.to_bytes(2, "big") + dport.to_bytes(2, "big") + udp_len.to_bytes(2, "big")
    )
    udp += b"\0\0" + payload
    pseudo = ip[12:20] + b"\0\x11" + udp_len.to_bytes(2, "big")
    udp[6:8] = (checksum(bytes(pseudo + udp)) or 0xFFFF).to_bytes(2, "big")
    return ROUTER_IN_MAC + HOST_MAC + b"\x08\x00" + bytes(ip) + bytes(udp)


def flows(count: int, base_port: int) -> list[bytes]:
    dst = int.from_bytes(socket.inet_aton("198.51.100.10"), "big")
    frames = []
    for i in range(count):
        src = (10 << 24) | (i // 200 + 1) << 8 | (i % 200 + 1)  # 10.0.x.y
        frames.append(udp_frame(src, base_port + i % 1000, dst, 53))
    return frames


class Receiver(threading.Thread):
    """Counts and timestamps the packets leaving the outside port."""

    def __init__(self, interface: str) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
        self.sock.bind((interface, 0))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024 * 1024)
        self.sock.settimeout(0.2)
        self.count = 0
        self.times: dict[tuple[int, int], float] = {}  # (inside src, sport) unknown after NAT:
        self.last = 0.0
        self.running = True

    def socket_drops(self) -> int:
        """Packets the kernel dropped for this socket since the last call
        (PACKET_STATISTICS; reading it resets it)."""
        _, drops = struct.unpack("II", self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        return int(drops)

    def run(self) -> None:
        while self.running:
            try:
                data = self.sock.recv(2048)
            except TimeoutError:
                continue
            if len(data) > 34 and data[12:14] == b"\x08\x00" and data[23] == 17:
                self.count += 1
                self.last = time.monotonic()


def raw_write_rate(pipeline: Pipeline, entries: int, batch: int) -> float:
    async def run() -> float:
        client = P4RuntimeClient(GRPC, 1, election_id=10)
        await client.connect()
        await client.set_pipeline(pipeline.p4info.proto, pipeline.device_config, pipeline.cookie)
        p4info = pipeline.p4info
        updates = [
            update(
                1,
                table_entry(
                    p4info,
                    "nat_in2out",
                    {
                        "ipv4_src": 0x0A000000 + i,
                        "ipv4_dst": 0xC6336401,
                        "ip_proto": 17,
                        "l4_sport": 1000,
                        "l4_dport": 53,
                    },
                    "rewrite_src",
                    {"addr": 0xCB007101, "port": 2000 + i % 60000},
                    idle_timeout_ns=300 * 10**9,
                ),
            )
            for i in range(entries)
        ]
        start_time = time.perf_counter()
        for i in range(0, entries, batch):
            errors = await client.write(updates[i : i + batch])
            assert not errors, errors[:3]
        elapsed = time.perf_counter() - start_time
        await client.close()
        return entries / elapsed

    return asyncio.run(run())


def client_costs(pipeline: Pipeline, count: int) -> dict[str, float]:
    """CPU this process spends per P4Runtime message with our client (grpc.aio):
    a packet-out on the stream (sent out of port 2 directly), and a Write of one
    entry. The controller pays the first per flow, twice with the packet-in,
    and the second per batch."""

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread, grpc's too
        return usage.ru_utime + usage.ru_stime

    async def run() -> dict[str, float]:
        client = P4RuntimeClient(GRPC, 1, election_id=10)
        await client.connect()
        p4info = pipeline.p4info
        values = {"egress_port": 2, "ingress_port": 0, "mode": PacketOutMode.DIRECT}
        metadata = packet_metadata(p4info, "packet_out", values)
        frame = flows(1, 20000)[0]
        before = cpu()
        for index in range(count):
            client.packet_out(frame, metadata)
            if index % 64 == 63:
                await asyncio.sleep(0)  # let the stream writer run
        while client.requests_queued():
            await asyncio.sleep(0.001)
        packet_out = (cpu() - before) / count
        writes = [
            update(
                1,
                table_entry(
                    p4info,
                    "nat_out2in",
                    {
                        "ipv4_src": 0xC6336401,
                        "ipv4_dst": 0xCB007101,
                        "ip_proto": 17,
                        "l4_sport": 53,
                        "l4_dport": 2000 + i,
                    },
                    "out2in_rewrite_dst",
                    {"addr": 0x0A000001, "port": 1000},
                ),
            )
            for i in range(count // 10)
        ]
        before = cpu()
        for one in writes:
            errors = await client.write([one])
            assert not errors, errors[:3]
        write = (cpu() - before) / len(writes)
        await client.close()
        return {"packet_out_us": round(1e6 * packet_out, 1), "write_one_us": round(1e6 * write, 1)}

    return asyncio.run(run())


def machine_cpu() -> tuple[int, int]:
    """(idle, total) clock ticks of all CPUs so far (/proc/stat; iowait is idle)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return ticks[3] + ticks[4], sum(ticks[:8])  # guest time is already in user


def controller_stats(sock: Path) -> dict[str, Any]:
    answer = query(sock, "stats")
    assert isinstance(answer, dict)
    return answer


def setup_rate(
    sock: Path,
    frames: list[bytes],
    tx: socket.socket,
    rx: Receiver,
    rate: float,
    pids: dict[str, int],
) -> dict[str, Any]:
    before = controller_stats(sock)["counters"].get("sessions_installed", 0)
    rx.socket_drops()  # from zero
    cpu_before = {name: cpu_seconds(Path(f"/proc/{pid}/stat")) for name, pid in pids.items()}
    switch_threads_before = thread_cpu_seconds(pids["switch"])
    idle_before, total_before = machine_cpu()
    # Paced: BMv2 reads its ports through libpcap, and a line-rate burst from
    # the kernel overflows that buffer before the switch sees the packets, which
    # would measure pcap, not flow setup. `rate` is set above what is measured.
    start_time = time.monotonic()
    for index, frame in enumerate(frames):
        tx.send(frame)
        if index % 50 == 49:
            ahead = start_time + (index + 1) / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    sent = time.monotonic()
    # Done when every flow is installed, or when installs stop progressing for a
    # second (packets BMv2 itself lost never arrive; they are counted below).
    installed, last_change, machine_at_change = 0, sent, machine_cpu()
    while time.monotonic() - last_change < 1.0 and time.monotonic() - sent < 120:
        now_installed = controller_stats(sock)["counters"].get("sessions_installed", 0) - before
        if now_installed != installed:
            installed, last_change = now_installed, time.monotonic()
            machine_at_change = machine_cpu()  # the idle second that ends the wait is not counted
        if installed >= len(frames):
            break
        time.sleep(0.01)
    done = last_change
    # CPU each process spent per installed flow (the sender's pacing included
    # for "bench"): on a small machine they compete for the same cores.
    idle, total = machine_at_change
    idle_fraction = (idle - idle_before) / max(total - total_before, 1)
    cpu = {
        name: cpu_seconds(Path(f"/proc/{pid}/stat")) - cpu_before[name]
        for name, pid in pids.items()
    }
    # BMv2 runs every ingress pass (the punt and the injected first packet) on
    # one thread: the busiest thread's CPU per flow bounds the rate by itself.
    cpu["switch_busiest_thread"] = max(
        t - switch_threads_before.get(tid, 0.0)
        for tid, t in thread_cpu_seconds(pids["switch"]).items()
    )
    time.sleep(1.0)  # let the injected first packets drain out
    stats = controller_stats(sock)
    drops = switch_counters("drop_counter")
    punts = switch_counters("punt_counter")
    return {
        "flows": len(frames),
        "installed": installed,
        "seconds": done - start_time,
        "flows_per_s": installed / (done - start_time),
        "send_seconds": sent - start_time,
        "offered_per_s": rate,
        "first_packets_out": rx.count,
        "receiver_socket_drops": rx.socket_drops(),
        "cpu_us_per_flow": {n: round(1e6 * c / max(installed, 1), 1) for n, c in cpu.items()},
        "machine_idle_fraction": round(idle_fraction, 3),
        "controller": stats["counters"],
        "controller_stream_dropped": stats["stream_queue_dropped"],
        "switch_drops_by_reason": drops,
        "switch_punts_by_reason": punts,
    }


def switch_counters(name: str) -> dict[str, int]:
    """Non-zero cells of a data-plane counter array, read with a second client."""
    from finsy.proto import p4r
    from quicknat.p4.constants import DropReason, PuntReason

    p4info = Pipeline.load().p4info
    client = P4RuntimeClient(GRPC, 1)

    async def read() -> list[p4r.Entity]:
        await client.connect_reader()
        try:
            entity = p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=p4info.object_id(name)))
            return await client.read([entity])
        finally:
            await client.close()

    names = DropReason if name == "drop_counter" else PuntReason
    result = {}
    for entity in asyncio.run(read()):
        entry = entity.counter_entry
        if entry.data.packet_count:
            index = entry.index.index
            label = names(index).name if index in set(names) else str(index)
            result[label] = entry.data.packet_count
    return result


def latency(frames: list[bytes], tx: socket.socket, rx: Receiver) -> dict[str, float]:
    samples = []
    for frame in frames:
        before = rx.count
        t0 = time.monotonic()
        tx.send(frame)
        while rx.count == before and time.monotonic() - t0 < 2:
            time.sleep(0.0002)
        if rx.count > before:
            samples.append((rx.last - t0) * 1000)
    samples.sort()
    return {
        "samples": len(samples),
        "p50_ms": statistics.median(samples),
        "p99_ms": samples[int(0.99 * (len(samples) - 1))],
    }


def memory_per_session(count: int) -> float:
    config = parse_config(CONFIG)
    nat = Nat(config, rng=random.Random(1))
    installs: Installs[Session] = Installs()  # the write path's state of each
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for i in range(count):
        key = FlowKey(17, 0x0A000000 + i // 50, 0xC6336400 + i % 50, 1000 + i % 50, 53)
        session = nat.new_flow(Zone.INSIDE, key, 0.0)
        installs.adopt(session)
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return used / count


def inside(args: argparse.Namespace) -> dict[str, Any]:
    """Every figure measured in the namespace: raw writes, the client's own
    costs, new-flow setup and latency through the controller, takeover."""
    workdir = Path(args.workdir)
    topo = Topology(ports=2, namespace=NAMESPACE)
    pipeline = Pipeline.load()
    ports = {1: topo.target_end(0), 2: topo.target_end(1)}
    switch = start(switch_command(ports, GRPC, workdir), workdir / "switch.log")
    controller = standby = None
    try:
        wait_for_tcp("127.0.0.1", int(GRPC.rsplit(":", 1)[1]), 30, switch)
        raw = raw_write_rate(pipeline, args.raw_entries, 500)
        print(f"raw P4Runtime writes: {raw:,.0f} entries/s", flush=True)
        costs = client_costs(pipeline, 10000)
        print(
            f"our client's CPU per message: packet-out {costs['packet_out_us']:.0f} us, "
            f"Write of one entry {costs['write_one_us']:.0f} us",
            flush=True,
        )
        config_path = workdir / "bench.toml"
        config_path.write_text(CONFIG)
        sock = workdir / "controller.sock"
        controller = start_primary(args, config_path, sock, workdir / "controller.log")
        pids = {"switch": switch.pid, "controller": controller.pid, "bench": os.getpid()}
        burst, lat = new_flow_figures(args, topo, sock, pids)
        standby = start(
            [
                *controller_command(config_path, workdir / "standby.sock"),
                "--election-id",
                "1",
                "--standby",
            ],
            workdir / "standby.log",
        )
        take = takeover(controller, workdir / "standby.sock", standby)
        print(
            f"standby takeover after kill -9 of the primary: {take['takeover_s'] * 1000:.0f} ms "
            f"({take['sessions']:,} sessions adopted)",
            flush=True,
        )
        return {
            "raw_entries_per_s": raw,
            "client_cpu": costs,
            "setup": burst,
            "latency": lat,
            "takeover": take,
        }
    finally:
        stop(controller)
        stop(standby)
        stop(switch)


def start_primary(
    args: argparse.Namespace, config: Path, sock: Path, log_path: Path
) -> subprocess.Popen[bytes]:
    """The controller as primary (it resets the switch: the raw-write test's
    entries go), once it says it is connected (or after 30 s)."""
    with open(log_path, "w") as log:
        controller = subprocess.Popen(
            [
                *controller_command(config, sock),
                "--reset",  # the raw-write test's entries go: its own switch
                "--force",
                "--election-id",
                "2",  # a standby (takeover) has 1
                "--punt-rate",
                "1000000",
                *(
                    ["--writes-in-flight", str(args.writes_in_flight)]
                    if args.writes_in_flight
                    else []
                ),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if controller_stats(sock)["connected"]:
                break
        except OSError:
            pass
        time.sleep(0.1)
    return controller


def new_flow_figures(
    args: argparse.Namespace, topo: Topology, sock: Path, pids: dict[str, int]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """New flows through the switch and the controller: the setup rate of a
    burst (and the CPU per flow of `pids`), then first-packet latency."""
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((topo.ptf_end(0), 0))
    tx.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024 * 1024)
    rx = Receiver(topo.ptf_end(1))
    rx.start()
    burst = setup_rate(sock, flows(args.flows, 10000), tx, rx, args.rate, pids)
    print(
        f"new-flow setup: {burst['flows_per_s']:,.0f} flows/s "
        f"({burst['installed']}/{burst['flows']} installed, "
        f"{burst['first_packets_out']} first packets out)",
        flush=True,
    )
    cpu = ", ".join(f"{n} {us:,.0f} us" for n, us in burst["cpu_us_per_flow"].items())
    print(
        f"CPU per installed flow: {cpu}; machine idle "
        f"{burst['machine_idle_fraction']:.0%} of the time",
        flush=True,
    )
    rx.count = 0
    lat = latency(flows(args.latency_flows, 30000), tx, rx)
    print(f"first-packet latency: p50 {lat['p50_ms']:.2f} ms, p99 {lat['p99_ms']:.2f} ms")
    rx.running = False
    return burst, lat


def controller_command(config: Path, sock: Path) -> list[str]:
    """`quicknat controller` for the bench's switch."""
    return [str(QUICKNAT), "controller", "--config", str(config), "--grpc-addr", GRPC,
            "--socket", str(sock)]  # fmt: skip


def takeover(
    primary: subprocess.Popen[bytes], standby_sock: Path, standby: subprocess.Popen[bytes]
) -> dict[str, float]:
    """The primary killed (-9) while a standby waits: the time until the standby
    is primary with the switch's sessions adopted (`connected` in its stats)."""
    wait_for_unix_socket(standby_sock, 30, standby)
    assert not controller_stats(standby_sock)["connected"], "the standby is not waiting"
    primary.kill()
    primary.wait(timeout=10)
    killed = time.monotonic()
    while not controller_stats(standby_sock)["connected"]:
        if time.monotonic() - killed > 30:
            raise SystemExit("the standby did not take over in 30 s")
        time.sleep(0.005)
    took = time.monotonic() - killed
    sessions = int(controller_stats(standby_sock)["sessions"])
    return {"takeover_s": took, "sessions": sessions}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=4000, help="offered new flows per second")
    parser.add_argument("--latency-flows", type=int, default=300)
    parser.add_argument("--raw-entries", type=int, default=20000)
    parser.add_argument(
        "--writes-in-flight", type=int, default=0, help="the controller's; 0: its default"
    )
    parser.add_argument("--workdir")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    return parser.parse_args()


def run_in_namespace(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """This script again with --inside, in the bench's namespace (created
    and deleted here): what it measured."""
    topo = Topology(ports=2, namespace=NAMESPACE)
    topo.create()
    out = workdir / "inside.json"
    try:
        subprocess.run(
            in_namespace(
                NAMESPACE,
                sys.executable,
                __file__,
                "--inside",
                "--workdir",
                str(workdir),
                "--out",
                str(out),
                "--flows",
                str(args.flows),
                "--latency-flows",
                str(args.latency_flows),
                "--raw-entries",
                str(args.raw_entries),
                "--rate",
                str(args.rate),
                "--writes-in-flight",
                str(args.writes_in_flight),
            ),
            check=True,
            timeout=900,
        )
    finally:
        topo.delete()
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def judge(result: dict[str, Any]) -> None:
    """The figures derived from the measured ones, and the targets met."""
    result["memory_bytes_per_session"] = memory_per_session(100_000)
    raw, rate = result["raw_entries_per_s"], result["setup"]["flows_per_s"]
    result["ratio_flows_to_raw_half"] = rate / (raw / 2)
    # What the switch's own CPU per flow allows with a free controller and
    # sender: all cores for the switch, and at most one for its busiest thread.
    # An upper bound on setup that no controller change can lift.
    cpu = result["setup"]["cpu_us_per_flow"]
    cores = os.cpu_count() or 1
    result["switch_bound_flows_per_s"] = min(
        cores * 1e6 / cpu["switch"], 1e6 / cpu["switch_busiest_thread"]
    )
    result["met"] = {
        "setup_at_least_70pct_of_raw_half": rate >= 0.7 * raw / 2,
        "memory_at_most_1KiB_per_session": result["memory_bytes_per_session"] <= 1024,
        "no_first_packet_loss": result["setup"]["first_packets_out"] >= result["setup"]["flows"],
        "standby_takeover_within_2s": result["takeover"]["takeover_s"] <= 2.0,
    }


def report(result: dict[str, Any]) -> None:
    raw, rate = result["raw_entries_per_s"], result["setup"]["flows_per_s"]
    cpu = result["setup"]["cpu_us_per_flow"]
    cores = os.cpu_count() or 1
    print(
        f"\nraw writes {raw:,.0f} entries/s -> target {0.7 * raw / 2:,.0f} flows/s; "
        f"measured {rate:,.0f} flows/s ({result['ratio_flows_to_raw_half']:.0%} of raw/2)"
    )
    bound = result["switch_bound_flows_per_s"]
    print(
        f"the switch's own CPU per flow ({cpu['switch']:.0f} us, busiest thread "
        f"{cpu['switch_busiest_thread']:.0f} us) allows at most {bound:,.0f} flows/s "
        f"on {cores} cores ({bound / (raw / 2):.0%} of raw/2) with a free controller"
    )
    print(f"controller memory: {result['memory_bytes_per_session']:.0f} bytes per session")
    for name, ok in result["met"].items():
        print(f"  {'met    ' if ok else 'NOT MET'}  {name}")


def main() -> int:
    args = parse_args()
    if args.inside:
        Path(args.out).write_text(json.dumps(inside(args)))
        return 0
    if os.geteuid() != 0:
        print("bench-bmv2 needs root (network namespaces)", file=sys.stderr)
        return 2
    if shutil.which(switch_binary()) is None:
        print("bench-bmv2 needs simple_switch_grpc on PATH (README: the P4 path)", file=sys.stderr)
        return 2
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="quicknat-bench-bmv2-"))
    workdir.mkdir(parents=True, exist_ok=True)
    result = run_in_namespace(args, workdir)
    judge(result)
    result.update(
        {
            "schema": "quicknat-bench-bmv2/1",
            "command": "make bench-bmv2",
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "bmv2.json").write_text(json.dumps(result, indent=2) + "\n")
    report(result)
    print(f"wrote {HERE / 'results' / 'bmv2.json'} (logs: {workdir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
