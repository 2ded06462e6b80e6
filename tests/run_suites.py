#!/usr/bin/env python3
"""Run every QuickNAT test suite and end with one summary (`make test`).

A suite whose tools are missing (p4c, simple_switch_grpc, ...) is skipped, and
the summary says why. Exit status is non-zero if any suite failed.

Two suites run at a time (`--jobs`), started in SUITES order as one ends,
but never two that set up the same lab (`Suite.lab`: the namespace lab's
fixed names), and none beside a suite that asserts a rate BMv2 holds only
with the machine to itself (`Suite.alone`); each PTF target has a namespace
of its own (ptf-tests/run.py).
Issue #33: the lab suites mostly wait on packets and timeouts, so the
machine's second vCPU is free for another suite (docs/test-time.md).
`--jobs 1` runs one after another. Each suite's output is buffered and
printed in the order of SUITES either way, so the log reads the same.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
PY = str(VENV_BIN / "python")
SYSTEM_PY = os.environ.get("PYTHON", "/usr/bin/python3")  # the Makefile's PYTHON
SUITE_TIMEOUT_S = 1800

# "12 passed, 0 failed" / "tests: 12 passed, 1 failed, 2 skipped" (our C runners)
_PLAIN = re.compile(r"^\s*(?:[\w-]+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$")
# "==== 12 passed, 1 skipped in 0.52s ====" (pytest), or without the rules (-q)
_PYTEST = re.compile(
    r"^=*\s*(\d+ (?:passed|failed|skipped|errors?|deselected|warnings?|x\w+).*) in [\d.]+s\b"
)


# The end-to-end labs' nodes: namespaces and veths of fixed names
# (topo/lab/netns_lab.py), or Mininet's in the root namespace.
NETNS_LAB = "the end-to-end lab"


@dataclass
class Suite:
    name: str
    command: list[str]
    what: str
    requires: list[str] = field(default_factory=list)  # executables that must be on PATH
    root: bool = False  # needs root (network namespaces); skipped otherwise
    cwd: Path = ROOT
    # The lab it sets up under fixed names, which no other suite may use at
    # the same time (None: its namespaces, veths, DPDK file prefixes and
    # sockets are its own, named after its target or its pid).
    lab: str | None = None
    # Runs with no suite beside it, after those before it: it asserts a rate
    # that a software switch holds only with the machine's CPUs to itself
    # (BMv2's iperf3 UDP loss: 8 % once beside a PTF suite, bound 5 %).
    alone: bool = False


SUITES = [
    Suite(
        "python-unit",
        [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "controller/tests"],
        "controller: config parser (golden files), QNS, shared QNS vectors",
    ),
    Suite(
        "nat-vectors-py",
        [
            PY,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:asyncio",
            "tests/vectors/nat",
        ],
        "the shared NAT behaviour vectors against the Python core (Nat)",
    ),
    Suite(
        "python-lint",
        ["make", "-s", "lint"],
        "ruff and mypy --strict over the Python code; size limits and include layers",
    ),
    Suite(
        "swpath-c",
        ["make", "-s", "-C", "swpath", "test"],
        "C QNS unit tests and the shared QNS vectors",
    ),
    Suite(
        "swpath-dpdk",
        ["make", "-s", "-C", "swpath/src", "test-memory"],
        "DPDK data path: unit tests, pcap end-to-end",
    ),
    Suite(
        "swpath-asan",
        ["make", "-s", "-C", "swpath/src", "SANITIZE=1", "test-memory"],
        "the same built with ASan and UBSan: a leak, an overflow or undefined "
        "behaviour (a misaligned access) fails it",
    ),
    Suite(
        "swpath-tsan",
        ["make", "-s", "-C", "swpath/src", "test-threads"],
        "ThreadSanitizer over QNS's readers beside its writer, and over two "
        "workers and the control thread (the live veth suite, a slow-path "
        "instance's, the pcap runs with two workers): a data race fails it",
        root=True,
    ),
    Suite(
        "swpath-live",
        ["make", "-s", "-C", "swpath/src", "test-live"],
        "DPDK data path: live veth, slow-path instances, restarts, the systemd unit (root)",
    ),
    Suite(
        "nat-vectors-c",
        ["make", "-s", "-C", "swpath/src", "nat-vectors"],
        "the shared NAT behaviour vectors against swpath's C core (sp_nat)",
    ),
    Suite(
        "swx-unit",
        ["make", "-s", "-C", "swpath/swx", "test"],
        "quicknat-swx: the SWX pipeline layer (tables, guard) against DPDK's pipeline; "
        "the hand-written NAT fast path's output (bench-swx-ceiling); the PNA program's "
        "fast path against the program without it",
    ),
    Suite(
        "swx-asan",
        ["make", "-s", "-C", "swpath/swx", "SANITIZE=1", "unit"],
        "quicknat-swx's table-state manager's unit tests under ASan and UBSan "
        "(DPDK's own leaks named in tests/lsan-dpdk.supp)",
    ),
    Suite(
        "swpath-fuzz",
        ["make", "-s", "-C", "swpath/fuzz", "check"],
        "libFuzzer (ASan+UBSan) over swpath's packet path (30 s) and its command "
        "language's parser and writer (15 s), from their corpora",
        requires=["clang-14"],
    ),
    Suite(
        "ptf-bmv2",
        [PY, "ptf-tests/run.py", "--target", "bmv2"],
        "PTF packet tests through simple_switch_grpc and the controller",
        requires=["simple_switch_grpc"],
        root=True,
    ),
    Suite(
        "ptf-swx",
        [PY, "ptf-tests/run.py", "--target", "swx"],
        "the same PTF scenarios through quicknat-swx (the PNA build on DPDK's SWX pipeline)",
        root=True,
    ),
    Suite(
        "ptf-swpath",
        [PY, "ptf-tests/run.py", "--target", "swpath"],
        "the same PTF scenarios through quicknat-swpath on af_packet (after make build)",
        root=True,
    ),
    Suite(
        "ptf-offload",
        [PY, "ptf-tests/run.py", "--target", "offload"],
        "the same PTF scenarios in offload mode: BMv2 caching a swpath slow-path instance",
        requires=["simple_switch_grpc"],
        root=True,
    ),
    Suite(
        "ptf-offload-swx",
        [PY, "ptf-tests/run.py", "--target", "offload-swx"],
        "the same PTF scenarios in offload mode: quicknat-swx caching a swpath slow-path instance",
        root=True,
    ),
    Suite(
        "ptf-offload-swx-learn",
        [PY, "ptf-tests/run.py", "--target", "offload-swx-learn"],
        "the same PTF scenarios with the switch learning the sessions (install = learn)",
        root=True,
    ),
    Suite(
        "lab-e2e-swpath",
        [PY, "-m", "lab.e2e", "--lab", "swpath"],
        "traceroute, iperf3 and UDP hole punching through swpath in the namespace lab",
        requires=["traceroute", "iperf3"],
        root=True,
        cwd=ROOT / "topo",  # `-m lab.e2e` finds the lab package here
        lab=NETNS_LAB,
    ),
    Suite(
        "lab-e2e-offload-swx",
        [PY, "-m", "lab.e2e", "--lab", "offload-swx"],
        "the same end-to-end tests in offload mode on quicknat-swx: the make run design",
        requires=["traceroute", "iperf3"],
        root=True,
        cwd=ROOT / "topo",
        lab=NETNS_LAB,
    ),
    Suite(
        "lab-e2e-offload-swx-learn",
        [PY, "-m", "lab.e2e", "--lab", "offload-swx-learn"],
        "the end-to-end tests with the switch learning its sessions (install = learn): "
        "no write per flow, leases, ports freed only after the switch lets go",
        requires=["traceroute", "iperf3"],
        root=True,
        cwd=ROOT / "topo",
        lab=NETNS_LAB,
    ),
    Suite(
        "p4-artifacts",
        ["make", "-s", "-C", "p4src", "check"],
        "committed BMv2 JSON and P4Info match p4src/",
        requires=["p4c-bm2-ss"],
    ),
    # Last: the two that run alone (Suite.alone) wait for everything before
    # them, so here they hold only the end of the run, not its middle
    # (with BMv2 installed, 822 s of make test against 717 replayed).
    Suite(
        "lab-e2e-offload",
        [PY, "-m", "lab.e2e", "--lab", "offload"],
        "the same end-to-end tests in offload mode: BMv2 caching a swpath slow-path instance",
        requires=["simple_switch_grpc", "traceroute", "iperf3"],
        root=True,
        cwd=ROOT / "topo",
        lab=NETNS_LAB,
        alone=True,
    ),
    Suite(
        "lab-e2e-bmv2",
        # Debian's python3: the Mininet lab needs its Mininet package.
        [SYSTEM_PY, "-m", "lab.e2e", "--lab", "bmv2"],
        "the same end-to-end tests through BMv2 and the controller in the Mininet lab",
        requires=["simple_switch_grpc", "traceroute", "iperf3"],
        root=True,
        cwd=ROOT / "topo",
        lab=NETNS_LAB,
        alone=True,
    ),
]


@dataclass
class Result:
    suite: Suite
    status: str  # ok | FAILED | skipped
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    note: str = ""
    output: str = ""  # what the suite printed, with a header: main() prints it


def count(output: str) -> tuple[int, int, int] | None:
    """Sum the test counts a suite printed, or None if it printed none."""
    totals = [0, 0, 0]
    found = False
    for line in output.splitlines():
        plain = _PLAIN.match(line)
        if plain:
            found = True
            totals[0] += int(plain[1])
            totals[1] += int(plain[2])
            totals[2] += int(plain[3] or 0)
            continue
        pytest = _PYTEST.match(line.strip())
        if pytest:
            for number, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", pytest[1]):
                found = True
                index = {"passed": 0, "failed": 1, "skipped": 2}.get(word, 1)
                totals[index] += int(number)
    return (totals[0], totals[1], totals[2]) if found else None


# Tools a variable can name outside PATH (README, "The P4 path on BMv2"): the
# suites run whichever the variable names (topo/lab/bmv2.py, p4src/Makefile).
TOOL_VARIABLES = {"simple_switch_grpc": "QUICKNAT_BMV2", "p4c-bm2-ss": "P4C_BMV2"}


def missing_tools(suite: Suite) -> list[str]:
    """The suite's tools that are neither on PATH nor where their variable says."""
    return [
        tool
        for tool in suite.requires
        if shutil.which(os.environ.get(TOOL_VARIABLES.get(tool, ""), tool)) is None
    ]


def skip_reason(suite: Suite) -> str | None:
    """Why the suite cannot run here (a missing tool, or not root), or None."""
    missing = missing_tools(suite)
    if missing:
        named = [f"${TOOL_VARIABLES[t]}" for t in missing if t in TOOL_VARIABLES]
        where = "not on PATH" + (f" ({', '.join(named)} unset)" if named else "")
        return f"{', '.join(missing)} {where}"
    if suite.root and os.geteuid() != 0:
        return "needs root"
    return None


def run(suite: Suite) -> Result:
    reason = skip_reason(suite)
    if reason is not None:
        return Result(suite, "skipped", note=reason)
    header = f"\n===== {suite.name}: {suite.what}\n"
    env = dict(os.environ, PATH=f"{VENV_BIN}:{os.environ.get('PATH', '')}")
    start = time.monotonic()
    try:
        proc = subprocess.run(
            suite.command,
            cwd=suite.cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=SUITE_TIMEOUT_S,
            check=False,
        )
        output, code = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as exc:
        output = exc.stdout if isinstance(exc.stdout, str) else ""
        code = -1
        output += f"\n(timed out after {SUITE_TIMEOUT_S} s)"
    seconds = time.monotonic() - start
    counts = count(output)
    passed, failed, skipped = counts if counts else ((1, 0, 0) if code == 0 else (0, 1, 0))
    if code != 0 and failed == 0:
        failed = 1  # a crash or a build error is a failure even if nothing was counted
    status = "ok" if code == 0 else "FAILED"
    note = "" if code == 0 else f"exit {code}"
    return Result(suite, status, passed, failed, skipped, seconds, note, header + output)


def run_all(jobs: int) -> list[Result]:
    """Every suite, `jobs` at a time: each worker that frees takes the first
    suite in SUITES order whose lab (Suite.lab) no running suite holds; a
    suite that runs alone (Suite.alone) waits for the running ones, and none
    starts beside it.
    A suite that cannot run here (skip_reason) is settled before any
    starts: it holds no worker, and one that would run alone holds nothing
    back (a skipped BMv2 lab once kept the second vCPU idle for 100 s).
    Each suite's output is printed once it and every suite before it in
    SUITES are done."""
    results: list[Result | None] = [None] * len(SUITES)
    printed = 0
    pending = []
    for i, suite in enumerate(SUITES):
        reason = skip_reason(suite)
        if reason is None:
            pending.append(i)
        else:
            results[i] = Result(suite, "skipped", note=reason)

    def flush() -> None:
        nonlocal printed
        while printed < len(SUITES):
            done = results[printed]
            if done is None:
                return
            sys.stdout.write(done.output)
            sys.stdout.flush()
            printed += 1

    running: dict[Future[Result], int] = {}
    with ThreadPoolExecutor(max_workers=jobs) as workers:
        while pending or running:
            held = {SUITES[i].lab for i in running.values()} - {None}
            for i in list(pending):
                if len(running) == jobs or any(SUITES[r].alone for r in running.values()):
                    break
                if SUITES[i].alone and running:
                    break  # it waits for what runs, and nothing after it starts
                if SUITES[i].lab in held:
                    continue
                pending.remove(i)
                running[workers.submit(run, SUITES[i])] = i
                held.add(SUITES[i].lab)
                held.discard(None)
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                results[running.pop(future)] = future.result()
            flush()
    flush()  # when every suite was skipped
    return [r for r in results if r is not None]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--jobs",
        type=int,
        default=2,
        metavar="N",
        help="suites at a time (default 2, one per vCPU of the machines it is made for; "
        "never two on one lab: Suite.lab)",
    )
    args = parser.parse_args()
    start = time.monotonic()
    results = run_all(max(1, args.jobs))
    wall = time.monotonic() - start
    print("\n===== summary")
    print(
        f"{'suite':<16} {'result':<8} {'passed':>6} {'failed':>6} {'skipped':>7} {'time':>7}  note"
    )
    for r in results:
        print(
            f"{r.suite.name:<16} {r.status:<8} {r.passed:>6} {r.failed:>6} {r.skipped:>7} "
            f"{r.seconds:>6.1f}s  {r.note}"
        )
    ok = sum(r.status == "ok" for r in results)
    bad = sum(r.status == "FAILED" for r in results)
    skipped_suites = [r for r in results if r.status == "skipped"]
    print(f"suites: {ok} ok, {bad} failed, {len(skipped_suites)} skipped")
    for r in skipped_suites:
        print(f"  skipped {r.suite.name} ({r.suite.what}): {r.note}")
    passed = sum(r.passed for r in results)
    failed = sum(r.failed for r in results)
    skipped = sum(r.skipped for r in results) + len(skipped_suites)
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    print(f"wall time: {wall:.1f} s ({max(1, args.jobs)} suites at a time)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
