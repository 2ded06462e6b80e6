#!/usr/bin/env python3
"""`make run-bmv2`: the Mininet lab with the NAT on BMv2 and the QuickNAT controller.

Builds the lab's topology (topo/lab/topology.py) as Mininet hosts around one
switch, s1, that runs simple_switch_grpc (port N = s1-ethN = the port of
topo/lab.toml), starts `quicknat controller` with topo/lab.toml, then shows
translated traffic (topo/lab/demo.py): ping, a download with curl, iperf3, a
traceroute through the NAT and the router beyond it, and the sessions the
controller installed. `--cli` then opens the Mininet CLI; otherwise the lab
stops and cleans up, also on error and on SIGINT/SIGTERM. Runs with Debian's
python3 (Mininet comes from apt); the controller runs from the project's
virtualenv.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from lab.bmv2_lab import DOWNLOAD_MB, missing, running_lab
from lab.demo import demo
from lab.nodes import QUICKNAT
from lab.processes import raise_on_signals


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cli", action="store_true", help="open the Mininet CLI after the demo")
    args = parser.parse_args()
    needs = missing()
    if needs:
        print("make run-bmv2 needs: " + "; ".join(needs), file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="quicknat-lab-"))
    raise_on_signals()
    try:
        with running_lab(workdir) as lab:
            ok = demo(lab, DOWNLOAD_MB)
            print(f"\nlogs: {workdir}\nwatch sessions: {QUICKNAT} sessions --socket {lab.socket}")
            if args.cli:
                from mininet.cli import CLI

                CLI(lab.net)
            return 0 if ok else 1
    except (RuntimeError, subprocess.SubprocessError) as exc:
        print(f"bmv2 lab: {exc}; logs in {workdir}", file=sys.stderr)
        return 1
    finally:
        (workdir / "www" / "download.bin").unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
