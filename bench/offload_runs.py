"""The runs of `make bench-offload` (bench/offload_bench.py): each builds the
offload lab (topo/lab/offload_lab.py) in one mode, sends one kind of new
flows through it, and returns what it measured as one JSON-ready dict; the
in-memory run needs no lab. offload_bench.py chooses, repeats and reports
them."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cpu_times import process_cpu
from lab.flows import arrivals as sink_rows
from lab.flows import frame_sender, sender, start_sink
from lab.offload_lab import LAB_TABLE, lab_program, running_lab
from lab.topology import H1, H2
from quicknat.counters import OFFLOAD

REPO = Path(__file__).resolve().parents[1]
OFFLOAD_COUNTERS = frozenset(c.p4 for c in OFFLOAD)  # the offload manager's


@dataclass(frozen=True)
class Offered:
    """The new flows a run sends from h1, each from a source port of its own."""

    flows: int
    """how many"""
    rate: float
    """new flows per second"""
    base: int
    """the first flow's source port; flow i uses base + i, so runs that
    choose distinct bases reuse no session of an earlier run"""


@contextlib.contextmanager
def fresh_lab(run: str, **settings: Any) -> Iterator[tuple[Any, Path]]:
    """The offload lab built afresh for one run (running_lab's `settings`) in
    a directory of its own, and the path of its sink's arrivals log. The
    directory goes when the run ends well; a failed run keeps its logs."""
    workdir = Path(tempfile.mkdtemp(prefix=f"quicknat-bench-{run}-"))
    with running_lab(workdir, **settings) as lab:
        yield lab, workdir / "arrivals.txt"
    shutil.rmtree(workdir, ignore_errors=True)


def installed(lab: Any, offload: bool) -> int:
    """Sessions in the switch so far: the one writer's count in either mode,
    or with install = "learn" what the switch learned (its telemetry)."""
    if getattr(lab, "learn_timeouts", None):
        return lab.switch_learned()
    return int(lab.controller_counters()["sessions_installed"])


def processes(lab: Any) -> dict[str, Any]:
    return {"controller": lab.controller, "switch": lab.switch}


def traffic(
    lab: Any, log: Path, flows: int, rate: float, base: int
) -> tuple[Any, Callable[[int], None]]:
    """far's sink, logging arrivals to `log`, and h1's sender of round N:
    `flows` new flows at `rate` from source ports base, base + 1, ...
    (lab/flows.py)."""
    sink = start_sink(lab, log)
    start = sender(lab, H1, flows, rate, base)

    def send(rnd: int) -> None:
        start(rnd).wait(timeout=flows / rate + 60)

    return sink, send


def run_mode(
    offload: bool,
    offered: Offered,
    batch_window_ms: int,
    idle_sleep_us: int,
    switch: str = "bmv2",
    switch_idle_sleep_us: int | None = None,
    learn: bool = False,
) -> dict[str, Any]:
    flows, rate = offered.flows, offered.rate
    with fresh_lab(
        "offload",
        switch=switch,
        switch_idle_sleep_us=switch_idle_sleep_us,
        slow_path=offload,
        instances=1,
        idle_sleep_us=idle_sleep_us,
        batch_window_ms=batch_window_ms,
        **({"learn_timeouts": LEARN_TIMEOUTS} if learn else {}),
    ) as (lab, log):
        sink, send = traffic(lab, log, flows, rate, offered.base)

        before = installed(lab, offload)
        cpu0 = {p: process_cpu(proc.pid) for p, proc in processes(lab).items()}
        start = time.monotonic()
        send(1)
        sent_s = time.monotonic() - start
        deadline = time.monotonic() + 60
        while installed(lab, offload) - before < flows and time.monotonic() < deadline:
            time.sleep(0.05)
        all_installed_s = time.monotonic() - start
        done = installed(lab, offload) - before
        cpu_us = {
            p: round((process_cpu(proc.pid) - cpu0[p]) / max(done, 1) * 1e6)
            for p, proc in processes(lab).items()
        }
        # the second packet of each flow: translated by the switch, or by
        # the instance (its in2out count) where the switch had no entry yet
        by_instance = instance_in2out(lab) if offload else 0
        send(2)
        time.sleep(2)
        by_instance = instance_in2out(lab) - by_instance if offload else 0
        lab.stop_process(sink)
        rows = [line.split() for line in log.read_text().splitlines() if line.strip()]
        first = sorted(float(r[0]) - float(r[1]) for r in rows if r[3] == "1")
        # the floor of this lab's latency: the same path for a packet the
        # switch translates by itself (sender, veths, AF_PACKET, the sink's
        # clock), which the first packet's latency includes
        second = sorted(float(r[0]) - float(r[1]) for r in rows if r[3] == "2")
        stats = lab.controller_stats()["counters"]

    def pct(q: float, of: list[float] = first) -> float:
        return of[min(len(of) - 1, int(q * len(of)))] * 1000 if of else float("nan")

    return {
        "mode": "learn" if learn else "offload" if offload else "controller",
        "flows": flows,
        "offered_flows_per_s": rate,
        "send_s": round(sent_s, 3),
        "first_delivered": len(first),
        "first_latency_ms_p50": round(pct(0.5), 3),
        "first_latency_ms_p99": round(pct(0.99), 3),
        "installed": done,
        "all_installed_s": round(all_installed_s, 3) if done >= flows else None,
        "second_delivered": len(second),
        "second_latency_ms_p50": round(pct(0.5, second), 3),
        "second_by_switch": round(1 - by_instance / flows, 4) if offload else None,
        "controller_cpu_us_per_flow": cpu_us["controller"],
        "switch_cpu_us_per_flow": cpu_us["switch"],
        "controller_counters": {
            k: v
            for k, v in stats.items()
            if (k in OFFLOAD_COUNTERS or k.startswith(("sessions_", "refused."))) and v
        },
    }


SETUP_MODES = {  # name: (slow path, after_packets)
    "controller": (False, 1),
    "offload": (True, 1),
    "offload, after_packets 2": (True, 2),
    "learn": (True, 1),  # install = "learn" (a switch that learns: swx)
}
# The switch's classes as p4c-dpdk compiles them: learning as deployed.
LEARN_TIMEOUTS = (10, 30, 60, 120, 300, 43200, 120, 120)


def run_setup(
    mode: str,
    offered: Offered,
    idle_sleep_us: int,
    switch: str = "bmv2",
    switch_idle_sleep_us: int | None = None,
) -> dict[str, Any]:
    """One-packet flows (most DNS) offered at `rate`, from h1's link through
    an AF_PACKET socket (lab.flows.FRAME_SEND: the socket-per-flow sender
    would be the limit): how many first packets the mode delivers per second,
    how many sessions it writes to the switch meanwhile, and the CPU per flow
    of each of the NAT's processes."""
    slow_path, after_packets = SETUP_MODES[mode]
    flows, rate = offered.flows, offered.rate
    with fresh_lab(
        "setup",
        switch=switch,
        switch_idle_sleep_us=switch_idle_sleep_us,
        slow_path=slow_path,
        instances=1,
        idle_sleep_us=idle_sleep_us,
        after_packets=after_packets,
        **({"learn_timeouts": LEARN_TIMEOUTS} if mode == "learn" else {}),
    ) as (lab, log):
        sink = start_sink(lab, log)
        before = installed(lab, slow_path)
        written = int(lab.controller_counters()["sessions_installed"])
        parts = {**processes(lab), **({"instance": lab.swpath} if slow_path else {})}
        cpu0 = {p: process_cpu(proc.pid) for p, proc in parts.items()}
        start = time.monotonic()
        sending = frame_sender(lab, H1, flows, rate, offered.base)(1)
        # the sessions in the switch, each 50 ms until they stop growing
        # (written or learned): when the last of them got there. Each look
        # costs the NAT what it measures: `counters` every 10 ms took 7-10 us
        # of the controller's CPU a flow (`stats`, which asks the instances
        # too, 64 us, and halved the setup rate); every 50 ms, 2 us, and the
        # time of the last session known to 50 ms of a run of seconds.
        growth = [(0.0, 0)]
        while sending.poll() is None or time.monotonic() - start < growth[-1][0] + 2:
            now = installed(lab, slow_path) - before
            if now > growth[-1][1]:
                growth.append((time.monotonic() - start, now))
            if time.monotonic() - start > flows / rate + 60:
                break
            time.sleep(0.05)
        sent_s, _ = sending.communicate(timeout=60)
        cpu = {p: process_cpu(proc.pid) - cpu0[p] for p, proc in parts.items()}
        lab.stop_process(sink)
        in_switch = installed(lab, slow_path) - before
        writes = int(lab.controller_counters()["sessions_installed"]) - written
        arrivals = sorted(float(row[0]) for row in sink_rows(log))
    # from the first send to the last arrival: what the mode sustained
    span = (arrivals[-1] - start) if arrivals else float("nan")
    return {
        "mode": mode,
        "flows": flows,
        "offered_flows_per_s": rate,
        # the generator's own pace, to show it is not the limit
        "send_s": round(float(sent_s), 3),
        "first_delivered": len(arrivals),
        "setup_flows_per_s": round(len(arrivals) / span) if arrivals else 0,
        # sessions the switch took (written or learned), and per second
        # from the first send until the last of them was there
        "in_switch": in_switch,
        "in_switch_flows_per_s": round(in_switch / growth[-1][0]) if growth[-1][0] else 0,
        "switch_writes": writes,
        # the NAT's processes' CPU per flow delivered, until 2 s after the
        # last send: where the VM's two vCPUs went
        "cpu_us_per_flow": {
            p: round(seconds / max(len(arrivals), 1) * 1e6) for p, seconds in cpu.items()
        },
    }


def instance_in2out(lab: Any) -> int:
    """Packets the instances translated inside to outside so far."""
    total = 0
    for socket in lab.sockets():
        stats = json.loads(lab.quicknat("stats", "--json", socket=socket))
        total += int(stats["counters"]["in2out"])
    return total


def instances_busy_us(lab: Any) -> int:
    """Microseconds every slow-path instance's workers spent on packets so
    far (swpath's busy_us: iterations that had some, not the polling)."""
    total = 0
    for socket in lab.sockets():
        stats = json.loads(lab.quicknat("stats", "--json", socket=socket))
        total += sum(int(lc["busy_us"]) for lc in stats["lcores"])
    return total


def run_capacity(
    instances: int, flows: int, rate: float, base: int, idle_sleep_us: int, switch: str = "bmv2"
) -> dict[str, Any]:
    """Slow-path capacity: `flows` one-packet flows from h1 and from h2 at
    once, each at `rate`, with after_packets 2 (the switch writes nothing:
    every first packet is the instances' work). One instance takes both
    hosts, or two take one each (h1 pinned to the default instance, h2
    hashed to the other). Delivered flows per second, and the instances'
    busy time per flow: what a core of theirs spends on one, whatever else
    runs on the VM's two vCPUs."""
    with fresh_lab(
        "capacity",
        switch=switch,
        slow_path=True,
        instances=instances,
        idle_sleep_us=idle_sleep_us,
        after_packets=2,
    ) as (lab, log):
        sink = start_sink(lab, log)
        busy, start = instances_busy_us(lab), time.monotonic()
        senders = [sender(lab, host, flows, rate, base)(1) for host in (H1, H2)]
        for proc in senders:
            proc.wait(timeout=flows / rate + 60)
        time.sleep(2)  # the last ones through the queues
        busy = instances_busy_us(lab) - busy
        lab.stop_process(sink)
        times = sorted(float(row[0]) for row in sink_rows(log))
        created = [
            json.loads(lab.quicknat("stats", "--json", socket=socket))["counters"][
                "sessions_created"
            ]
            for socket in lab.sockets()
        ]
    span = (times[-1] - start) if times else float("nan")
    per_flow = busy / len(times) if times else None
    return {
        "instances": instances,
        "flows": 2 * flows,
        "offered_flows_per_s": 2 * rate,
        "first_delivered": len(times),
        "flows_per_s": round(len(times) / span) if times else 0,
        "sessions_created_per_instance": created,
        "instances_busy_us_per_flow": round(per_flow, 2) if per_flow else None,
        # what the instances' cores would sustain, busy on nothing else
        "capacity_flows_per_s_per_core": round(1e6 / per_flow) if per_flow else None,
    }


BENCH_SWPATH = REPO / "swpath" / "build" / "app" / "bench_swpath"


def run_in_memory(instances: int, sessions: int) -> dict[str, Any]:
    """The instances' own capacity, where the VM lets it show: `instances`
    bench_swpath processes at once (swpath's fast path on packets made in
    memory, one worker each: an instance, no switch, no generator, no
    sink), each on a CPU of its own (taskset: an instance as deployed, on
    its core), each opening `sessions` sessions, one first packet each.
    Their passes start together (SP_BENCH_START_AT, past every process's
    start-up), and their rate together is every session over the span from
    the first pass's start to the last one's end (bench_swpath's
    new_pass_s, the machine's monotonic clock): an instance that lags
    counts against them."""
    cpus = os.cpu_count() or 1
    if instances > cpus:
        raise ValueError(f"{instances} instances on {cpus} CPUs")
    env = dict(os.environ, SP_BENCH_START_AT=f"{time.monotonic() + 3 + sessions / 1e6:.3f}")
    command = [str(BENCH_SWPATH), "new", str(sessions), "0", "1"]
    procs = [
        subprocess.Popen(
            ["taskset", "-c", str(cpu), *command], stdout=subprocess.PIPE, text=True, env=env
        )
        for cpu in range(instances)
    ]
    outs = [json.loads(proc.communicate(timeout=300)[0]) for proc in procs]
    start = min(o["new_pass_s"][0] for o in outs)
    end = max(o["new_pass_s"][1] for o in outs)
    created = sum(int(o["created"]) for o in outs)
    return {
        "instances": instances,
        "sessions_each": sessions,
        "new_sessions_per_s": round(created / (end - start)),
        "each_new_sessions_per_s": [o["new_per_s"] for o in outs],
        "span_s": round(end - start, 3),
    }


OVERFLOW_RATE = 1000.0


def run_overflow(
    offload: bool, flows: int, rate: float, base: int, idle_sleep_us: int, switch: str = "bmv2"
) -> dict[str, Any]:
    """More concurrent flows than the switch's table holds (lab_program):
    what each mode delivers, and where the overflow goes. All from h1, so
    its per-host limits are lifted, and all alive together (UDP 120 s)."""
    settings = {"udp_timeout": 120, "per_host": 65535}
    with fresh_lab(
        "overflow",
        switch=switch,
        slow_path=offload,
        program=lab_program(switch),
        instances=1,
        idle_sleep_us=idle_sleep_us,
        **settings,
    ) as (lab, log):
        sink, send = traffic(lab, log, flows, rate, base)

        send(1)
        # until the switch's count stops moving (bounded)
        last, deadline = -1, time.monotonic() + 20
        while installed(lab, offload) != last and time.monotonic() < deadline:
            last = installed(lab, offload)
            time.sleep(1)
        send(2)
        time.sleep(2)
        lab.stop_process(sink)
        rows = [line.split() for line in log.read_text().splitlines() if line.strip()]
        stats = lab.controller_stats()["counters"]
    return {
        "mode": "offload" if offload else "controller",
        "table_entries": LAB_TABLE,
        "flows": flows,
        "offered_flows_per_s": rate,
        "first_delivered": sum(1 for r in rows if r[3] == "1"),
        "second_delivered": sum(1 for r in rows if r[3] == "2"),
        "in_switch": last,
        "controller_counters": {
            k: v
            for k, v in stats.items()
            if (k in OFFLOAD_COUNTERS or k.startswith(("sessions_", "refused."))) and v
        },
    }
