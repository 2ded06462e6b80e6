#!/usr/bin/env python3
"""`make run-swpath`: the network-namespace lab with the NAT on quicknat-swpath (DPDK).

Builds the lab's topology (topo/lab/topology.py) out of network namespaces
(qn-lab-NODE) and veths, starts quicknat-swpath with topo/lab.toml in the
qn-lab-nat namespace on net_af_xdp devices bound to its veth ends (net_af_packet
where AF_XDP does not work, with one line saying why), then
shows translated traffic (topo/lab/demo.py): ping, a download with curl, iperf3
TCP for 3 s, a traceroute through the NAT and the router beyond it, and the
session table and counters swpath keeps. `--shell` then keeps the lab up until
Ctrl-C. Processes and namespaces are removed on exit, on error and on
SIGINT/SIGTERM. Needs root and `make build`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from lab.demo import demo
from lab.netns_lab import DOWNLOAD_MB, missing, running_lab, shell_help
from lab.processes import raise_on_signals


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shell", action="store_true", help="keep the lab up until Ctrl-C")
    args = parser.parse_args()
    reason = missing()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="quicknat-netns-lab-"))
    raise_on_signals()
    try:
        with running_lab(workdir) as lab:
            ok = demo(lab, DOWNLOAD_MB)
            if not args.shell:
                return 0 if ok else 1
            shell_help(lab)
            assert lab.swpath is not None
            try:
                code = lab.swpath.wait()
            except SystemExit:
                return 0  # Ctrl-C is how --shell ends
            print(f"quicknat-swpath exited with {code}; see {workdir / 'swpath.log'}")
            return 1
    except (RuntimeError, subprocess.SubprocessError) as exc:
        print(f"netns lab: {exc}; logs in {workdir}", file=sys.stderr)
        return 1
    finally:
        (workdir / "www" / "download.bin").unlink(missing_ok=True)
        print(f"\nlab stopped, namespaces removed; logs: {workdir}")


if __name__ == "__main__":
    sys.exit(main())
