#!/usr/bin/env python3
"""swpath/src's layers keep their order (docs/swpath.md, "Source tour"):
a file includes only headers of its own layer or of a lower one, and the NAT
core includes no DPDK header. Prints what breaks the rule, then
"N passed, M failed" (the two rules) as swpath's other test programs do.

    util, contract  <  core  <  dataplane  <  persist  <  control
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
RANK = {"util": 0, "contract": 0, "core": 1, "dataplane": 2, "persist": 3, "control": 4}
INCLUDE = re.compile(r'^#include\s+([<"])([^>"]+)[>"]', re.M)


def includes(path: Path) -> list[tuple[str, str]]:
    return INCLUDE.findall(path.read_text())


def main() -> int:
    upward, dpdk = [], []
    for path in sorted(SRC.glob("*/*.[ch]")):
        layer = path.parent.name
        for kind, name in includes(path):
            target = name.split("/")[0]
            if kind == '"' and target in RANK and RANK[target] > RANK[layer]:
                upward.append(f"{path.relative_to(SRC)} includes {name}")
            if layer == "core" and kind == "<" and name.startswith(("rte_", "dpdk")):
                dpdk.append(f"{path.relative_to(SRC)} includes <{name}>")
    for line in upward + dpdk:
        print(line)
    failed = bool(upward) + bool(dpdk)
    print(f"{2 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
