#!/usr/bin/env python3
"""`make bench-swx-ceiling`: what DPDK's SWX pipeline can forward on this
machine, measured, for issue #33's target (5 Mpps established on one
pipeline thread, and 25 % of swpath's fast path in the same run).

Every program runs through one harness (swpath/swx/bench/harness.c): 64k
64-byte frames replayed by DPDK's `source` port, each copied into a fresh
mbuf as it enters, one pipeline thread, `sink` ports that free:

- DPDK's own example programs (swpath/swx/bench/dpdk-examples): l2fwd
  (no header touched), l2fwd_macswp (one header, MACs swapped), vxlan (an
  exact-match table of 64k entries on the destination MAC, 4 headers
  added): the pipeline's ceiling with programs of a few instructions;
- nat_fastpath: QuickNAT's established in2out translation written by hand
  in the spec language (swpath/swx/bench/nat_fastpath.spec, 64k sessions),
  its output checked byte for byte first (bench/swx_fastpath.py);
- quicknat: the P4 program's PNA build (bench_swx, as `make bench-swx`);
- swpath: swpath's fast path on one worker (bench_swpath established), the
  same flows.

Rounds rotate the order; each ratio is taken within its round. The
instructions a packet executes in the generated code come from DPDK's trace
build (TRACE_LEVEL=1, swpath/swx/bench/cc-trace.sh): the lines it prints a
packet (instructions()). Not in that count: jumps (codegen compiles them to
C branches) and what the pipeline library runs itself, uncompiled (rx, tx,
table lookups where they stand alone: l2fwd prints nothing). Writes
bench/results/swx_ceiling.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import swx_fastpath as fp

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "swpath" / "swx" / "bench"
BENCH_SPEC = ROOT / "swpath" / "build" / "swx" / "bench_swx_spec"
BENCH_SWX = ROOT / "swpath" / "build" / "swx" / "bench_swx"
BENCH_SWPATH = ROOT / "swpath" / "build" / "app" / "bench_swpath"
QUICKNAT_SPEC = ROOT / "p4src" / "build" / "pna" / "quicknat.spec"
CC_TRACE = BENCH_DIR / "cc-trace.sh"
RESULTS = ROOT / "bench" / "results"
SESSIONS = 65536
TRACE_PACKETS = 1024
TARGETS = {"forwarding_mpps_min": 5.0, "forwarding_ratio_to_swpath_min": 0.25}


@dataclass(frozen=True)
class Program:
    """A spec run by bench_swx_spec: its frames, and its one table's
    entries (None: no table)."""

    spec: Path
    what: str
    frames: Callable[[Path], None]
    table: str | None = None
    entries: Callable[[Path], int] | None = None
    cpu_ring: bool = False  # an empty ring on port in 1, polled as the P4 program's CPU port


def udp_frames(path: Path) -> None:
    fp.write_established_frames(path, [fp.flow(i) for i in range(SESSIONS)])


def fastpath_entries(path: Path) -> int:
    return fp.write_entries(path, (fp.flow(i) for i in range(SESSIONS)))


VXLAN_MAC = 0xAABBCCDD0000


def vxlan_frames(path: Path) -> None:
    """bench flows' frames, each to its own destination MAC: 64k keys."""
    frames = []
    base = bytes(fp.packet(fp.flow(0)))
    for i in range(SESSIONS):
        frames.append((VXLAN_MAC + i).to_bytes(6, "big") + base[6:])
    fp.write_pcap(path, frames)


def vxlan_entries(path: Path) -> int:
    """vxlan_table.txt's form (DPDK's example), one entry a MAC, all out of
    port 1; the outer header checksum with its 50 bytes, as the spec says."""
    lines = []
    for i in range(SESSIONS):
        src, dst = 0xC0C10000 + i, 0xD0D10000 + i
        outer = bytes.fromhex("4500003200000000" + "4011" + "0000") + src.to_bytes(4, "big")
        cksum = fp.checksum(outer + dst.to_bytes(4, "big"))
        lines.append(
            f"match 0x{VXLAN_MAC + i:012x} action vxlan_encap "
            f"ethernet_dst_addr 0x{0xA0A1A2A30000 + i:012x} "
            f"ethernet_src_addr 0x{0xB0B1B2B30000 + i:012x} ethernet_ethertype 0x0800 "
            "ipv4_ver_ihl 0x45 ipv4_diffserv 0 ipv4_total_len 50 ipv4_identification 0 "
            f"ipv4_flags_offset 0 ipv4_ttl 64 ipv4_protocol 17 ipv4_hdr_checksum 0x{cksum:04x} "
            f"ipv4_src_addr 0x{src:08x} ipv4_dst_addr 0x{dst:08x} "
            f"udp_src_port 0x{0xE000 + i % 0x2000:04x} udp_dst_port 4789 udp_length 30 "
            f"udp_checksum 0 vxlan_flags 0 vxlan_reserved 0 vxlan_vni {i} vxlan_reserved2 0 "
            "port_out 1"
        )
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


EXAMPLES = BENCH_DIR / "dpdk-examples"
PROGRAMS = {
    "l2fwd": Program(EXAMPLES / "l2fwd.spec", "DPDK example: rx, an empty table, tx", udp_frames),
    "l2fwd_macswp": Program(
        EXAMPLES / "l2fwd_macswp.spec", "DPDK example: Ethernet parsed, MACs swapped", udp_frames
    ),
    "vxlan": Program(
        EXAMPLES / "vxlan.spec",
        "DPDK example: exact table of 64k MACs, VXLAN encapsulation (4 headers)",
        vxlan_frames,
        "vxlan_table",
        vxlan_entries,
    ),
    "nat_fastpath": Program(
        fp.SPEC,
        "QuickNAT's established in2out fast path by hand (64k sessions)",
        udp_frames,
        fp.TABLE,
        fastpath_entries,
    ),
    "nat_fastpath_cpu_port": Program(
        fp.SPEC,
        "the same, the pipeline also polling an empty CPU port ring (as bench_swx)",
        udp_frames,
        fp.TABLE,
        fastpath_entries,
        cpu_ring=True,
    ),
}


def run_json(args: list[str]) -> tuple[dict[str, Any], str]:
    out = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {out.returncode}: {out.stderr.strip()}")
    line = next(ln for ln in reversed(out.stdout.splitlines()) if ln.startswith("{"))
    result: dict[str, Any] = json.loads(line)
    return result, out.stdout


class Inputs:
    """Each program's frames and entries, written once into a directory,
    and its compiled pipeline cached there."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.entries: dict[str, int] = {}
        for name, prog in PROGRAMS.items():
            prog.frames(self.frames(name))
            if prog.entries is not None:
                self.entries[name] = prog.entries(self.table_file(name))

    def frames(self, name: str) -> Path:
        return self.work / f"{name}.pcap"

    def table_file(self, name: str) -> Path:
        return self.work / f"{name}.entries"

    def args(self, name: str, cache: str = "cache") -> list[str]:
        prog = PROGRAMS[name]
        args = [str(BENCH_SPEC), "-C", str(self.work / cache)]
        if prog.table is not None:
            args += ["-t", prog.table, str(self.table_file(name))]
        return [*args, "-R"] if prog.cpu_ring else args


def trace_lines(inputs: Inputs, name: str, packets: int) -> int:
    args = [*inputs.args(name, "cache-trace"), "-c", str(CC_TRACE), "-n", str(packets)]
    _, stdout = run_json([*args, str(PROGRAMS[name].spec), str(inputs.frames(name)), "0"])
    return sum(1 for ln in stdout.splitlines() if ln.startswith("[Thread") and "fused" not in ln)


def instructions(inputs: Inputs, name: str) -> float:
    """Trace lines a packet (DPDK's trace build): the difference between
    runs of TRACE_PACKETS and 2 x TRACE_PACKETS packets, over
    TRACE_PACKETS, so the packets the pipeline's threads have in flight
    when a run stops (up to 16, part traced) cancel out."""
    one = trace_lines(inputs, name, TRACE_PACKETS)
    return round((trace_lines(inputs, name, 2 * TRACE_PACKETS) - one) / TRACE_PACKETS, 1)


def check_fastpath(work: Path) -> dict[str, Any]:
    """The fast path's output, byte for byte (swx_fastpath.differences):
    2,048 UDP and 2,048 TCP sessions' packets, and packets it must hand on
    unchanged; raises when any frame is wrong."""
    sent = fp.check_packets(2048)
    flows = [f for f, _ in sent if f is not None]
    fp.write_entries(work / "check.entries", flows)
    fp.write_scapy_pcap(work / "check.pcap", [p for _, p in sent])
    out = work / "check-out"
    out.mkdir()
    args = [str(BENCH_SPEC), "-C", str(work / "cache"), "-o", str(out), "-n", str(len(sent))]
    args += ["-t", fp.TABLE, str(work / "check.entries"), str(fp.SPEC), str(work / "check.pcap")]
    result, _ = run_json([*args, "0"])
    problems = fp.differences(sent, out)
    if problems:
        raise RuntimeError("nat_fastpath's output is wrong:\n" + "\n".join(problems[:10]))
    return {"frames": len(sent), "translated": result["out"][fp.PORT_OUT], "wrong": 0}


def one_round(inputs: Inputs, order: list[str], seconds: float) -> dict[str, Any]:
    got: dict[str, Any] = {}
    for name in order:
        if name == "quicknat":
            r, _ = run_json([str(BENCH_SWX), str(QUICKNAT_SPEC), str(SESSIONS), str(seconds)])
            got[name] = {"mpps": r["mpps"], "dropped": r["dropped"]}
        elif name == "swpath":
            args = [str(BENCH_SWPATH), "established", str(SESSIONS), str(seconds), "1"]
            r, _ = run_json(args)
            got[name] = {"mpps": r["established_pps"] / 1e6}
        else:
            prog = PROGRAMS[name]
            args = [*inputs.args(name), str(prog.spec), str(inputs.frames(name)), str(seconds)]
            r, _ = run_json(args)
            got[name] = {"mpps": r["mpps"], "out": r["out"], "dropped": r["dropped"]}
            if name.startswith("nat_fastpath") and r["out"][fp.PORT_FULL]:
                raise RuntimeError(f"nat_fastpath handed on established packets: {r}")
    return got


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    names = list(runs[0])
    mpps = {n: round(statistics.median(r[n]["mpps"] for r in runs), 3) for n in names}

    def ratio(a: str, b: str) -> float:
        return round(statistics.median(r[a]["mpps"] / r[b]["mpps"] for r in runs), 4)

    return {
        "mpps": mpps,
        "ratio_to_swpath": {n: ratio(n, "swpath") for n in names if n != "swpath"},
        "nat_fastpath_to_quicknat": ratio("nat_fastpath", "quicknat"),
        "nat_fastpath_cpu_port_to_quicknat": ratio("nat_fastpath_cpu_port", "quicknat"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0, help="each forwarding run")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench-swx-ceiling needs root (DPDK)", file=sys.stderr)
        return 2
    for binary in (BENCH_SPEC, BENCH_SWX, BENCH_SWPATH, QUICKNAT_SPEC):
        if not binary.exists():
            print(f"{binary.relative_to(ROOT)} missing: make build", file=sys.stderr)
            return 2
    order = [*PROGRAMS, "quicknat", "swpath"]
    with tempfile.TemporaryDirectory(prefix="qn-swx-ceiling-") as tmp:
        work = Path(tmp)
        inputs = Inputs(work)
        checked = check_fastpath(work)
        print(f"nat_fastpath output checked: {checked}", flush=True)
        per_packet = {name: instructions(inputs, name) for name in PROGRAMS}
        print(f"instructions a packet (trace build): {per_packet}", flush=True)
        runs = []
        for r in range(args.rounds):
            shift = r % len(order)
            runs.append(one_round(inputs, order[shift:] + order[:shift], args.seconds))
            print(f"round {r + 1}: { {n: round(v['mpps'], 3) for n, v in runs[-1].items()} }")
    summary = summarize(runs)
    result = {
        "command": "make bench-swx-ceiling",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "sessions": SESSIONS,
        "seconds": args.seconds,
        "programs": {n: p.what for n, p in PROGRAMS.items()}
        | {"quicknat": "the P4 program's PNA build (bench_swx)", "swpath": "bench_swpath"},
        "entries": inputs.entries,
        "instructions_per_packet": per_packet,
        "nat_fastpath_check": checked,
        "rounds": runs,
        **summary,
        "targets": TARGETS,
        "met": {
            name: {
                "forwarding_mpps_min": summary["mpps"][name] >= TARGETS["forwarding_mpps_min"],
                "forwarding_ratio_to_swpath_min": summary["ratio_to_swpath"][name]
                >= TARGETS["forwarding_ratio_to_swpath_min"],
            }
            for name in ("nat_fastpath", "nat_fastpath_cpu_port", "quicknat")
        },
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "swx_ceiling.json").write_text(json.dumps(result, indent=2) + "\n")
    for name in order:
        ratio = summary["ratio_to_swpath"].get(name)
        print(
            f"{name:22} {summary['mpps'][name]:8.3f} Mpps"
            + (f"  {ratio:.1%} of swpath" if ratio is not None else "")
            + (f"  {per_packet[name]} instructions a packet" if name in per_packet else "")
        )
    print(f"results: {(RESULTS / 'swx_ceiling.json').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
