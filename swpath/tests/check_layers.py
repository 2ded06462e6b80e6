#!/usr/bin/env python3
"""swpath's layers keep their order (docs/swpath.md, "Source tour"), and
quicknat-swx's too (docs/p4-targets.md). Prints what breaks a rule, then
"N passed, M failed" (one per rule) as swpath's other test programs do.

swpath/src: a file includes only headers of its own layer or of a lower
one, and the NAT core includes no DPDK header:

    util, contract  <  core  <  dataplane  <  persist  <  control

swpath/swx (quicknat-swx) stands on swpath/src (its contract/ constants) and
nothing in swpath/src includes it; within it

    src (the SWX pipeline, C)  <  p4rt (the P4Runtime service, C++)  <  main.cc, bench/

No circle among the includes of either, a source file and its header
counted as one module (a header that, through others, includes itself
compiles only by its guard's luck; x.c that includes y.h, which includes
x.h, makes x and y one thing in two files: neither can be read, tested or
moved without the other).

    check_layers.py [--root SWPATH_DIR]   (tests: a copy of the tree)
"""

from __future__ import annotations

import argparse
import re
import sys
from itertools import pairwise
from pathlib import Path

SWPATH = Path(__file__).resolve().parents[1]
RANK = {"util": 0, "contract": 0, "core": 1, "dataplane": 2, "persist": 3, "control": 4}
# quicknat-swx's layers, by directory under swpath/swx ("" is main.cc's)
SWX_RANK = {"src": 0, "p4rt": 1, "": 2, "bench": 2}
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)
SOURCES = ("*.c", "*.h", "*.cc", "*.hh", "*.cpp", "*.hpp")


def includes(path: Path) -> list[tuple[str, str]]:
    return INCLUDE.findall(path.read_text(errors="replace"))


def files_under(directory: Path) -> list[Path]:
    found = [p for pattern in SOURCES for p in directory.rglob(pattern)]
    return sorted(p for p in found if "build" not in p.relative_to(directory).parts)


class Tree:
    """swpath/src's and swpath/swx's files and what each includes, resolved
    as their Makefiles' include paths resolve it (a header of neither, e.g.
    generated protobuf code or the system's, resolves to nothing)."""

    def __init__(self, root: Path) -> None:
        self.src, self.swx = root / "src", root / "swx"
        # swpath/src/Makefile's -I. -I../qns -I../tests; swpath/swx/Makefile's
        # -Isrc -I. -I../src
        self.src_paths = [self.src, root / "qns", root / "tests"]
        self.swx_paths = [self.swx / "src", self.swx, self.src]
        self.files = files_under(self.src) + files_under(self.swx)

    def in_swx(self, path: Path) -> bool:
        return path.is_relative_to(self.swx)

    def resolve(self, path: Path, name: str, paths: list[Path] | None = None) -> Path | None:
        if paths is None:
            paths = self.swx_paths if self.in_swx(path) else self.src_paths
        for directory in [path.parent, *paths]:
            candidate = (directory / name).resolve()
            if candidate.is_file():
                return candidate
        return None

    def edges(self, path: Path) -> list[tuple[str, Path]]:
        """(the include as written, the file it names) for its local includes."""
        out = []
        for kind, name in includes(path):
            target = self.resolve(path, name) if kind == '"' else None
            if target is not None:
                out.append((name, target))
        return out

    def swx_layer(self, path: Path) -> int:
        if not self.in_swx(path):
            return -1  # swpath/src: below every layer of swx
        parts = path.relative_to(self.swx).parts
        return SWX_RANK.get(parts[0] if len(parts) > 1 else "", max(SWX_RANK.values()))


def src_upward(tree: Tree) -> list[str]:
    broken = []
    for path in files_under(tree.src):
        layer = path.relative_to(tree.src).parts[0]
        for kind, name in includes(path):
            target = name.split("/")[0]
            if kind == '"' and layer in RANK and target in RANK and RANK[target] > RANK[layer]:
                broken.append(f"{path.relative_to(tree.src)} includes {name}")
    return broken


def core_dpdk(tree: Tree) -> list[str]:
    return [
        f"{path.relative_to(tree.src)} includes <{name}>"
        for path in files_under(tree.src / "core")
        for kind, name in includes(path)
        if kind == "<" and name.startswith(("rte_", "dpdk"))
    ]


def src_into_swx(tree: Tree) -> list[str]:
    """swpath/src (the NAT core above all) includes nothing of quicknat-swx:
    by a path into swpath/swx, or by a name only swx's include paths find."""
    broken = []
    for path in files_under(tree.src):
        for kind, name in includes(path):
            own = tree.resolve(path, name)
            theirs = tree.resolve(path, name, [tree.swx / "src", tree.swx / "p4rt", tree.swx])
            reaches = own is not None and tree.in_swx(own)
            if kind == '"' and (reaches or (own is None and theirs is not None)):
                broken.append(f"{path.relative_to(tree.src.parent)} includes {name} (swx's)")
    return broken


def swx_upward(tree: Tree) -> list[str]:
    broken = []
    for path in files_under(tree.swx):
        for name, target in tree.edges(path):
            if tree.swx_layer(target) > tree.swx_layer(path):
                broken.append(f"{path.relative_to(tree.swx.parent)} includes {name}")
    return broken


def module(path: Path) -> Path:
    """A file's module: x.c, x.cc and x.h of one directory are one."""
    return path.with_suffix("")


def circles(tree: Tree) -> list[str]:
    """Each circle among the modules once, as the files that close it."""
    graph: dict[Path, dict[Path, str]] = {}  # module -> module it includes -> by which file
    base = tree.src.parent
    for p in tree.files:
        path = p.resolve()
        for _, target in tree.edges(path):
            if module(target) != module(path):
                by = f"{path.relative_to(base)} includes {target.relative_to(base)}"
                graph.setdefault(module(path), {}).setdefault(module(target), by)
    state: dict[Path, int] = {}  # 1: on the path being walked, 2: done
    found: list[str] = []

    def walk(node: Path, stack: list[Path]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, {}):
            if state.get(nxt) == 1:
                loop = [*stack[stack.index(nxt) :], nxt]
                found.append(", ".join(graph[a][b] for a, b in pairwise(loop)))
            elif nxt not in state:
                walk(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node, [])
    return found


RULES = (
    ("swpath/src: no include of a higher layer", src_upward),
    ("swpath/src/core: no DPDK header", core_dpdk),
    ("swpath/src: no include of quicknat-swx", src_into_swx),
    ("swpath/swx: no include of a higher layer", swx_upward),
    ("swpath/src and swpath/swx: no include circle", circles),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=SWPATH, help="the swpath directory")
    tree = Tree(parser.parse_args(argv).root.resolve())
    failed = 0
    for rule, check in RULES:
        broken = check(tree)
        for line in broken:
            print(f"{rule}: {line}")
        failed += bool(broken)
    print(f"{len(RULES) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
