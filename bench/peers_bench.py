#!/usr/bin/env python3
"""`make bench-peers`: QNS against DPDK's own classifier, rte_acl.

The rule sets and packets of `make bench-qns` (100 to 100,000 rules, prefix +
protocol + port, 3/4 SNAT and 1/4 DNAT; 65,536 packets aimed at random rules),
given to swpath/build/app/bench_acl, which checks that QNS and rte_acl give
every expected answer and then times, side by side in one run: QNS one lookup
at a time, rte_acl one packet per call and in bursts of 64, rte_acl's build of
the whole set, one rule change (rte_acl: add and rebuild, the only way it
changes; QNS: add then remove in place). Prints a table, writes
bench/results/peers.json and bench/results/peers.png.

Targets (issue #16): QNS lookup within 1.5x of rte_acl's burst lookup at every
size; one rule change at least 1,000x cheaper than an rte_acl rebuild at 10,000
rules and above. New flows against rules with iptables and nftables is
bench/rules_vs_flows.py (the same target runs it); the AF_XDP comparison is
not here yet (docs/benchmarks.md says so).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from qns_bench import PACKETS, RESULTS, ROOT, aimed_packet, machine, make_rules, prepare

BENCH_ACL = ROOT / "swpath" / "build" / "app" / "bench_acl"
SIZES = [100, 1_000, 10_000, 100_000]
SEED = 7
TARGETS = {"qns_over_acl_burst_max": 1.5, "change_cheaper_min_at_10k": 1000.0}


def main() -> int:
    if not BENCH_ACL.exists():
        print(f"{BENCH_ACL} is missing: run make build", file=sys.stderr)
        return 2
    rng = random.Random(SEED)
    paths = []
    for size in SIZES:
        rules = make_rules(size, rng)
        packets = [aimed_packet(rng.choice(rules), rng) for _ in range(PACKETS)]
        paths.append(str(prepare(f"peers-{size}", rules, packets).vector_path))
    proc = subprocess.run([str(BENCH_ACL), *paths], capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        print(f"bench_acl failed:\n{proc.stderr}{proc.stdout}", file=sys.stderr)
        return 1
    sizes: list[dict[str, Any]] = json.loads(proc.stdout)["sizes"]
    for s in sizes:
        s["qns_over_acl_burst"] = s["qns_ns"] / s["acl_burst_ns"]
        s["change_cheaper"] = s["acl_change_ms"] * 1e6 / s["qns_change_ns"]
    verdicts = {
        "qns_within_1.5x_of_acl_burst": all(
            s["qns_over_acl_burst"] <= TARGETS["qns_over_acl_burst_max"] for s in sizes
        ),
        "change_1000x_cheaper_from_10k": all(
            s["change_cheaper"] >= TARGETS["change_cheaper_min_at_10k"]
            for s in sizes
            if s["rules"] >= 10_000
        ),
    }
    print(
        f"{'rules':>8} {'QNS ns':>8} {'acl 1 ns':>9} {'acl 64 ns':>10} {'QNS/acl64':>10} "
        f"{'acl build ms':>13} {'acl change ms':>14} {'QNS change ns':>14} {'cheaper':>9}"
    )
    for s in sizes:
        print(
            f"{s['rules']:>8} {s['qns_ns']:>8.1f} {s['acl_single_ns']:>9.1f} "
            f"{s['acl_burst_ns']:>10.1f} {s['qns_over_acl_burst']:>10.2f} "
            f"{s['acl_build_ms']:>13.2f} {s['acl_change_ms']:>14.2f} "
            f"{s['qns_change_ns']:>14.0f} {s['change_cheaper']:>8.0f}x"
        )
    for name, ok in verdicts.items():
        print(f"{name}: {'met' if ok else 'NOT met'}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = {
        "benchmark": "qns_vs_rte_acl",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": "make bench-peers",
        "targets": TARGETS,
        "verdicts": verdicts,
        "sizes": sizes,
    }
    (RESULTS / "peers.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(sizes, RESULTS / "peers.png")
    return 0


def plot(sizes: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rules = [s["rules"] for s in sizes]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.plot(rules, [s["qns_ns"] for s in sizes], "o-", label="QNS (one lookup)")
    ax.plot(rules, [s["acl_single_ns"] for s in sizes], "s--", label="rte_acl (1 per call)")
    ax.plot(rules, [s["acl_burst_ns"] for s in sizes], "^--", label="rte_acl (bursts of 64)")
    ax.set_xscale("log")
    ax.set_xlabel("rules")
    ax.set_ylabel("ns per lookup (median)")
    ax.set_title("QNS and DPDK's rte_acl, same rules and packets")
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
