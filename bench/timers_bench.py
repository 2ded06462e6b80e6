#!/usr/bin/env python3
"""`make bench-timers`: swpath's timer wheel against DPDK's rte_timer.

The session workload on both (swpath/bench/bench_timers.c says it in full):
1M sessions opened (timers armed), established traffic refreshing them
(what a packet costs each: the wheel's last_seen store, rte_timer_reset;
and rte_timer refreshed as lazily as the wheel, "rte_lazy"),
then every session expired on a simulated clock (the spec's timeouts: UDP
300 s, TCP 2 h 4 min established, 240 s transitory), and the DPDK heap the
timers take. swpath/build/app/test_sp_timers checks that they expire the
same sessions at the same simulated times, so this compares equal work.

Each round runs the three, one process each, in rotating order (--rounds,
default 5); a figure is the median over rounds, a ratio is taken within its
round. A DPDK process: run it under `flock /tmp/quicknat-lab.lock`.
Writes bench/results/timers.json (schema in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from swpath_bench import machine  # the same machine record as bench-swpath's

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "swpath" / "build" / "app" / "bench_timers"
RESULTS = ROOT / "bench" / "results"
IMPLS = ("wheel", "rte_timer", "rte_lazy")
# per implementation, the figures taken from each run
MEASURES = (
    "open_ns",
    "packet_ns",
    "expire_ns",
    "expiries_per_s",
    "examined",
    "heap_bytes_per_session",
)


def run(impl: str, sessions: int, packets: int) -> dict[str, Any]:
    out = subprocess.run(
        [str(BENCH), impl, str(sessions), str(packets)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0:
        raise SystemExit(f"bench_timers {impl} failed ({out.returncode}): {out.stderr.strip()}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if result["late_arms"] != 0:
        # a timer armed after its tick: rte_timer's order was not the workload's
        print(f"warning: {impl}: {result['late_arms']} late arms", file=sys.stderr)
    return result


def summarize(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Medians per implementation, and rte_timer / wheel ratios within rounds."""
    figures: dict[str, Any] = {}
    for impl in IMPLS:
        figures[impl] = {
            m: round(statistics.median(r[impl][m] for r in rounds), 2) for m in MEASURES
        }
        figures[impl]["in_session_bytes"] = rounds[0][impl]["in_session_bytes"]
    for impl in IMPLS[1:]:
        figures[f"{impl}_over_wheel"] = {
            m: round(statistics.median(r[impl][m] / r["wheel"][m] for r in rounds), 2)
            for m in ("open_ns", "packet_ns", "expire_ns", "heap_bytes_per_session")
        }
    return figures


def print_table(figures: dict[str, Any], n_rounds: int) -> None:
    rows = [
        ("arm (session opened), ns", "open_ns"),
        ("refresh (per packet), ns", "packet_ns"),
        ("expire, ns per session", "expire_ns"),
        ("expiries per second", "expiries_per_s"),
        ("sessions looked at to expire all", "examined"),
        ("heap bytes per session", "heap_bytes_per_session"),
        ("bytes in the session (links)", "in_session_bytes"),
    ]
    print(f"median of {n_rounds} rounds; ratios to the wheel within each round")
    print(f"{'measure':34}" + "".join(f"{impl:>12}" for impl in IMPLS) + "   ratios")
    for name, key in rows:
        ratios = " ".join(
            str(figures[f"{impl}_over_wheel"].get(key, "")) for impl in IMPLS[1:]
        ).strip()
        print(f"{name:34}" + "".join(f"{figures[i][key]:>12}" for i in IMPLS) + f"   {ratios}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=1_000_000)
    ap.add_argument("--packets", type=int, default=2_000_000, help="refreshing packets")
    ap.add_argument("--rounds", type=int, default=5, help="figures are the rounds' medians")
    ap.add_argument("--out", type=Path, default=RESULTS / "timers.json")
    args = ap.parse_args()
    if not BENCH.exists():
        print(f"{BENCH} missing: make build", file=sys.stderr)
        return 2
    rounds: list[dict[str, dict[str, Any]]] = []
    for i in range(args.rounds):
        # rotate which goes first: a neighbour's burst hits each in turn
        order = IMPLS[i % len(IMPLS) :] + IMPLS[: i % len(IMPLS)]
        rounds.append({impl: run(impl, args.sessions, args.packets) for impl in order})
    figures = summarize(rounds)
    result = {
        "benchmark": "timers",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "method": "bench_timers, one process per implementation and round, rotating "
        "order; simulated clock (rte_timer: simulated ms mapped onto the TSC, "
        "swpath/bench/timer_sides.h); EAL --no-huge -m 512, one lcore",
        "sessions": args.sessions,
        "packets": args.packets,
        "figures": figures,
        "rounds": len(rounds),
        "raw": {"rounds": rounds},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print_table(figures, len(rounds))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
