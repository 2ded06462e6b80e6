#!/usr/bin/env python3
"""`make bench-swx`: the P4 program on DPDK's SWX pipeline (quicknat-swx),
against swpath's fast path and BMv2, side by side in one run (issue #33).

- Forwarding: established flows, 64k sessions, 64-byte UDP frames made in
  memory, one pipeline thread (swpath/build/swx/bench_swx: DPDK's source
  and sink ports, the PNA build's pipeline with its fast path), against
  swpath's fast path on one worker (bench_swpath established: the same
  frames, the same flows) and the same program without its fast path;
  and established flows of LEARN_FLOWS sessions the switch learned
  (bench_swx ... learned), with and without the fast path; rounds rotate
  them, each ratio taken within its round.
- P4Runtime writes: nat_in2out entries from the controller's own client
  (quicknat.p4rt, the entries encoded as the controller encodes them) in
  batches of the controller's size, into quicknat-swx, and into BMv2 where
  simple_switch_grpc is installed; and packet-outs on the same client's
  stream, as the controller sends a first packet back in controller mode,
  with the client's CPU for each.
- New flows through the lab (topo/lab/offload_lab.py; root): controller mode
  and offload mode on quicknat-swx (its pipeline thread polling its core, as
  deployed, and sleeping when idle, the labs' default), and on BMv2 where
  installed ($QUICKNAT_BMV2 names a build, lab/bmv2.py): first packets
  delivered and their latency (offload_runs.run_mode), and the most
  one-packet flows per second each delivers (offload_runs.run_setup). The
  targets are read on the polling variant.

Prints a table with the targets and writes bench/results/swx.json, whose
`met` holds one boolean per target (None where the comparison needs BMv2
and it is not installed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cpu_times import process_cpu
from finsy.proto import p4r
from lab import bmv2, swx
from lab.processes import raise_on_signals, start, stop, wait_for_tcp
from offload_runs import Offered, run_mode, run_setup
from quicknat.controller.program import NatEntries, Pipeline
from quicknat.p4.constants import PacketOutMode
from quicknat.p4rt.client import P4RuntimeClient
from quicknat.p4rt.entities import packet_metadata

ROOT = Path(__file__).resolve().parent.parent
BENCH_SWX = ROOT / "swpath" / "build" / "swx" / "bench_swx"
BENCH_SWPATH = ROOT / "swpath" / "build" / "app" / "bench_swpath"
SPEC = ROOT / "p4src" / "build" / "pna" / "quicknat.spec"
RESULTS = ROOT / "bench" / "results"
SESSIONS = 65536
GRPC = "127.0.0.1:50095"
WRITE_BATCH = 256  # the controller's --batch-max default
PACKET_OUTS = 20000
TARGETS = {
    "forwarding_mpps_min": 5.0,
    "forwarding_ratio_to_swpath_min": 0.25,
    "controller_mode_ratio_to_bmv2_min": 2.0,
    "controller_mode_first_p50_ms_max": 0.5,
    "offload_mode_flows_per_s_min": 20_000,
    "offload_mode_ratio_to_bmv2_min": 3.0,
    "offload_mode_first_p50_ms_max": 0.15,
    "p4runtime_write_entries_per_s_min": 100_000,
    # sessions learned by the switch (install = "learn", docs/offload.md)
    "learning_ratio_to_offload_writes_min": 5.0,
    "learning_flows_per_s_min": 100_000,
    "learning_ratio_to_bmv2_controller_min": 50.0,
    "learning_writes_per_flow_max": 0,
    "learning_first_p50_ratio_to_offload_max": 1.0,
    "learning_second_by_switch_min": 0.99,
}
# The new-flow modes each switch runs: (offload, learn)
MODES = {"controller": (False, False), "offload": (True, False), "learn": (True, True)}


def run_json(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("{"))
    result: dict[str, Any] = json.loads(line)
    return result


LEARN_FLOWS = 32768  # half the learner tables: what DPDK's 4-key buckets hold


def learning(rounds: int, writes_entries_per_s: float) -> dict[str, Any]:
    """The switch's session setup capacity with learning (bench_swx learn:
    one pipeline thread, in memory, LEARN_FLOWS first packets as their
    instance sends them back tagged) beside the write path's in the same
    run (P4Runtime entries/s from the controller's client, two entries a
    session)."""
    runs = [
        run_json([str(BENCH_SWX), str(SPEC), str(LEARN_FLOWS), "0", "learn"]) for _ in range(rounds)
    ]
    for r in runs:
        print(f"learning in memory: {r}", flush=True)
    rate = statistics.median(r["flows_per_s"] for r in runs)
    by_writes = writes_entries_per_s / 2
    return {
        "flows": LEARN_FLOWS,
        "rounds": runs,
        "flows_per_s": round(rate),
        "learn_failed": max(r["learn_failed"] for r in runs),
        "writes_sessions_per_s": round(by_writes),
        "ratio_to_writes": round(rate / by_writes, 2),
    }


def without_fastpath() -> Path:
    """The committed program without its fast path (p4src/swx_splice.py
    --strip), beside it in each round: what the fast path gains."""
    sys.path.insert(0, str(ROOT / "p4src"))
    try:
        import swx_splice
    finally:
        sys.path.pop(0)
    path = Path(tempfile.mkdtemp(prefix="qn-bench-swx-")) / "program.spec"
    path.write_text(swx_splice.strip(SPEC.read_text()))
    return path


def forwarding(rounds: int, seconds: float) -> dict[str, Any]:
    program = without_fastpath()
    names = ["swx", "swpath", "program", "learned", "learned_program"]
    runs = []
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        got = {}
        for name in order:
            spec = program if name.endswith("program") else SPEC
            if name == "swpath":
                args = [str(BENCH_SWPATH), "established", str(SESSIONS), str(seconds), "1"]
                got[name] = {"mpps": run_json(args)["established_pps"] / 1e6}
            elif name.startswith("learned"):
                # learned sessions: as many as the learners hold (LEARN_FLOWS)
                args = [str(BENCH_SWX), str(spec), str(LEARN_FLOWS), str(seconds), "learned"]
                got[name] = run_json(args)
            else:
                got[name] = run_json([str(BENCH_SWX), str(spec), str(SESSIONS), str(seconds)])
        runs.append(
            {
                "swx_mpps": got["swx"]["mpps"],
                "swpath_mpps": got["swpath"]["mpps"],
                "ratio": got["swx"]["mpps"] / got["swpath"]["mpps"],
                "swx_dropped": got["swx"]["dropped"],
                "without_fastpath_mpps": got["program"]["mpps"],
                "fastpath_gain": got["swx"]["mpps"] / got["program"]["mpps"],
                "learned_mpps": got["learned"]["mpps"],
                "learned_without_fastpath_mpps": got["learned_program"]["mpps"],
                "learned_fastpath_gain": got["learned"]["mpps"] / got["learned_program"]["mpps"],
            }
        )
        print(f"forwarding round {r + 1}: {runs[-1]}", flush=True)
    shutil.rmtree(program.parent, ignore_errors=True)
    return {
        "sessions": SESSIONS,
        "seconds": seconds,
        "rounds": runs,
        "swx_mpps": round(statistics.median(x["swx_mpps"] for x in runs), 3),
        "swpath_mpps": round(statistics.median(x["swpath_mpps"] for x in runs), 3),
        "ratio_to_swpath": round(statistics.median(x["ratio"] for x in runs), 3),
        "without_fastpath_mpps": round(
            statistics.median(x["without_fastpath_mpps"] for x in runs), 3
        ),
        "fastpath_gain": round(statistics.median(x["fastpath_gain"] for x in runs), 2),
        "learned_sessions": LEARN_FLOWS,
        "learned_mpps": round(statistics.median(x["learned_mpps"] for x in runs), 3),
        "learned_without_fastpath_mpps": round(
            statistics.median(x["learned_without_fastpath_mpps"] for x in runs), 3
        ),
        "learned_fastpath_gain": round(
            statistics.median(x["learned_fastpath_gain"] for x in runs), 2
        ),
    }


async def write_rate(pipeline: Pipeline, entries: int) -> float:
    """Entries per second the controller's client writes (inserts, then the
    same deleted, batches of WRITE_BATCH), wire-encoded as the controller's."""
    client = P4RuntimeClient(GRPC, 1, election_id=60)
    await client.connect()
    await client.set_pipeline(pipeline.p4info.proto, pipeline.device_config, pipeline.cookie)
    table = NatEntries(pipeline.p4info).tables["nat_in2out"]
    keys = [(0x0A000000 + i, 0xC6336401, 17, 1000 + i % 60000, 53) for i in range(entries)]
    inserts = [
        table.update(
            p4r.Update.INSERT, k, "rewrite_src", (0xCB007101, 2000 + i % 60000), 300 * 10**9
        )
        for i, k in enumerate(keys)
    ]
    deletes = [table.update(p4r.Update.DELETE, k) for k in keys]
    try:
        t0 = time.perf_counter()
        for i in range(0, entries, WRITE_BATCH):
            errors = await client.write(inserts[i : i + WRITE_BATCH])
            assert not errors, errors[:3]
        seconds = time.perf_counter() - t0
        for i in range(0, entries, WRITE_BATCH):
            assert not await client.write(deletes[i : i + WRITE_BATCH])
    finally:
        await client.close()
    return entries / seconds


async def packet_out_rate(pipeline: Pipeline, count: int) -> tuple[float, float]:
    """Packet-outs per second on the controller's stream (a first packet in
    controller mode is one: docs/controller.md), as the controller sends
    them (P4RuntimeClient.packet_out, a ROUTE header), and this process's
    CPU (all threads, gRPC's included) per packet-out, in us."""
    client = P4RuntimeClient(GRPC, 1, election_id=61)
    await client.connect()
    await client.set_pipeline(pipeline.p4info.proto, pipeline.device_config, pipeline.cookie)
    header = {"egress_port": 0, "ingress_port": 1, "mode": PacketOutMode.ROUTE}
    metadata = packet_metadata(pipeline.p4info, "packet_out", header)
    frame = bytes(64)
    try:
        cpu0, t0 = process_cpu(os.getpid()), time.perf_counter()
        for i in range(count):
            client.packet_out(frame, metadata)
            if i % 64 == 63:  # as the controller's loop: gRPC's task runs between
                await asyncio.sleep(0)
        while client.requests_queued():
            await asyncio.sleep(0.001)
        seconds, cpu = time.perf_counter() - t0, process_cpu(os.getpid()) - cpu0
    finally:
        await client.close()
    return count / seconds, cpu / count * 1e6


def p4runtime_writes(switches: list[str], entries: int, rounds: int) -> dict[str, Any]:
    result: dict[str, Any] = {"entries": entries, "batch": WRITE_BATCH}
    for name in switches:
        pipeline = Pipeline.of_target(name)
        rates, outs = [], []
        with tempfile.TemporaryDirectory(prefix=f"qn-swx-bench-{name}-") as tmp:
            workdir = Path(tmp)
            # the control plane alone: no packets
            if name == "swx":
                command = swx.null_switch_command([1, 2], GRPC, workdir)
            else:
                command = bmv2.switch_command({}, GRPC, workdir)
            switch = start(command, workdir / "switch.log")
            try:
                wait_for_tcp("127.0.0.1", int(GRPC.rsplit(":", 1)[1]), 60, switch)
                for _ in range(rounds):
                    rates.append(asyncio.run(write_rate(pipeline, entries)))
                    outs.append(asyncio.run(packet_out_rate(pipeline, PACKET_OUTS)))
            finally:
                stop(switch)
                swx.remove_runtime_dir(workdir)
        result[name] = {
            "entries_per_s": round(statistics.median(rates)),
            "rounds": [round(r) for r in rates],
            "packet_outs_per_s": round(statistics.median(r for r, _ in outs)),
            "packet_out_client_cpu_us": round(statistics.median(c for _, c in outs), 1),
            "packet_out_rounds": [[round(r), round(c, 1)] for r, c in outs],
        }
        print(f"P4Runtime writes, {name}: {result[name]}", flush=True)
    return result


# The switches' variants of the lab runs: quicknat-swx polling its core (as
# deployed, on a core of its own) and sleeping when idle (the labs' default,
# lab/swx.py), and BMv2.
VARIANTS = {"swx": ("swx", 0), "swx (adaptive)": ("swx", None), "bmv2": ("bmv2", None)}


def new_flows(switches: list[str], args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for variant, (name, sleep_us) in VARIANTS.items():
        if name not in switches:
            continue
        runs: dict[str, Any] = {}
        for mode, (offload, learn) in MODES.items():
            if learn and name != "swx":
                continue  # only quicknat-swx learns
            samples = [
                run_mode(
                    offload,
                    Offered(args.flows, args.rate, 30000 + 1000 * r),
                    2,
                    50,
                    switch=name,
                    switch_idle_sleep_us=sleep_us,
                    learn=learn,
                )
                for r in range(args.rounds)
            ]
            setup = [
                run_setup(mode, Offered(args.setup_flows, rate, 40000), 50, name, sleep_us)
                for rate in args.setup_rates
            ]
            best = max(setup, key=lambda x: x["setup_flows_per_s"])
            runs[mode] = {
                "first_latency_ms_p50": statistics.median(
                    s["first_latency_ms_p50"] for s in samples
                ),
                "first_delivered": [s["first_delivered"] for s in samples],
                "second_latency_ms_p50": statistics.median(
                    s["second_latency_ms_p50"] for s in samples
                ),
                "flows": args.flows,
                "setup_flows_per_s": best["setup_flows_per_s"],
                "in_switch_flows_per_s": max(s["in_switch_flows_per_s"] for s in setup),
                "switch_writes_per_flow": max(
                    s["switch_writes"] / max(s["in_switch"], 1) for s in setup
                ),
                "second_by_switch": min(
                    (s["second_by_switch"] for s in samples if s["second_by_switch"] is not None),
                    default=None,
                ),
                "setup_runs": setup,
                "rate_runs": samples,
            }
            print(
                f"new flows, {variant}, {mode}: p50 {runs[mode]['first_latency_ms_p50']} ms "
                f"(a second packet's {runs[mode]['second_latency_ms_p50']}), "
                f"{best['setup_flows_per_s']} first packets/s, "
                f"{runs[mode]['in_switch_flows_per_s']} sessions into the switch/s",
                flush=True,
            )
        result[variant] = runs
    return result


def met(result: dict[str, Any]) -> dict[str, bool | None]:
    fwd, writes, flows = result["forwarding"], result["p4runtime_writes"], result["new_flows"]
    swx_flows, bmv2_flows = flows.get("swx"), flows.get("bmv2")

    def ratio(mode: str) -> float | None:
        if not swx_flows or not bmv2_flows:
            return None
        base = bmv2_flows[mode]["setup_flows_per_s"]
        return swx_flows[mode]["setup_flows_per_s"] / base if base else None

    def at_least(value: float | None, floor: float) -> bool | None:
        return None if value is None else value >= floor

    def at_most(value: float | None, ceiling: float) -> bool | None:
        return None if value is None else value <= ceiling

    p50 = {
        m: swx_flows[m]["first_latency_ms_p50"] if swx_flows else None
        for m in ("controller", "offload")
    }
    return {
        "forwarding_mpps_min": fwd["swx_mpps"] >= TARGETS["forwarding_mpps_min"],
        "forwarding_ratio_to_swpath_min": fwd["ratio_to_swpath"]
        >= TARGETS["forwarding_ratio_to_swpath_min"],
        "controller_mode_ratio_to_bmv2_min": at_least(
            ratio("controller"), TARGETS["controller_mode_ratio_to_bmv2_min"]
        ),
        "controller_mode_first_p50_ms_max": at_most(
            p50["controller"], TARGETS["controller_mode_first_p50_ms_max"]
        ),
        "offload_mode_flows_per_s_min": at_least(
            swx_flows["offload"]["setup_flows_per_s"] if swx_flows else None,
            TARGETS["offload_mode_flows_per_s_min"],
        ),
        "offload_mode_ratio_to_bmv2_min": at_least(
            ratio("offload"), TARGETS["offload_mode_ratio_to_bmv2_min"]
        ),
        "offload_mode_first_p50_ms_max": at_most(
            p50["offload"], TARGETS["offload_mode_first_p50_ms_max"]
        ),
        "p4runtime_write_entries_per_s_min": writes["swx"]["entries_per_s"]
        >= TARGETS["p4runtime_write_entries_per_s_min"],
        **learning_met(result["learning"], swx_flows, bmv2_flows),
    }


def learning_met(
    capacity: dict[str, Any], swx_flows: Any, bmv2_flows: Any
) -> dict[str, bool | None]:
    """Learning in the same run: the switch's session setup capacity
    against its write path's (`capacity`: in memory, both sides), the
    lab's end-to-end figures for writes per flow, first packets and second
    packets (the lab bounds both modes' setup rate by its own I/O, about
    10,000 to 20,000 first packets/s: docs/benchmarks.md), and BMv2's
    controller mode (the lab: its limit is the controller)."""
    learn = swx_flows.get("learn") if swx_flows else None
    if learn is None:
        return {name: None for name in TARGETS if name.startswith("learning_")}
    writes = swx_flows["offload"]
    bmv2 = bmv2_flows["controller"]["setup_flows_per_s"] if bmv2_flows else None
    rate = capacity["flows_per_s"]
    return {
        "learning_ratio_to_offload_writes_min": capacity["ratio_to_writes"]
        >= TARGETS["learning_ratio_to_offload_writes_min"],
        "learning_flows_per_s_min": rate >= TARGETS["learning_flows_per_s_min"],
        "learning_ratio_to_bmv2_controller_min": None
        if not bmv2
        else rate / bmv2 >= TARGETS["learning_ratio_to_bmv2_controller_min"],
        "learning_writes_per_flow_max": learn["switch_writes_per_flow"]
        <= TARGETS["learning_writes_per_flow_max"],
        "learning_first_p50_ratio_to_offload_max": learn["first_latency_ms_p50"]
        <= writes["first_latency_ms_p50"] * TARGETS["learning_first_p50_ratio_to_offload_max"],
        "learning_second_by_switch_min": learn["second_by_switch"] is not None
        and learn["second_by_switch"] >= TARGETS["learning_second_by_switch_min"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0, help="each forwarding run")
    parser.add_argument("--write-entries", type=int, default=20000)
    parser.add_argument("--flows", type=int, default=2000, help="flows of each rate run")
    parser.add_argument("--rate", type=float, default=1000.0, help="offered flows/s, rate runs")
    parser.add_argument("--setup-flows", type=int, default=20000)
    parser.add_argument(
        "--setup-rates",
        type=lambda s: [float(x) for x in s.split(",")],
        default=[10000, 25000, 40000],
    )
    parser.add_argument("--skip-lab", action="store_true", help="forwarding and writes only")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench-swx needs root (DPDK, network namespaces)", file=sys.stderr)
        return 2
    for binary in (BENCH_SWX, BENCH_SWPATH, swx.SWX):
        if not binary.exists():
            print(
                f"{binary.relative_to(ROOT)} missing: make build (bench-swx builds it)",
                file=sys.stderr,
            )
            return 2
    switches = ["swx"] + (["bmv2"] if shutil.which(bmv2.switch_binary()) else [])
    raise_on_signals()
    result: dict[str, Any] = {
        "command": "make bench-swx",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "switches": switches,
        "bmv2": bmv2.switch_binary() if "bmv2" in switches else None,
        "targets": TARGETS,
        "forwarding": forwarding(args.rounds, args.seconds),
        "p4runtime_writes": p4runtime_writes(switches, args.write_entries, args.rounds),
        "new_flows": {} if args.skip_lab else new_flows(switches, args),
    }
    result["learning"] = learning(args.rounds, result["p4runtime_writes"]["swx"]["entries_per_s"])
    result["met"] = met(result)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "swx.json").write_text(json.dumps(result, indent=2) + "\n")
    for name, ok in result["met"].items():
        print(
            f"{name:40} {TARGETS[name]:>10}  {'n/a' if ok is None else 'met' if ok else 'NOT met'}"
        )
    print(f"results: {(RESULTS / 'swx.json').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
