#!/usr/bin/env python3
"""`make bench-swpath`: swpath's fast path against testpmd, on this machine.

One run measures, side by side:
- established flows, 64-byte UDP frames, one worker, packets made in memory by
  swpath/build/app/bench_swpath (no NIC: mbufs from the pool, a 60-byte write,
  the real sp_process_burst(), TX to net_null which frees them), at 64k and 1M
  sessions;
- dpdk-testpmd --forward-mode=macswap on two net_null ports, one forwarding
  core, both ports counted: the same no-NIC I/O, with no NAT work;
- new sessions per second (every packet opens a session), with and without
  --state (session_store.h: a copy of each new session for a successor),
  memory per session per direction (DPDK heap taken by one worker's tables
  for 1M sessions), and two workers against one;
- side by side with Linux (bench/linux_compare.py): the `make run-swpath` namespace
  topology with swpath, then with nftables snat, the same iperf3 traffic
  (skipped with the reason when not root or without iperf3/nft).

The throughput runs are repeated in rounds (--rounds, default 5) and the
figures are their medians, each ratio taken within its round.

Prints a table with the targets, writes bench/results/swpath.json (schema in
docs/benchmarks.md). Needs root only for what DPDK needs (nothing here).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import linux_compare

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "swpath" / "build" / "app" / "bench_swpath"
RESULTS = ROOT / "bench" / "results"
TARGETS = {
    "mpps_64k_min": 15.0,
    "mpps_1m_min": 8.0,
    "ratio_to_testpmd_min": 0.40,
    "new_sessions_per_s_min": 1_000_000,
    "bytes_per_session_per_direction_max": 128,
    "two_workers_speedup_min": 1.8,
}


def bench(mode: str, sessions: int, seconds: float, workers: int = 1) -> dict[str, Any]:
    out = subprocess.run(
        [str(BENCH), mode, str(sessions), str(seconds), str(workers)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def testpmd(seconds: float) -> float:
    """Packets per second macswap forwards, both ports counted."""
    prefix = f"sp-bench-testpmd-{os.getpid()}"
    # line-buffered: "Press enter to exit" must reach us when it is printed
    cmd = [
        "stdbuf", "-oL", shutil.which("dpdk-testpmd") or "dpdk-testpmd",
        "--no-huge", "-m", "1024", "--no-pci", "--no-shconf", "--no-telemetry",
        "--file-prefix", prefix, "-l", "0,1", "--log-level=*:error",
        "--vdev", "net_null0", "--vdev", "net_null1",
        "--", "--forward-mode=macswap", "--nb-cores=1", "--total-num-mbufs=16384",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        # forwarding has started when testpmd asks for Enter
        for line in proc.stdout:
            if "Press enter to exit" in line:
                break
        start = time.monotonic()
        time.sleep(seconds)
        proc.stdin.write("\n")
        proc.stdin.flush()
        elapsed = time.monotonic() - start
        rest = proc.stdout.read()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)
    acc = rest.split("Accumulated forward statistics", 1)[1]
    tx = int(acc.split("TX-packets:")[1].split()[0])
    return tx / elapsed


def machine() -> dict[str, Any]:
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
        "hugepages": False,
    }


def measure_rounds(count: int, s: float) -> list[dict[str, Any]]:
    """Every throughput run, `count` times, each run `s` seconds long.
    The machine is shared: each round runs everything side by side, and the
    figures are the rounds' medians (a ratio within its own round), so one
    round disturbed by a neighbour moves nothing."""
    rounds = []
    for _ in range(count):
        est_64k = bench("established", 65536, s)
        pmd = testpmd(s)
        est_1m = bench("established", 1_000_000, s)
        two = bench("established", 65536, s, workers=2)
        # the price of --state: 1M new sessions with and without their copies
        new = bench("new", 1_000_000, 0)
        new_state = bench("new-state", 1_000_000, 0)
        rounds.append({"established_64k": est_64k, "testpmd_pps": round(pmd),
                       "established_1m": est_1m, "two_workers": two,
                       "new_1m": new, "new_1m_state": new_state})  # fmt: skip
    return rounds


def figures_of(rounds: list[dict[str, Any]], mem: dict[str, Any]) -> dict[str, Any]:
    """The rounds' medians, and the memory run's bytes per session."""

    def median(f: Callable[[dict[str, Any]], float]) -> float:
        return statistics.median(f(r) for r in rounds)

    figures = {
        "mpps_64k": round(median(lambda r: r["established_64k"]["established_pps"]) / 1e6, 2),
        "mpps_1m": round(median(lambda r: r["established_1m"]["established_pps"]) / 1e6, 2),
        "testpmd_macswap_mpps": round(median(lambda r: r["testpmd_pps"]) / 1e6, 2),
        "ratio_to_testpmd": round(
            median(lambda r: r["established_64k"]["established_pps"] / r["testpmd_pps"]), 3
        ),
        # the first pass of the 1M runs: every packet opens a session
        "new_sessions_per_s": round(median(lambda r: r["established_1m"]["new_per_s"])),
        "new_sessions_state_ratio": round(
            median(lambda r: r["new_1m_state"]["new_per_s"] / r["new_1m"]["new_per_s"]), 3
        ),
        "bytes_per_session_per_direction": mem["bytes_per_session_per_direction"],
        "two_workers_mpps": round(median(lambda r: r["two_workers"]["established_pps"]) / 1e6, 2),
        "two_workers_speedup": round(
            median(
                lambda r: (
                    r["two_workers"]["established_pps"] / r["established_64k"]["established_pps"]
                )
            ),
            2,
        ),
    }
    return figures


def met_of(figures: dict[str, Any]) -> dict[str, bool]:
    return {
        "mpps_64k": figures["mpps_64k"] >= TARGETS["mpps_64k_min"],
        "mpps_1m": figures["mpps_1m"] >= TARGETS["mpps_1m_min"],
        "ratio_to_testpmd": figures["ratio_to_testpmd"] >= TARGETS["ratio_to_testpmd_min"],
        "new_sessions_per_s": figures["new_sessions_per_s"] >= TARGETS["new_sessions_per_s_min"],
        "bytes_per_session_per_direction": figures["bytes_per_session_per_direction"]
        <= TARGETS["bytes_per_session_per_direction_max"],
        "two_workers_speedup": figures["two_workers_speedup"] >= TARGETS["two_workers_speedup_min"],
    }


def print_table(figures: dict[str, Any], met: dict[str, bool], rounds: int) -> None:
    rows = [
        ("established, 64k sessions (Mpps)", figures["mpps_64k"], ">= 15", met["mpps_64k"]),
        ("established, 1M sessions (Mpps)", figures["mpps_1m"], ">= 8", met["mpps_1m"]),
        ("testpmd macswap, 2 x net_null (Mpps)", figures["testpmd_macswap_mpps"], "", None),
        ("swpath 64k / testpmd", figures["ratio_to_testpmd"], ">= 0.40", met["ratio_to_testpmd"]),
        ("new sessions per s, 1 core", figures["new_sessions_per_s"], ">= 1M",
         met["new_sessions_per_s"]),
        ("new sessions, --state / without", figures["new_sessions_state_ratio"], "", None),
        ("bytes/session/direction, 1M", figures["bytes_per_session_per_direction"], "<= 128",
         met["bytes_per_session_per_direction"]),
        ("2 workers / 1 (2 vCPUs!)", figures["two_workers_speedup"], ">= 1.8",
         met["two_workers_speedup"]),
    ]  # fmt: skip
    print(f"median of {rounds} rounds")
    print(f"{'measure':40} {'value':>12}  {'target':8} met")
    for name, value, target, ok in rows:
        flag = "" if ok is None else ("yes" if ok else "NO")
        print(f"{name:40} {value:>12}  {target:8} {flag}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="each throughput run")
    ap.add_argument("--rounds", type=int, default=5, help="figures are the rounds' medians")
    ap.add_argument("--out", type=Path, default=RESULTS / "swpath.json")
    args = ap.parse_args()
    if not BENCH.exists():
        print(f"{BENCH} missing: make -C swpath/bench -f Makefile.swpath", file=sys.stderr)
        return 2
    s = args.seconds
    rounds = measure_rounds(args.rounds, s)
    mem = bench("memory", 1_000_000, 0)
    linux = linux_compare.compare(s)
    figures = figures_of(rounds, mem)
    met = met_of(figures)
    result = {
        "benchmark": "swpath",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "method": "in-memory generator (bench_swpath) -> sp_process_burst -> net_null TX; "
        "testpmd macswap on 2 net_null ports, 1 forwarding core; no hugepages "
        "(swpath's buffers and tables on transparent huge pages, swpath/src/control/memory.h)",
        "seconds_per_run": s,
        "figures": figures,
        "targets": TARGETS,
        "met": met,
        "rounds": len(rounds),
        "raw": {"rounds": rounds, "memory": mem},
        "linux_side_by_side": linux,
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print_table(figures, met, len(rounds))
    print()
    linux_compare.print_table(linux)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
