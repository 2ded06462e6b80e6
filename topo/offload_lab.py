#!/usr/bin/env python3
"""`make run-offload`: the namespace lab in offload mode (docs/offload.md).

The lab's topology (topo/lab/topology.py) with BMv2 as the NAT, the controller
as its offload manager, and a quicknat-swpath slow-path instance behind the
switch's port 9 that takes every miss (topo/lab/offload_lab.py). Shows the
same translated traffic as `make run` (topo/lab/demo.py), then what the switch
holds and the instance did. `--shell` keeps the lab up until Ctrl-C.
Processes and namespaces are removed on exit, on error and on SIGINT/SIGTERM.
Needs root, simple_switch_grpc (BMv2, as for `make run-bmv2`: the README's
P4 path) and `make build`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from lab.demo import demo
from lab.netns_lab import DOWNLOAD_MB, shell_help
from lab.offload_lab import missing, running_lab
from lab.processes import raise_on_signals


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shell", action="store_true", help="keep the lab up until Ctrl-C")
    args = parser.parse_args()
    needs = missing()
    if needs:
        print(f"the offload lab needs {', '.join(needs)}", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="quicknat-offload-lab-"))
    raise_on_signals()
    try:
        with running_lab(workdir) as lab:
            ok = demo(lab, DOWNLOAD_MB)
            counters = lab.controller_stats()["counters"]
            assert isinstance(counters, dict)
            print("\nThe offload manager (quicknat stats of the controller):")
            for name in sorted(k for k in counters if k.startswith("offload.")):
                print(f"  {name:40} {counters[name]}")
            if not args.shell:
                return 0 if ok else 1
            shell_help(lab)
            print(f"The controller: quicknat stats --socket {lab.controller_socket}")
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
