#!/usr/bin/env python3
"""Two checkouts' benchmark runs side by side: per figure each run's value,
the medians, the ratio of the medians, each pair's ratio, and a verdict.

The runs are the JSON files `make bench-bmv2` and `make bench-offload`
write (bench/results/bmv2.json, offload.json), copied into one directory as
SIDE-N-BENCH.json (SIDE names a checkout, N the pair: the two sides' runs of
a pair ran one after the other, alternating which went first). How issue #31
used it: docs/benchmarks.md, "Seams: before and after".

    bench/ab_compare.py DIR BEFORE AFTER [--json OUT]

A figure is unchanged within noise when the pair ratios (after/before)
straddle 1, or when the ratio of the medians lies within the larger
same-side spread (max/min of one side's runs: how far the same code moved
on this machine); otherwise it is better or worse by the figure's sense."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

Figures = dict[str, tuple[str, str]]  # name: (path in the JSON, "higher"/"lower" is better)

BMV2: Figures = {
    "raw P4Runtime writes, entries/s": ("raw_entries_per_s", "higher"),
    "flow setup, flows/s (4,000/s offered)": ("setup/flows_per_s", "higher"),
    "flows installed of 5,000": ("setup/installed", "higher"),
    "first packets out of 5,000": ("setup/first_packets_out", "higher"),
    "controller CPU per installed flow, us": ("setup/cpu_us_per_flow/controller", "lower"),
    "switch CPU per installed flow, us": ("setup/cpu_us_per_flow/switch", "lower"),
    "first-packet latency p50, ms": ("latency/p50_ms", "lower"),
    "first-packet latency p99, ms": ("latency/p99_ms", "lower"),
    "client CPU per packet-out, us": ("client_cpu/packet_out_us", "lower"),
    "client CPU per one-entry Write, us": ("client_cpu/write_one_us", "lower"),
    "standby takeover, s": ("takeover/takeover_s", "lower"),
    "controller memory per session, bytes": ("memory_bytes_per_session", "lower"),
}


def offload_figures() -> Figures:
    figures: Figures = {}
    for rate in ("1000", "2000"):
        for mode in ("controller", "offload, polling", "offload, adaptive"):
            at = f"summary/{rate}/{mode}"
            figures[f"{rate}/s {mode}: first-packet p50, ms"] = (
                f"{at}/first_latency_ms_p50",
                "lower",
            )
            figures[f"{rate}/s {mode}: first-packet p99, ms"] = (
                f"{at}/first_latency_ms_p99",
                "lower",
            )
            for part in ("controller", "switch"):
                figures[f"{rate}/s {mode}: {part} CPU per flow, us"] = (
                    f"{at}/{part}_cpu_us_per_flow",
                    "lower",
                )
    for mode in ("controller", "offload", "offload, after_packets 2"):
        figures[f"setup, best flows/s: {mode}"] = (f"setup/flows_per_s/{mode}", "higher")
    for mode in ("offload", "offload, after_packets 2"):
        figures[f"setup ratio to controller mode: {mode}"] = (
            f"setup/ratio_to_controller_mode/{mode}",
            "higher",
        )
    figures["controller CPU per offloaded flow at capacity, us"] = (
        "controller_cpu_us_per_offloaded_flow/at_capacity",
        "lower",
    )
    for n in ("1", "2"):
        figures[f"slow-path capacity through BMv2, {n} instance(s), flows/s"] = (
            f"capacity/flows_per_s/{n}",
            "higher",
        )
        figures[f"in memory, {n} instance(s), new sessions/s"] = (
            f"in_memory/new_sessions_per_s/{n}",
            "higher",
        )
    return figures


BENCHES: dict[str, Figures] = {"bmv2": BMV2, "offload": offload_figures()}


def pick(data: Any, path: str) -> float | None:
    for key in path.split("/"):
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return None if data is None else float(data)


def runs(folder: Path, side: str, bench: str) -> dict[int, Any]:
    """Pair number -> that run's JSON."""
    return {
        int(f.name.split("-")[1]): json.loads(f.read_text())
        for f in sorted(folder.glob(f"{side}-*-{bench}.json"))
    }


def spread(values: list[float]) -> float:
    low = min(values)
    return max(values) / low if low > 0 else float("inf")


def verdict(before: list[float], after: list[float], pairs: list[float], better: str) -> str:
    mb, ma = statistics.median(before), statistics.median(after)
    straddle = bool(pairs) and min(pairs) <= 1 <= max(pairs)
    noise = max(spread(before), spread(after))
    if straddle or (mb > 0 and 1 / noise <= ma / mb <= noise):
        return "unchanged within noise"
    return "after better" if (ma > mb) == (better == "higher") else "after worse"


def compare(folder: Path, before: str, after: str, bench: str) -> list[dict[str, Any]]:
    b, a = runs(folder, before, bench), runs(folder, after, bench)
    rows = []
    for name, (path, better) in BENCHES[bench].items():
        vb = {n: v for n, d in b.items() if (v := pick(d, path)) is not None}
        va = {n: v for n, d in a.items() if (v := pick(d, path)) is not None}
        if not vb or not va:
            continue
        pairs = [va[n] / vb[n] for n in sorted(vb) if n in va and vb[n]]
        mb, ma = statistics.median(vb.values()), statistics.median(va.values())
        rows.append(
            {
                "figure": name,
                "path": path,
                "better": better,
                "before": [vb[n] for n in sorted(vb)],
                "after": [va[n] for n in sorted(va)],
                "median_before": mb,
                "median_after": ma,
                "ratio": round(ma / mb, 3) if mb else None,
                "pair_ratios": [round(p, 3) for p in pairs],
                "same_side_spread": round(
                    max(spread(list(vb.values())), spread(list(va.values()))), 3
                ),
                "verdict": verdict(list(vb.values()), list(va.values()), pairs, better),
            }
        )
    return rows


def fmt(x: float) -> str:
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.0f}"
    return f"{x:.2f}" if abs(x) >= 1 else f"{x:.3f}"


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| figure | before, runs | after, runs | after/before (medians) | pair ratios "
        "| same-side spread | |",
        "|---|---|---|---:|---|---:|---|",
    ]
    for r in rows:
        mark = "unchanged" if r["verdict"] == "unchanged within noise" else f"**{r['verdict']}**"
        lines.append(
            f"| {r['figure']} | {' / '.join(fmt(x) for x in r['before'])} "
            f"| {' / '.join(fmt(x) for x in r['after'])} | {r['ratio']:.2f} "
            f"| {', '.join(f'{p:.2f}' for p in r['pair_ratios'])} "
            f"| {r['same_side_spread']:.2f} | {mark} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("folder", type=Path, help="where the SIDE-N-BENCH.json runs are")
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--json", type=Path, help="write every row here")
    args = parser.parse_args()
    result = {}
    for bench in BENCHES:
        rows = compare(args.folder, args.before, args.after, bench)
        if rows:
            result[bench] = rows
            print(f"\n{bench}: {args.after} against {args.before}\n\n{markdown(rows)}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
