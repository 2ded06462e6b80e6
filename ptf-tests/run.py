#!/usr/bin/env python3
"""Run the PTF suite against one data path: `ptf-tests/run.py --target TARGET`.

Creates the namespace topology (topo/lab/netns.py), starts the switch when the
target needs one (BMv2 or quicknat-swx, alone or, in offload mode, in front of
a swpath instance on a slow-path link; swpath is started by each test), runs
PTF inside the
namespace with configs/ptf.toml, and always cleans up: processes
are stopped and the namespace deleted even when a test or the run fails.
The last line is `N passed, M failed, K skipped` for `make test`'s summary.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from lab import bmv2, swx
from lab.netns import NAMESPACE, Topology, in_namespace
from lab.processes import start, start_dpdk, stop, stop_naming, stop_pid_file, wait_for_tcp
from lab.swpath import SWPATH

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

VENV = REPO / ".venv" / "bin"
GRPC_PORT = 9559
SWITCH_PID = "switch.pid"
EXIT_SKIPPED = 3
DURATIONS = "durations.tsv"  # tests/base.py's DURATIONS
LATE = "late.tsv"  # tests/base.py's LATE
NAT_LOG = "nat-starts.tsv"  # harness/shared_nat.py's NAT_LOG
# The switch each target runs (none: swpath alone).
SWITCH = {
    "bmv2": "bmv2",
    "offload": "bmv2",
    "swx": "swx",
    "offload-swx": "swx",
    "offload-swx-learn": "swx",
}
TARGETS = ("bmv2", "swx", "swpath", "offload", "offload-swx", "offload-swx-learn")


def requirements(target: str) -> str | None:
    """Why the target cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespace)"
    switch = SWITCH.get(target)
    if switch == "bmv2" and shutil.which(bmv2.switch_binary()) is None:
        return "simple_switch_grpc not on PATH (nor where $QUICKNAT_BMV2 says)"
    if switch == "swx" and not swx.SWX.exists():
        return f"{swx.SWX.relative_to(REPO)} not built (make build)"
    if target in ("swpath", "offload", "offload-swx", "offload-swx-learn") and not SWPATH.exists():
        return f"{SWPATH.relative_to(REPO)} not built (make build)"
    return None


def switch_command(target: str, topo: Topology, workdir: Path) -> list[str]:
    starter = bmv2 if SWITCH[target] == "bmv2" else swx
    return starter.switch_command(topo.switch_ports(), f"127.0.0.1:{GRPC_PORT}", workdir)


def topology(target: str) -> Topology:
    """The target's own namespace (`qn-ptf-TARGET`): runs on different
    targets may run at once (tests/run_suites.py), and each deletes only its
    own."""
    return Topology(namespace=f"{NAMESPACE}-{target}", slow_path=target.startswith("offload"))


def summarize(output: str) -> tuple[int, int, int]:
    ran = re.search(r"^Ran (\d+) tests?", output, re.M)
    total = int(ran[1]) if ran else 0
    failed = sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)", output))
    skipped = sum(int(n) for n in re.findall(r"skipped=(\d+)", output))
    if ran is None:
        failed = max(failed, 1)
    return max(0, total - failed - skipped), failed, skipped


def slowest(durations: Path, shown: int = 10) -> str:
    """The tests' total seconds and the slowest of them, from the file
    tests/base.py writes (one "name<TAB>seconds" line a test)."""
    if not durations.exists():
        return f"test durations: none recorded ({durations.name} missing)"
    rows, transit, nothing = [], 0.0, 0.0
    for line in durations.read_text().splitlines():
        name, seconds, ms, waited = line.split("\t")
        rows.append((float(seconds), name.removesuffix(".runTest")))
        transit, nothing = max(transit, float(ms)), nothing + float(waited)
    rows.sort(reverse=True)
    lines = [f"test durations: {len(rows)} tests, {sum(s for s, _ in rows):.1f} s ({durations})"]
    lines += [f"  {seconds:6.2f} s  {name}" for seconds, name in rows[:shown]]
    lines.append(f"longest transit of a received packet: {transit:.1f} ms")
    lines.append(f"waited for packets that did not come: {nothing:.1f} s")
    return "\n".join(lines)


def late_packets(log: Path) -> str:
    """Packets that reached the ports after their test ended (tests/base.py
    writes the log): after a test that waited for nothing, such a packet
    may be one its negative wait should have seen."""
    rows = [line.split("\t") for line in log.read_text().splitlines()] if log.exists() else []
    if not rows:
        return "packets that came after their test ended: none"
    waited = [(name, n) for name, n, w in rows if float(w) > 0]
    lines = [
        f"packets that came after their test ended: {sum(int(n) for _, n, _ in rows)}, "
        f"after {len(rows)} test{'s' if len(rows) > 1 else ''}; after one that waited "
        "for nothing:" + ("" if waited else " none")
    ]
    lines += [f"  {int(n):4d}  {name.removesuffix('.runTest')}" for name, n in waited]
    return "\n".join(lines)


def nat_starts(log: Path) -> str:
    """How many tests ran on a NAT shared with the test before, and why the
    others started their own (harness/shared_nat.py writes the log)."""
    if not log.exists():
        return f"NAT starts: none recorded ({log.name} missing)"
    decisions = [line.split("\t", 1)[1] for line in log.read_text().splitlines()]
    shared = decisions.count("shared")
    why = Counter(d.removeprefix("fresh: ") for d in decisions if d != "shared")
    lines = [f"NAT: {len(decisions) - shared} started, {shared} shared with the test before"]
    lines += [f"  {n:3d} fresh: {reason}" for reason, n in why.most_common()]
    return "\n".join(lines)


def inside(args: argparse.Namespace) -> int:
    """The part that runs inside the namespace."""
    workdir = Path(args.workdir)
    topo = topology(args.target)
    switch = None
    for log in (DURATIONS, NAT_LOG, LATE):
        (workdir / log).unlink(missing_ok=True)
    try:
        if args.target in SWITCH:
            command = switch_command(args.target, topo, workdir)

            def start_once() -> subprocess.Popen[bytes]:
                proc = start(command, workdir / "switch.log")
                try:
                    wait_for_tcp("127.0.0.1", GRPC_PORT, 30, proc)
                except RuntimeError:
                    stop(proc)
                    raise
                return proc

            switch = start_dpdk(start_once, workdir / "switch.log")
            # Tests that restart the switch replace this pid (harness/targets.py).
            (workdir / SWITCH_PID).write_text(str(switch.pid))
        params = ";".join(
            [
                f"target='{args.target}'",
                f"grpc_addr='127.0.0.1:{GRPC_PORT}'",
                f"config='{HERE / 'configs' / 'ptf.toml'}'",
                f"workdir='{workdir}'",
                f"fuzz_packets={args.fuzz_packets}",
                f"fuzz_seed={args.fuzz_seed}",
            ]
        )
        interfaces = [arg for i in range(topo.ports) for arg in ("-i", f"{i}@{topo.ptf_end(i)}")]
        proc = subprocess.run(
            [
                str(VENV / "ptf"),
                "--test-dir",
                str(HERE / "tests"),
                *interfaces,
                "--test-params",
                params,
                "--log-file",
                str(workdir / "ptf.log"),
                *(
                    ["--test-order", "rand", "--test-order-seed", str(args.shuffle)]
                    if args.shuffle
                    else []
                ),
                *args.tests,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=1800,
            cwd=workdir,
            check=False,
        )
        print(proc.stdout)
        print(slowest(workdir / DURATIONS))
        print(late_packets(workdir / LATE))
        print(nat_starts(workdir / NAT_LOG))
        passed, failed, skipped = summarize(proc.stdout)
        if proc.returncode != 0 and failed == 0:
            failed = 1
        print(f"ptf-{args.target}: {passed} passed, {failed} failed, {skipped} skipped")
        return 1 if failed else 0
    finally:
        stop(switch)
        stop_pid_file(workdir / SWITCH_PID)
        left = stop_naming(workdir)  # a failed run's shared NAT (PTF's os._exit)
        if left:
            print(f"stopped what the run left running: {', '.join(left)}")
        swx.remove_runtime_dir(workdir)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=TARGETS, required=True)
    parser.add_argument("--workdir", help="logs go here (default: a new temporary directory)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--fuzz-packets", type=int, default=2000, help="packets the fuzz scenario sends"
    )
    parser.add_argument("--fuzz-seed", type=int, default=1, help="the fuzz scenario's seed")
    parser.add_argument(
        "--shuffle",
        type=int,
        metavar="SEED",
        help="run the tests in a random order from SEED (a test's isolation is no matter of order)",
    )
    parser.add_argument("tests", nargs="*", help="PTF test names or groups")
    args = parser.parse_args()
    if args.inside:
        return inside(args)
    reason = requirements(args.target)
    if reason:
        print(f"ptf-{args.target}: skipped: {reason}")
        return EXIT_SKIPPED
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix=f"quicknat-ptf-{args.target}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    topo = topology(args.target)
    topo.create()
    try:
        inner = [
            sys.executable,
            __file__,
            "--inside",
            "--target",
            args.target,
            "--workdir",
            str(workdir),
            "--fuzz-packets",
            str(args.fuzz_packets),
            "--fuzz-seed",
            str(args.fuzz_seed),
            *(["--shuffle", str(args.shuffle)] if args.shuffle else []),
            *args.tests,
        ]
        code = subprocess.run(
            in_namespace(topo.namespace, *inner), timeout=2400, check=False
        ).returncode
    finally:
        topo.delete()
    if code == 0 and args.workdir is None:
        # a run that passed leaves nothing in /tmp; a failed one its logs
        shutil.rmtree(workdir, ignore_errors=True)
        print("logs: removed, every test passed (--workdir DIR keeps them)")
    else:
        print(f"logs: {workdir}")
    return code


if __name__ == "__main__":
    sys.exit(main())
