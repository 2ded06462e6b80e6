#!/usr/bin/env python3
"""Splice the established-flow fast path (include/pna/fastpath.spec) into a
p4c-dpdk spec of the program, in front of its first instruction after `rx`.

    swx_splice.py SPEC                (splices, in place; p4src/Makefile
                                         runs it after swx_slots.py)
    swx_splice.py --strip SPEC OUT    (OUT: the program without it, for the
                                         test that compares the two)
    swx_splice.py --check SPEC        (fails unless SPEC holds the current
                                         fast path, spliced as this splices)

Why a splice and not P4: p4c-dpdk 1.2.4.17 cannot write this path. It
initialises every metadata field before parsing, lowers checksums to
arithmetic and cannot parse a packet without moving past it (fastpath.spec
says what the path does and why). What the path refers to in the program is
resolved here from the spec itself and from the generated constants, so a
change of the program that the path would silently misread fails the build
instead: a name that resolves to nothing, a table, action or register array
the program does not have.

Both pieces go between marker comments, so a spliced spec is stripped back
to exactly what swx_slots.py gave (`--strip`), and splicing is idempotent.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "include" / "pna" / "fastpath.spec"
CONSTANTS = HERE.parent / "controller" / "quicknat" / "p4" / "constants.py"

BEGIN = "; >>> fast path (p4src/include/pna/fastpath.spec, spliced by swx_splice.py)"
END = "; <<< fast path"
# The program's first two instructions: the packet and its direction.
ANCHOR = (
    "\trx m.pna_main_input_metadata_input_port",
    "\tregrd m.pna_main_input_metadata_direction direction m.pna_main_input_metadata_input_port",
)
_PLACEHOLDER = re.compile(r"@(md|slot|const)\.(\w+)@")


class SpliceError(Exception):
    pass


def _constants() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quicknat_p4_constants", CONSTANTS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sections(template: str) -> tuple[str, str]:
    """The template's `; @declarations` and `; @apply` parts."""
    _, _, rest = template.partition("; @declarations\n")
    declarations, found, apply = rest.partition("; @apply\n")
    if not declarations or not found:
        raise SpliceError(f"{TEMPLATE}: wants a '; @declarations' and an '; @apply' part")
    return declarations.strip("\n") + "\n", apply.rstrip("\n") + "\n"


def _metadata_fields(spec: str) -> list[str]:
    start = spec.index("struct local_metadata_t {")
    body = spec[start : spec.index("}", start)]
    return re.findall(r"^\s*bit<\d+>\s+(\w+)\s*$", body, re.M)


def _resolve(text: str, spec: str) -> str:
    fields = _metadata_fields(spec)
    constants = _constants()

    def one(match: re.Match[str]) -> str:
        kind, name = match.groups()
        if kind == "md":
            # p4c-dpdk: local_md.nat.src_addr -> local_metadata___nat_src_addr3232
            found = [f for f in fields if re.fullmatch(rf"local_metadata___{name}\d*", f)]
            what = f"local_md.{name}"
        elif kind == "slot":
            found = [f for f in fields if f == f"slot_{name}_0"]
            what = f"a {name}-bit temporary (swx_slots.py)"
        else:
            value = getattr(constants, name, None)
            if not isinstance(value, int):
                raise SpliceError(f"{match.group(0)}: no such constant in {CONSTANTS.name}")
            return hex(value)
        if len(found) != 1:
            raise SpliceError(f"{match.group(0)}: {what} is {len(found)} fields of the spec")
        return f"m.{found[0]}"

    return _PLACEHOLDER.sub(one, text)


def _check_names(apply: str, spec: str) -> None:
    """Every table, action and register array the path names is the
    program's or its own (the pipeline would refuse the spec, but later and without
    saying which)."""
    kinds = {
        r"^\ttable (\w+)": r"^(table|learner) {}\b",
        r"^\tjmpn?a \w+ (\w+)": r"^action {}\b",
        r"^\tregadd (\w+)": r"^regarray {}\b",
    }
    for use, declaration in kinds.items():
        for name in re.findall(use, apply, re.M):
            if not re.search(declaration.format(re.escape(name)), spec, re.M):
                raise SpliceError(f"the fast path names {name}, which the program does not have")


def _check_exits(declarations: str, spec: str) -> None:
    """The exit lines (`; fastpath exit N: TABLE hit|miss ...`, read by
    quicknat-swx to count each packet's lookups once) name the program's
    tables, each slot once and within fastpath_counter."""
    size = re.search(r"^regarray fastpath_counter size (0x[0-9a-f]+|\d+)", declarations, re.M)
    slots: set[int] = set()
    for slot, lookups in re.findall(r"^; fastpath exit (\d+): (.*)$", declarations, re.M):
        words = lookups.split()
        if slot in slots or size is None or int(slot) >= int(size.group(1), 0) or int(slot) < 2:
            raise SpliceError(f"fast path exit {slot}: not a free slot of fastpath_counter")
        slots.add(slot)
        if len(words) % 2 or any(w not in ("hit", "miss") for w in words[1::2]):
            raise SpliceError(f"fast path exit {slot}: wants TABLE hit|miss pairs")
        for table in words[0::2]:
            if not re.search(rf"^(table|learner) {re.escape(table)}\b", spec, re.M):
                raise SpliceError(f"fast path exit {slot} names {table}, not the program's")


def strip(spec: str) -> str:
    """The spec without any fast path spliced into it."""
    return re.sub(rf"^{re.escape(BEGIN)}\n.*?^{re.escape(END)}\n", "", spec, flags=re.M | re.S)


def splice(spec: str, template: str) -> str:
    spec = strip(spec)
    declarations, apply = _sections(template)
    apply = _resolve(apply, spec)
    declarations = _resolve(declarations, spec)
    _check_names(apply, declarations + spec)
    _check_exits(declarations, spec)
    anchor = "\n".join(ANCHOR) + "\n"
    if spec.count(anchor) != 1:
        raise SpliceError("the program does not start with rx and its direction's regrd")
    metadata = spec.index("struct local_metadata_t {")
    spec = spec[:metadata] + f"{BEGIN}\n{declarations}{END}\n" + spec[metadata:]
    return spec.replace(anchor, f"{anchor}{BEGIN}\n{apply}{END}\n", 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--strip", metavar="OUT", type=Path, help="write SPEC without the fast path")
    mode.add_argument("--check", action="store_true", help="SPEC holds the current fast path")
    parser.add_argument("spec", type=Path)
    args = parser.parse_args(argv)
    text = args.spec.read_text()
    try:
        if args.strip:
            args.strip.write_text(strip(text))
        elif args.check:
            if splice(text, TEMPLATE.read_text()) != text:
                print(
                    f"swx_splice: {args.spec} does not hold the current fast path (make -C p4src)",
                    file=sys.stderr,
                )
                return 1
        else:
            args.spec.write_text(splice(text, TEMPLATE.read_text()))
    except SpliceError as error:
        print(f"swx_splice: {args.spec}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
