#!/usr/bin/env python3
"""`make bench-qns`: the Quick NAT paper's Table 1 on this machine.

Median lookup time of QNS and of a linear scan, for the C and the Python
implementations, at 100 to 100,000 rules spread over 8 prefix lengths (ports
and wildcards mixed, 3/4 SNAT, 1/4 DNAT), with lookups aimed uniformly at random
rules; plus the worst case (every one of the 66 sub-tables non-empty, every
probe tried, nothing matches). Prints a table, writes bench/results/qns.json
(schema in docs/benchmarks.md) and bench/results/qns.png.

Expected answers come from the Python QNS; the C benchmark checks its QNS and
its linear scan against them before timing, so the three must agree.

Each size gets 65,536 packets aimed at rules drawn uniformly at random, cycled:
with a few thousand, the CPU's branch predictors learn the repeating sequence
and a small rule set's lookups look twice as fast as they are.

The VM's neighbours move a single timing by up to 2x within seconds, so every
size is measured in each of `--rounds` rounds (all sizes in turn, round after
round): figures are medians over the rounds, and the ratios are taken within
each round before their median is taken. C's 100k-over-100 ratio comes from a
side-by-side run (bench_qns given every rule set, timing them batch by batch in
turn), which holds it to a few percent where separate runs vary by 2x.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from quicknat.addr import Prefix, mask_of
from quicknat.nat.linear_scan import LinearScan
from quicknat.nat.qns import Qns
from quicknat.nat.qns_vectors import Lookup, Packet, Vector, dump_vector
from quicknat.rules import Protocol, Rule, RuleKind

ROOT = Path(__file__).resolve().parent.parent
C_BENCH = ROOT / "swpath" / "build" / "bench_qns"
WORK = ROOT / "bench" / "work"
RESULTS = ROOT / "bench" / "results"
SIZES = [100, 1_000, 3_000, 5_000, 10_000, 100_000]
LENGTHS = [8, 12, 16, 20, 24, 28, 30, 32]
PORTS = [None, None, 53, 80, 443, 8080, 3074, 65535]
PACKETS = 65536
SEED = 1
TARGETS = {
    "c_qns_median_max_ns": 45.0,
    "python_qns_median_max_ns": 2000.0,
    "flat_max_ratio_100k_to_100": 1.5,
    "c_linear_over_qns_min_ratio_at_10k": 300.0,
    "c_memory_max_bytes_at_100k": 32 * 1024 * 1024,
}


def make_rules(count: int, rng: random.Random) -> list[Rule]:
    rules: list[Rule] = []
    seen: set[tuple[Any, ...]] = set()
    while len(rules) < count:
        kind = RuleKind.DNAT if rng.random() < 0.25 else RuleKind.SNAT
        length = rng.choice(LENGTHS)
        port = rng.choice(PORTS)
        protocol = rng.choice([Protocol.TCP, Protocol.UDP, Protocol.ANY])
        prefix = Prefix(rng.getrandbits(32) & mask_of(length), length)
        rule = Rule(len(rules) + 1, kind, prefix, port, protocol)
        if rule.match_key not in seen:
            seen.add(rule.match_key)
            rules.append(rule)
    return rules


def aimed_packet(rule: Rule, rng: random.Random) -> Packet:
    """A packet that matches `rule` (though a more specific rule may win)."""
    address = rule.prefix.address | (rng.getrandbits(32) & ~rule.prefix.mask & 0xFFFFFFFF)
    protocol = int(rule.protocol) if rule.protocol is not Protocol.ANY else rng.choice([6, 17])
    port = rule.port if rule.port is not None else rng.randrange(1024, 65536)
    other, other_port = rng.getrandbits(32), rng.randrange(1, 65536)
    if rule.kind is RuleKind.SNAT:
        return Packet(protocol, address, other, port, other_port)
    return Packet(protocol, other, address, other_port, port)


def worst_case_rules() -> tuple[list[Rule], Packet]:
    """All 66 sub-tables non-empty, each with entries of all four probe forms at
    the packet's own masked address (so every probe hashes and compares), and a
    packet that none of them matches."""
    packet = Packet(6, 0x0A010203, 0xC6336403, 2222, 3333)  # tcp 10.1.2.3 -> 198.51.100.3
    rules: list[Rule] = []
    for kind in RuleKind:
        address = packet.src if kind is RuleKind.SNAT else packet.dst
        for length in range(33):
            masked = address & mask_of(length)
            for port, protocol in [(1, Protocol.TCP), (1, Protocol.ANY), (None, Protocol.UDP)]:
                rules.append(Rule(len(rules) + 1, kind, Prefix(masked, length), port, protocol))
            # Wildcard + any would match, so it lives at another address.
            other = (masked ^ (1 << (32 - length))) & mask_of(length) if length else None
            if other is not None:
                rules.append(Rule(len(rules) + 1, kind, Prefix(other, length), None, Protocol.ANY))
    return rules, packet


def time_python(
    table: Qns | LinearScan, packets: list[Packet], batch: int, repeat: int
) -> dict[str, float]:
    """Median over `repeat` batches of the time per lookup (ns). Packets are
    unpacked to tuples beforehand so the loop measures lookups, not attribute reads."""
    lookup = table.lookup
    tuples = [(p.protocol, p.src, p.sport, p.dst, p.dport) for p in packets]
    per_lookup: list[float] = []
    n = len(tuples)
    for r in range(repeat):
        chunk = [tuples[(r * batch + i) % n] for i in range(batch)]
        start = time.perf_counter_ns()
        for protocol, src, sport, dst, dport in chunk:
            lookup(protocol, src, sport, dst, dport)
        per_lookup.append((time.perf_counter_ns() - start) / batch)
    return summarize(per_lookup)


def time_python_side_by_side(
    cases: list[Case], batch: int = 1000, repeat: int = 31
) -> dict[int, dict[str, Any]]:
    """Python QNS over all the rule sets batch by batch in turn, as C's
    side-by-side run: per size its figures and its ratio to the first size,
    taken batch by batch. Timings of one size seconds apart from another's
    gave a 100k-over-100 ratio anywhere from 1.1 to 3.5 on this VM."""
    lookups = [case.qns.lookup for case in cases]
    tuples = [
        [(p.protocol, p.src, p.sport, p.dst, p.dport) for p in case.packets] for case in cases
    ]
    per_lookup: list[list[float]] = [[] for _ in cases]
    for r in range(repeat):
        for i, lookup in enumerate(lookups):
            n = len(tuples[i])
            chunk = [tuples[i][(r * batch + k) % n] for k in range(batch)]
            start = time.perf_counter_ns()
            for protocol, src, sport, dst, dport in chunk:
                lookup(protocol, src, sport, dst, dport)
            per_lookup[i].append((time.perf_counter_ns() - start) / batch)
    return {
        case.rules: {
            "qns_ns": summarize(times),
            "ratio_to_first": summarize(
                [t / first for t, first in zip(times, per_lookup[0], strict=True)]
            ),
        }
        for case, times in zip(cases, per_lookup, strict=True)
    }


def summarize(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"median": statistics.median(ordered), "p10": pick(0.1), "p90": pick(0.9)}


@dataclass
class Case:
    """One rule set, built once and timed in every round."""

    name: str
    rules: int
    packets: list[Packet]
    vector_path: Path
    qns: Qns
    linear: LinearScan


def prepare(name: str, rules: list[Rule], packets: list[Packet]) -> Case:
    qns, linear = Qns(), LinearScan()
    for rule in rules:
        qns.add(rule)
        linear.add(rule)
    steps: list[Lookup] = []
    for p in packets:
        found = qns.lookup(p.protocol, p.src, p.sport, p.dst, p.dport)
        steps.append(Lookup(p, None if found is None else found.id))
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"{name}.json"
    path.write_text(dump_vector(Vector(name, "benchmark input", list(rules), steps)))
    return Case(name, len(rules), packets, path, qns, linear)


def run_c(case: Case) -> dict[str, Any]:
    proc = subprocess.run(
        [str(C_BENCH), str(case.vector_path)], capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0:
        raise SystemExit(f"bench_qns failed on {case.vector_path}:\n{proc.stderr}{proc.stdout}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def run_c_side_by_side(cases: list[Case]) -> dict[int, dict[str, Any]]:
    """C QNS over all the rule sets in one process, batch by batch in turn
    (bench_qns with several files): per size its figures and its ratio to the
    first size, taken batch by batch."""
    proc = subprocess.run(
        # Each batch follows a warm-up cycle of its packets: fewer repeats.
        [str(C_BENCH), *(str(c.vector_path) for c in cases), "--repeat", "101"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise SystemExit(f"bench_qns (side by side) failed:\n{proc.stderr}{proc.stdout}")
    out = json.loads(proc.stdout)
    return {
        entry["rules"]: {"qns_ns": entry["qns_ns"], "ratio_to_first": ratio}
        for entry, ratio in zip(out["side_by_side"], out["ratio_to_first"], strict=True)
    }


def measure_once(case: Case) -> dict[str, Any]:
    """One round's figures for one rule set."""
    linear_batch = max(1, min(200, 200_000 // case.rules))
    return {
        "c": run_c(case),
        "python": {
            "qns_ns": time_python(case.qns, case.packets, 1000, 101),
            "linear_ns": time_python(case.linear, case.packets, linear_batch, 7),
        },
    }


def median_of_rounds(case: Case, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """A size's figures: each timing's median (and p10, p90) is the median of
    that figure over the rounds; `spread` gives the rounds' lowest and highest
    median."""

    def med(lang: str, key: str) -> dict[str, float]:
        stats = [r[lang][key] for r in rounds]
        return {
            field: statistics.median(s[field] for s in stats) for field in ("median", "p10", "p90")
        }

    def spread(lang: str, key: str) -> list[float]:
        medians = [r[lang][key]["median"] for r in rounds]
        return [min(medians), max(medians)]

    c = {key: med("c", key) for key in ("qns_ns", "linear_ns")}
    c["qns_memory_bytes"] = rounds[0]["c"]["qns_memory_bytes"]
    c["qns_memory_per_rule"] = rounds[0]["c"]["qns_memory_per_rule"]
    c["qns_spread_ns"] = spread("c", "qns_ns")
    c["clock_ghz"] = statistics.median(r["c"]["clock_ghz"] for r in rounds)
    c["load_ns"] = statistics.median(r["c"]["load_ns"] for r in rounds)
    if "c_side_by_side" in rounds[0]:
        c["qns_side_by_side_ns"] = {
            field: statistics.median(r["c_side_by_side"]["qns_ns"][field] for r in rounds)
            for field in ("median", "p10", "p90")
        }
    python = {key: med("python", key) for key in ("qns_ns", "linear_ns")}
    python["qns_spread_ns"] = spread("python", "qns_ns")
    if "python_side_by_side" in rounds[0]:
        python["qns_side_by_side_ns"] = {
            field: statistics.median(r["python_side_by_side"]["qns_ns"][field] for r in rounds)
            for field in ("median", "p10", "p90")
        }
    return {"rules": case.rules, "packets": len(case.packets), "c": c, "python": python}


def ratios(rounds: list[dict[int, dict[str, Any]]]) -> dict[str, list[float]]:
    """Per round, the ratios the targets are about. The 100k-over-100 ratios
    come from the side-by-side runs (batch by batch in turn, in one process);
    the linear scan's from timings seconds apart in the same round."""
    out: dict[str, list[float]] = {"c_flat": [], "python_flat": [], "c_linear_over_qns_10k": []}
    for by_size in rounds:
        if 100 in by_size and 100_000 in by_size:
            out["c_flat"].append(by_size[100_000]["c_side_by_side"]["ratio_to_first"]["median"])
            out["python_flat"].append(
                by_size[100_000]["python_side_by_side"]["ratio_to_first"]["median"]
            )
        if 10_000 in by_size:
            c = by_size[10_000]["c"]
            out["c_linear_over_qns_10k"].append(c["linear_ns"]["median"] / c["qns_ns"]["median"])
    return out


def machine() -> dict[str, Any]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    cc = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout.splitlines()
    return {
        "cpu": cpu,
        "cores": len(
            [
                ln
                for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("processor")
            ]
        ),
        "python": platform.python_version(),
        "cc": cc[0] if cc else "unknown",
    }


def verdicts(results: list[dict[str, Any]], per_round: dict[str, list[float]]) -> dict[str, bool]:
    by_size = {r["rules"]: r for r in results}
    c_qns = {n: r["c"]["qns_ns"]["median"] for n, r in by_size.items()}
    py_qns = {n: r["python"]["qns_ns"]["median"] for n, r in by_size.items()}
    flat = TARGETS["flat_max_ratio_100k_to_100"]
    return {
        "c_qns_median_at_most_45ns": max(c_qns.values()) <= TARGETS["c_qns_median_max_ns"],
        "c_qns_flat": statistics.median(per_round["c_flat"]) <= flat,
        "c_linear_300x_at_10k": statistics.median(per_round["c_linear_over_qns_10k"])
        >= TARGETS["c_linear_over_qns_min_ratio_at_10k"],
        "python_qns_median_at_most_2us": max(py_qns.values())
        <= TARGETS["python_qns_median_max_ns"],
        "python_qns_flat": statistics.median(per_round["python_flat"]) <= flat,
        "c_memory_100k_under_32MiB": by_size[100_000]["c"]["qns_memory_bytes"]
        < TARGETS["c_memory_max_bytes_at_100k"],
    }


def print_table(
    results: list[dict[str, Any]],
    worst: dict[str, Any],
    per_round: dict[str, list[float]],
    met: dict[str, bool],
) -> None:
    print(
        f"\n{'rules':>8} | {'C QNS':>8} {'C linear':>11} {'ratio':>7} | "
        f"{'Py QNS':>8} {'Py linear':>11} {'ratio':>7} | {'C memory':>10}"
    )
    print("-" * 92)
    for r in [*results, worst]:
        c, py = r["c"], r["python"]
        label = "worst" if r is worst else f"{r['rules']:,}"
        cq, cl = c["qns_ns"]["median"], c["linear_ns"]["median"]
        pq, pl = py["qns_ns"]["median"], py["linear_ns"]["median"]
        print(
            f"{label:>8} | {cq:>6.1f}ns {cl:>9.0f}ns {cl / cq:>6.0f}x | "
            f"{pq:>6.0f}ns {pl:>9.0f}ns {pl / pq:>6.0f}x | {c['qns_memory_bytes'] / 2**20:>7.2f}MiB"
        )
    print(f"(worst case: {worst['rules']} rules in all 66 sub-tables, a packet matching none)")
    print("medians over the rounds; per-round medians of C QNS ranged:")
    for r in results:
        low, high = r["c"]["qns_spread_ns"]
        print(f"  {r['rules']:>8,} rules: {low:.1f}-{high:.1f} ns")
    side = ", ".join(
        f"{r['rules']:,}: {r['c']['qns_side_by_side_ns']['median']:.1f}"
        for r in results
        if "qns_side_by_side_ns" in r["c"]
    )
    print(f"C QNS side by side (ns): {side}")
    side = ", ".join(
        f"{r['rules']:,}: {r['python']['qns_side_by_side_ns']['median']:.0f}"
        for r in results
        if "qns_side_by_side_ns" in r["python"]
    )
    print(f"Python QNS side by side (ns): {side}")
    loads = ", ".join(f"{r['rules']:,}: {r['c']['load_ns']:.1f}" for r in results)
    print(f"one dependent load to a random line of a buffer the size of the C tables (ns): {loads}")
    ghz = statistics.median(r["c"]["clock_ghz"] for r in results)
    cycles = ", ".join(f"{r['rules']:,}: {r['c']['qns_ns']['median'] * ghz:.0f}" for r in results)
    print(f"core clock (a chain of dependent adds): {ghz:.2f} GHz; C QNS in cycles: {cycles}")
    for name, values in per_round.items():
        if values:
            shown = ", ".join(f"{v:.2f}" for v in values)
            print(f"{name}, per round: {shown} (median {statistics.median(values):.2f})")
    print("\ntargets:")
    for name, ok in met.items():
        print(f"  {'met    ' if ok else 'NOT MET'}  {name}")


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["rules"] for r in results]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for lang, key, style in [("C", "c", "-"), ("Python", "python", "--")]:
        ax.plot(
            sizes, [r[key]["qns_ns"]["median"] for r in results], "o" + style, label=f"{lang} QNS"
        )
        ax.plot(
            sizes,
            [r[key]["linear_ns"]["median"] for r in results],
            "s" + style,
            label=f"{lang} linear scan",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rules")
    ax.set_ylabel("median lookup time (ns)")
    ax.set_title("QNS vs linear scan (make bench-qns)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=SIZES)
    parser.add_argument(
        "--rounds", type=int, default=9, help="times every size is measured, in turn"
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if not C_BENCH.exists():
        print(f"{C_BENCH} is missing: run `make build` first", file=sys.stderr)
        return 2
    rng = random.Random(SEED)
    cases = []
    for size in args.sizes:
        rules = make_rules(size, rng)
        packets = [aimed_packet(rng.choice(rules), rng) for _ in range(PACKETS)]
        print(f"building {size:,} rules ...", flush=True)
        cases.append(prepare(f"qns-{size}", rules, packets))
    wrules, wpacket = worst_case_rules()
    worst_case = prepare("qns-worst", wrules, [wpacket])
    rounds: list[dict[int, dict[str, Any]]] = []
    for number in range(1, args.rounds + 1):
        print(f"round {number} of {args.rounds} ...", flush=True)
        by_size = {case.rules: measure_once(case) for case in cases}
        # Sizes ascending, so that the ratios are to the smallest set.
        ascending = sorted(cases, key=lambda c: c.rules)
        for rules, figures in run_c_side_by_side(ascending).items():
            by_size[rules]["c_side_by_side"] = figures
        for rules, figures in time_python_side_by_side(ascending).items():
            by_size[rules]["python_side_by_side"] = figures
        rounds.append(by_size)
    results = [median_of_rounds(c, [r[c.rules] for r in rounds]) for c in cases]
    worst = median_of_rounds(worst_case, [measure_once(worst_case)])
    per_round = ratios(rounds)
    met = verdicts(results, per_round) if set(SIZES) <= set(args.sizes) else {}
    print_table(results, worst, per_round, met)
    RESULTS.mkdir(parents=True, exist_ok=True)
    report = {
        "schema": "quicknat-bench-qns/3",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "make bench-qns",
        "machine": machine(),
        "rule_lengths": LENGTHS,
        "packets_per_size": PACKETS,
        "rounds": args.rounds,
        "results": results,
        "worst_case": worst,
        "per_round": per_round,
        "targets": TARGETS,
        "met": met,
        "raw": {"rounds": [{str(n): r for n, r in by_size.items()} for by_size in rounds]},
    }
    (RESULTS / "qns.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(results, RESULTS / "qns.png")
    print(f"\nwrote {RESULTS / 'qns.json'} and {RESULTS / 'qns.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
