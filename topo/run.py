#!/usr/bin/env python3
"""`make run`: the namespace lab in offload mode (docs/offload.md), the whole design.

The lab's topology (topo/lab/topology.py) with a P4 switch as the NAT
(quicknat-swx by default, `--switch bmv2` for BMv2, `make run-offload`; the
program's 1,024-entry build), the controller as its offload manager,
and two quicknat-swpath slow-path instances behind the switch's ports 9 and
10 that take every miss (topo/lab/offload_lab.py). Shows the same translated
traffic as `make run-swpath` (topo/lab/demo.py), every instance's sessions
as the controller lists them (with their instance, and whether the switch
holds them) and the switch's routes it reads back, then a burst of short
flows from both hosts, three times what the switch's table holds, all
translated, and the offload manager's counters. `--shell` keeps the lab up until Ctrl-C.
Processes and namespaces are removed on exit, on error and on SIGINT/SIGTERM.
Needs root and `make build` (and simple_switch_grpc for `--switch bmv2`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab.demo import demo
from lab.flows import arrivals, sender, start_sink
from lab.netns_lab import DOWNLOAD_MB, shell_help
from lab.offload_lab import LAB_TABLE, SWITCHES, OffloadLab, lab_program, missing, running_lab
from lab.processes import raise_on_signals
from lab.topology import H1, H2
from quicknat.controller.status import query
from quicknat.counters import OFFLOAD

# The burst: one-packet UDP flows from each inside host (each on its own
# instance), together three times the switch's table.
BURST_FLOWS, BURST_RATE, BURST_BASE = 1536, 500.0, 20000


def show_sessions(lab: OffloadLab) -> None:
    """Every instance's sessions, as the controller lists them (each with its
    instance and whether the switch holds it)."""
    socket = lab.controller_socket
    print(f"\n=== every instance's sessions: quicknat sessions --socket {socket}")
    print(lab.quicknat("sessions", socket=socket))
    print(f"\n=== the switch's routes, read back: quicknat routes --socket {socket}")
    print(lab.quicknat("routes", socket=socket))


def burst(lab: OffloadLab) -> bool:
    """BURST_FLOWS new flows from h1 and from h2 at once: every first packet
    arrives, whether the switch holds its session or an instance does."""
    flows = 2 * BURST_FLOWS
    print(
        f"\n=== a burst of {flows} one-packet UDP flows, h1 and h2 to far at "
        f"{2 * BURST_RATE:.0f}/s: three times the switch's {LAB_TABLE} entries"
    )
    log = lab.workdir / "burst.txt"
    sink = start_sink(lab, log)
    senders = [sender(lab, h, BURST_FLOWS, BURST_RATE, BURST_BASE)(1) for h in (H1, H2)]
    for proc in senders:
        proc.wait(timeout=BURST_FLOWS / BURST_RATE + 60)
    time.sleep(1)
    lab.stop_process(sink)
    arrived = len(arrivals(log))
    counters = lab.controller_stats()["counters"]
    assert isinstance(counters, dict)
    print(f"first packets at far: {arrived} of {flows}")
    print(f"sessions in the switch: {counters['sessions_installed']} (table: {LAB_TABLE})")
    for socket in lab.sockets():
        stats = json.loads(lab.quicknat("stats", "--json", socket=socket))
        print(f"sessions in {socket.stem}: {stats['sessions']}")
    start = time.monotonic()
    rows = query(lab.controller_socket, "sessions", timeout=30)
    took = (time.monotonic() - start) * 1000
    listed = len(rows) if isinstance(rows, list) else rows
    print(f"the controller lists both instances' sessions: {listed} in {took:.0f} ms")
    print(f"left in software, table full: {counters['software_only.table_full']}")
    return arrived == flows


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shell", action="store_true", help="keep the lab up until Ctrl-C")
    parser.add_argument("--switch", choices=sorted(SWITCHES), default="swx", help="the P4 switch")
    args = parser.parse_args()
    needs = missing(args.switch)
    if needs:
        print(f"the offload lab needs {', '.join(needs)}", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="quicknat-offload-lab-"))
    raise_on_signals()
    try:
        with running_lab(workdir, program=lab_program(args.switch), switch=args.switch) as lab:
            ok = demo(lab, DOWNLOAD_MB)
            show_sessions(lab)
            ok = burst(lab) and ok
            counters = lab.controller_stats()["counters"]
            assert isinstance(counters, dict)
            print("\nThe offload manager (quicknat stats of the controller):")
            for counter in OFFLOAD:  # its counters (docs/counters.md, offload mode)
                print(f"  {counter.p4:40} {counters.get(counter.p4, 0)}")
            if not args.shell:
                return 0 if ok else 1
            shell_help(lab)
            print(
                f"The controller (every instance's sessions and counters): "
                f"quicknat sessions|stats --socket {lab.controller_socket}"
            )
            try:
                lab.procs[-1].wait()
            except SystemExit:
                return 0  # Ctrl-C is how --shell ends
            print(f"the controller exited; see {workdir / 'controller.log'}")
            return 1
    except (RuntimeError, subprocess.SubprocessError) as exc:
        print(f"offload lab: {exc}; logs in {workdir}", file=sys.stderr)
        return 1
    finally:
        (workdir / "www" / "download.bin").unlink(missing_ok=True)
        print(f"\nlab stopped, namespaces removed; logs: {workdir}")


if __name__ == "__main__":
    sys.exit(main())
