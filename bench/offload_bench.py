#!/usr/bin/env python3
"""`make bench-offload`: offload mode against controller mode on BMv2, side by side (issue #15).

Each run builds the namespace lab (topo/lab/offload_lab.py, the runs are in
offload_runs.py) in one mode: BMv2 with the controller doing every new flow
(packet-in, QNS, write, packet-out), or BMv2 with a swpath slow-path
instance taking every miss while the controller installs what it opens. The
switch is simple_switch_grpc from PATH, or the build QUICKNAT_BMV2 names
(docs/benchmarks.md: the figures are of one configured for speed). Rounds
(--rounds) alternate the order of the modes; tables are medians.

- Rate runs (--rates, --seconds): h1 opens new UDP flows to far at each
  offered rate, one datagram from each of as many source ports, then sends
  each a second one; far timestamps arrivals on the machine's monotonic
  clock: first packets delivered and their one-way latency (p50, p99), when
  the switch holds every session, second packets delivered, and the
  controller's and the switch's CPU time per flow. Controller mode, and
  offload mode twice: the instance polling its core (as deployed, on a core
  of its own) and with adaptive polling (--idle-sleep-us).
- Setup rate (--setup-rates, --setup-seconds): one-packet flows from 100
  addresses beside h1, prebuilt frames through an AF_PACKET socket
  (lab/flows.py FRAME_SEND, not the limit) at each offered rate, in
  controller mode, offload mode, and offload mode with `after_packets = 2`
  (one-packet flows never cost the switch a write): flows delivered per
  second at each rate, a mode's best, and the ratio to controller mode
  (targets 2.5x and 5x); the CPU per flow of each process of the NAT.
- Controller CPU per offloaded flow at each offered rate, and at capacity
  (the offload setup run that delivered most; target 50 us).
- Full table (--overflow flows at 1,000/s through p4src/build/lab/'s
  1,024-entry connection tables): what each mode delivers, and where the
  flows the switch cannot hold go.
- Slow-path capacity through BMv2 (--capacity-rate, --capacity-flows):
  one-packet flows from h1 and h2, one instance against two.
- The instances' own capacity (--in-memory-sessions): bench_swpath's
  new-session pass, one process against two at once, each on a CPU of its
  own (target: two at least 1.8x one).

Needs root and simple_switch_grpc; writes bench/results/offload.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lab.bmv2 import switch_binary
from lab.offload_lab import IDLE_SLEEP_US, LAB_TABLE
from lab.processes import raise_on_signals
from offload_runs import (
    OVERFLOW_RATE,
    SETUP_MODES,
    Offered,
    run_capacity,
    run_in_memory,
    run_mode,
    run_overflow,
    run_setup,
)
from quicknat.config.model import OffloadPolicy

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "offload.json"


# Issue #15's targets: the controller's CPU per offloaded flow; the new-flow
# setup rate against controller mode; two slow-path instances against one.
TARGET_CPU_US = 50
TARGET_SETUP_RATIO = 2.5
TARGET_SETUP_RATIO_ONE_PACKET = 5.0  # one-packet flows, after_packets = 2
TARGET_CAPACITY_RATIO = 1.8


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--rates", default="1000,2000", help="new flows per second offered, comma-separated"
    )
    parser.add_argument("--seconds", type=float, default=2.0, help="offered for this long")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--batch-window-ms",
        type=int,
        default=OffloadPolicy().batch_window_ms,
        help="offload mode's [offload] batch_window_ms in the rate runs (default: its default)",
    )
    parser.add_argument(
        "--idle-sleep-us",
        type=int,
        default=IDLE_SLEEP_US,
        help="the slow-path instances' --idle-sleep-us: the adaptive rate runs and every "
        "other run (0: poll without a pause)",
    )
    parser.add_argument(
        "--setup-rates",
        default="2500,5000,10000,20000",
        help="one-packet flows offered per second in the setup-rate runs, comma-separated "
        "(up to beyond what any mode sets up here); 0 skips them",
    )
    parser.add_argument(
        "--setup-seconds", type=float, default=0.5, help="each setup-rate run offers this long"
    )
    parser.add_argument(
        "--overflow",
        type=int,
        default=20000,
        help=f"concurrent flows for the full-table run ({LAB_TABLE}-entry tables); 0 skips it",
    )
    parser.add_argument(
        "--capacity-rate",
        type=float,
        default=3000.0,
        help="one-packet flows per second from each of h1 and h2 in the slow-path capacity "
        "run (one instance against two); 0 skips it",
    )
    parser.add_argument(
        "--capacity-flows", type=int, default=3000, help="flows from each host in that run"
    )
    parser.add_argument(
        "--in-memory-sessions",
        type=int,
        default=3_000_000,
        help="sessions each instance opens in the in-memory capacity run (one "
        "bench_swpath process against two at once); 0 skips it",
    )
    return parser.parse_args()


def median_of(rows: list[dict[str, Any]], field: str, **where: Any) -> Any:
    """The median of `field` over the rows that match `where` (None: none)."""
    values = [
        r[field] for r in rows if all(r[k] == v for k, v in where.items()) and r[field] is not None
    ]
    return round(statistics.median(values), 3) if values else None


def by_instances(rows: list[dict[str, Any]], field: str) -> dict[int, Any]:
    """The median of `field` for one instance and for two (those measured)."""
    return {
        n: median_of(rows, field, instances=n)
        for n in (1, 2)
        if any(r["instances"] == n for r in rows)
    }


def two_against_one(rates: dict[int, Any]) -> float | None:
    return round(rates[2] / rates[1], 2) if rates.get(1) and rates.get(2) else None


RATE_FIELDS = (
    "first_delivered",
    "first_latency_ms_p50",
    "first_latency_ms_p99",
    "all_installed_s",
    "second_delivered",
    "controller_cpu_us_per_flow",
    "switch_cpu_us_per_flow",
)


# The rate runs' settings: controller mode, and offload mode with the
# instance polling its core as deployed (where one has a core of its own) and
# with adaptive polling (--idle-sleep-us, as on this shared VM).
RATE_MODES = ("controller", "offload, polling", "offload, adaptive")


def rate_runs(args: argparse.Namespace) -> dict[str, Any]:
    """Each setting at each offered rate, the order turning by round."""
    rates = [float(r) for r in args.rates.split(",")]
    runs: list[dict[str, Any]] = []
    for rate in rates:
        flows = int(rate * args.seconds)
        for r in range(args.rounds):
            for i, name in enumerate(RATE_MODES[r % 3 :] + RATE_MODES[: r % 3]):
                # fresh source ports each run: no session of an earlier one is reused
                base = 20000 + (3 * r + i) * (flows + 10) % 40000
                sleep = args.idle_sleep_us if name == "offload, adaptive" else 0
                offered = Offered(flows, rate, base)
                result = run_mode(name != "controller", offered, args.batch_window_ms, sleep)
                result.update(mode=name, round=r)
                runs.append(result)
                print(json.dumps({k: v for k, v in result.items() if k != "controller_counters"}))
    summary = {
        f"{rate:.0f}": {
            mode: {f: median_of(runs, f, offered_flows_per_s=rate, mode=mode) for f in RATE_FIELDS}
            for mode in RATE_MODES
        }
        for rate in rates
    }
    for rate in rates:
        table = summary[f"{rate:.0f}"]
        flows = int(rate * args.seconds)
        print(f"\n{flows} new flows at {rate:.0f}/s:")
        print(f"{'':28}" + "".join(f"{mode:>20}" for mode in RATE_MODES))
        for field in RATE_FIELDS:
            print(f"{field:28}" + "".join(f"{table[m][field]!s:>20}" for m in RATE_MODES))
    return {"summary": summary, "runs": runs}


# The setup modes BMv2 runs: "learn" needs a switch with learner tables
# (PNA add_on_miss, quicknat-swx); the lab refuses it on BMv2, and bench-swx
# measures it.
BMV2_SETUP_MODES = tuple(mode for mode in SETUP_MODES if mode != "learn")


def setup_runs(args: argparse.Namespace) -> dict[str, Any]:
    """One-packet flows at each offered rate, in each mode: a mode's setup
    rate is the most it delivered per second at any of them (beyond its
    capacity a software switch can deliver less than at it: overload costs
    it the packets it drops, so one overloaded rate would flatter nobody but
    could wrong the mode it overloads most)."""
    setup: list[dict[str, Any]] = []
    offered = [float(r) for r in args.setup_rates.split(",") if float(r) > 0]
    for r in range(args.rounds if offered else 0):
        names = list(BMV2_SETUP_MODES) if r % 2 == 0 else list(reversed(BMV2_SETUP_MODES))
        for mode in names:
            for rate in offered:
                flows = int(rate * args.setup_seconds)
                result = run_setup(mode, Offered(flows, rate, 10000), args.idle_sleep_us)
                result["round"] = r
                setup.append(result)
                print(json.dumps(result))
    # per mode and offered rate the median of the rounds; per mode the best rate
    curve = {
        mode: {
            f"{rate:.0f}": median_of(
                setup, "setup_flows_per_s", mode=mode, offered_flows_per_s=rate
            )
            for rate in offered
        }
        for mode in BMV2_SETUP_MODES
        if any(x["mode"] == mode for x in setup)
    }
    best = {mode: max(v for v in rates.values() if v is not None) for mode, rates in curve.items()}
    ratio = {
        mode: round(r / best["controller"], 2)
        for mode, r in best.items()
        if mode != "controller" and best.get("controller")
    }
    if setup:
        print("\nsetup rate, one-packet flows, delivered per second at each offered rate (median):")
        print(f"  {'offered':28}" + "".join(f"{rate:>9.0f}" for rate in offered))
        for mode, rates in curve.items():
            against = f"  best {best[mode]}" + (
                f" = {ratio[mode]}x controller mode" if mode in ratio else ""
            )
            print(f"  {mode:28}" + "".join(f"{v!s:>9}" for v in rates.values()) + against)
    return {
        "offered_flows_per_s": offered,
        "seconds": args.setup_seconds,
        "delivered_per_s": curve,
        "flows_per_s": best,
        "ratio_to_controller_mode": ratio,
        "targets": {
            "offload": TARGET_SETUP_RATIO,
            "offload, after_packets 2": TARGET_SETUP_RATIO_ONE_PACKET,
        },
        "runs": setup,
    }


def overflow_runs(args: argparse.Namespace) -> list[dict[str, Any]]:
    """A switch table too small for the flows, in each mode."""
    overflow = [
        run_overflow(
            offload,
            args.overflow,
            OVERFLOW_RATE,
            60000 - args.overflow * (1 + offload),
            args.idle_sleep_us,
        )
        for offload in (False, True)
        if args.overflow
    ]
    for o in overflow:
        print(
            f"\nfull table ({o['table_entries']} entries), {o['flows']} flows, {o['mode']} mode: "
            f"first packets {o['first_delivered']}, second {o['second_delivered']}, "
            f"in the switch {o['in_switch']}; {o['controller_counters']}"
        )
    return overflow


def capacity_runs(args: argparse.Namespace) -> dict[str, Any]:
    """One slow-path instance against two, through BMv2."""
    capacity: list[dict[str, Any]] = []
    for r in range(args.rounds if args.capacity_rate else 0):
        for i, n in enumerate((1, 2) if r % 2 == 0 else (2, 1)):
            base = 5000 + (r * 2 + i) * (args.capacity_flows + 10) % 50000
            result = run_capacity(
                n, args.capacity_flows, args.capacity_rate, base, args.idle_sleep_us
            )
            result["round"] = r
            capacity.append(result)
            print(json.dumps(result))
    rate = by_instances(capacity, "flows_per_s")
    busy = by_instances(capacity, "instances_busy_us_per_flow")
    if capacity:
        print(
            f"\nslow-path capacity through BMv2, one-packet flows from h1 and h2 at "
            f"{2 * args.capacity_rate:.0f}/s, after_packets 2 (median):"
        )
        for n, r in rate.items():
            print(f"  {n} instance(s): {r:>8} flows/s, {busy[n]} us busy per flow")
        print(f"  two against one: {two_against_one(rate)}x")
    return {
        "offered_flows_per_s": 2 * args.capacity_rate,
        "flows_per_s": rate,
        "instances_busy_us_per_flow": busy,
        "two_against_one": two_against_one(rate),
        "runs": capacity,
    }


def in_memory_runs(args: argparse.Namespace) -> dict[str, Any]:
    """One instance against two at once, in memory (no switch)."""
    runs: list[dict[str, Any]] = []
    for r in range(args.rounds if args.in_memory_sessions else 0):
        for n in (1, 2) if r % 2 == 0 else (2, 1):
            result = run_in_memory(n, args.in_memory_sessions)
            result["round"] = r
            runs.append(result)
            print(json.dumps(result))
    rate = by_instances(runs, "new_sessions_per_s")
    if runs:
        print("\nthe instances' own capacity, in memory (bench_swpath new, one worker each):")
        for n, r in rate.items():
            print(f"  {n} instance(s) at once: {r:>10} new sessions/s")
        print(f"  two against one: {two_against_one(rate)}x (target {TARGET_CAPACITY_RATIO}x)")
    return {
        "sessions_each": args.in_memory_sessions,
        "new_sessions_per_s": rate,
        "two_against_one": two_against_one(rate),
        "target": TARGET_CAPACITY_RATIO,
        "runs": runs,
    }


def controller_cpu(rates: dict[str, Any], setup: dict[str, Any]) -> dict[str, Any]:
    """The controller's CPU per offloaded flow at each offered rate of the
    rate runs, and at capacity: in the setup run of offload mode that
    delivered the most (the manager's cost where it bounds anything; at low
    rates each write carries few flows and its own cost dominates)."""
    by_rate = {
        r: {m: t[m]["controller_cpu_us_per_flow"] for m in RATE_MODES if m != "controller"}
        for r, t in rates["summary"].items()
    }
    runs = [x for x in setup["runs"] if x["mode"] == "offload"]
    best = max(runs, key=lambda x: x["setup_flows_per_s"], default=None)
    at_capacity = None
    if best is not None:
        at_capacity = median_of(
            [{"cpu": x["cpu_us_per_flow"]["controller"], **x} for x in runs],
            "cpu",
            offered_flows_per_s=best["offered_flows_per_s"],
        )
    print("\ncontroller CPU per offloaded flow (us):")
    for rate, value in by_rate.items():
        print(f"  at {rate} new flows/s offered: {value}")
    if best is not None:
        print(
            f"  at capacity ({best['offered_flows_per_s']:.0f}/s offered, the setup run): "
            f"{at_capacity} (target <= {TARGET_CPU_US})"
        )
    return {"by_offered_rate": by_rate, "at_capacity": at_capacity}


def main() -> int:
    args = arguments()
    raise_on_signals()  # SIGTERM too: the labs' finally clean-ups run
    if os.geteuid() != 0 or shutil.which(switch_binary()) is None:
        print("bench-offload: skipped: needs root and simple_switch_grpc")
        return 0
    rates = rate_runs(args)
    setup = setup_runs(args)
    overflow = overflow_runs(args)
    capacity = capacity_runs(args)
    in_memory = in_memory_runs(args)
    ratio = setup["ratio_to_controller_mode"]
    cpu = controller_cpu(rates, setup)
    met = {
        "controller_cpu_us_per_offloaded_flow": (cpu["at_capacity"] or 1e9) <= TARGET_CPU_US,
        "setup_ratio": ratio.get("offload", 0) >= TARGET_SETUP_RATIO,
        "setup_ratio_one_packet": (
            ratio.get("offload, after_packets 2", 0) >= TARGET_SETUP_RATIO_ONE_PACKET
        ),
        # the slow path's capacity where the VM lets it show, the instances
        # alone: through BMv2 the switch and the VM bound both settings
        "capacity_two_against_one": (in_memory["two_against_one"] or 0) >= TARGET_CAPACITY_RATIO,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "kernel": platform.release()},
        "switch": switch_binary(),
        "command": "make bench-offload",
        "seconds": args.seconds,
        "rounds": args.rounds,
        "batch_window_ms": args.batch_window_ms,
        "idle_sleep_us": args.idle_sleep_us,
        "summary": rates["summary"],
        "controller_cpu_us_per_offloaded_flow": cpu,
        "target_controller_cpu_us_per_offloaded_flow": TARGET_CPU_US,
        "met": met,
        "setup": setup,
        "overflow": overflow,
        "capacity": capacity,
        "in_memory": in_memory,
        "runs": rates["runs"],
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {RESULTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
