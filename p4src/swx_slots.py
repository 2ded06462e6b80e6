#!/usr/bin/env python3
"""Fold the temporaries of a p4c-dpdk spec into few metadata fields, so that
DPDK 22.11's SWX pipeline can address them.

    swx_slots.py SPEC            (rewrites SPEC in place; p4src/Makefile runs it)
    swx_slots.py --check SPEC    (fails if SPEC's metadata is past the limit)

Why: p4c-dpdk 1.2.4.17 gives every intermediate value of an expression a
metadata field of its own and never reuses one (the PNA program has about 850,
2.8 KB of them), while DPDK 22.11's instructions address a field by an 8-bit
byte offset (rte_swx_pipeline_internal.h: struct instr_operand's `offset`),
so a field that starts past byte 255 silently aliases an earlier one: the
program's drop reason was overwritten by an IPv4 checksum's arithmetic.

How: register allocation, as a compiler does it for machine registers. The
apply block's jumps all go forward (the tool refuses a backward one), so one
backward pass over its instructions gives each point's live temporaries
exactly; two temporaries interfere when one is written where the other is
live, and a greedy colouring of that graph, one pool of fields per width
(an instruction's arithmetic takes its destination's width), gives the
fields. What an action names, a table or selector reads as a key, or a
learner learns stays where it is: those fields are laid out by the tables.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

# An instruction operand field offset is a byte, and the field must start
# within it.
LIMIT_BYTES = 256
# What p4c-dpdk makes for intermediate values and local variables of the
# parser and the main control.
TEMPORARY = re.compile(r"^((MainControlT|MainParserT)_|tmpxor)")
_FIELD = re.compile(r"^\s*bit<(\d+)>\s+(\S+)\s*$")
_LABEL = re.compile(r"^\s*(\w+)\s*:\s*(.*)$")
_JUMP = re.compile(r"^\s*jmp\w*\s+(\w+)")
_OPERAND = re.compile(r"\bm\.(\w+)")


@dataclass
class Spec:
    lines: list[str]
    struct_name: str
    struct_start: int  # the `struct NAME {` line
    struct_end: int  # its `}`
    fields: list[tuple[int, str]]  # (bits, name), in order
    apply_start: int  # the line after `apply {`
    apply_end: int  # its `}`


@dataclass
class Slots:
    by_temp: dict[str, str] = field(default_factory=dict)
    fields: list[tuple[int, str]] = field(default_factory=list)


class SpecError(Exception):
    pass


def parse(text: str) -> Spec:
    lines = text.split("\n")
    meta = next(
        (m[1] for line in lines if (m := re.match(r"^metadata instanceof (\w+)", line))), None
    )
    if meta is None:
        raise SpecError("no `metadata instanceof` line")
    start = lines.index(f"struct {meta} {{")
    end = next(i for i in range(start, len(lines)) if lines[i].strip() == "}")
    fields = []
    for line in lines[start + 1 : end]:
        if line.strip().startswith(";"):  # p4c-dpdk's `;oldname:` notes
            continue
        m = _FIELD.match(line)
        if m is None:
            raise SpecError(f"metadata field not understood: {line.strip()!r}")
        fields.append((int(m[1]), m[2]))
    apply = lines.index("apply {") + 1
    apply_end = next(i for i in range(apply, len(lines)) if lines[i].strip() == "}")
    return Spec(lines, meta, start, end, fields, apply, apply_end)


def pinned(spec: Spec) -> set[str]:
    """Fields named outside the apply block: in actions, table, selector and
    learner definitions (keys, and what they read and write)."""
    names: set[str] = set()
    for i, line in enumerate(spec.lines):
        if spec.apply_start <= i < spec.apply_end or spec.struct_start <= i <= spec.struct_end:
            continue
        names.update(_OPERAND.findall(line))
    return names


def instructions(spec: Spec) -> list[tuple[str | None, str]]:
    """The apply block as (label, instruction) pairs."""
    result = []
    for line in spec.lines[spec.apply_start : spec.apply_end]:
        m = _LABEL.match(line)
        if m:
            result.append((m[1], m[2].strip()))
        else:
            result.append((None, line.strip()))
    return result


# What an instruction writes of its metadata operands (DPDK 22.11's
# rte_swx_pipeline.c): the first operand of the ALU instructions and of
# regrd, the last of meter (its colour out). An instruction not listed here
# is taken to read every operand and to write them all without overwriting
# them (so its operands stay live and get fields of their own).
_WRITES_FIRST = {"mov", "add", "sub", "and", "or", "xor", "shl", "shr", "ckadd", "cksub", "regrd"}
_READS_FIRST_TOO = {"add", "sub", "and", "or", "xor", "shl", "shr", "ckadd", "cksub"}
_READS_ONLY = {
    "jmp",
    "jmpeq",
    "jmpneq",
    "jmplt",
    "jmpgt",
    "jmpv",
    "jmpnv",
    "jmph",
    "jmpnh",
    "jmpa",
    "jmpna",
    "tx",
    "emit",
    "extract",
    "validate",
    "invalidate",
    "regwr",
    "regadd",
    "table",
    "drop",
    "return",
    "mirror",
    "recirculate",
    "learn",
    "rearm",
    "forget",
}


def effects(instr: str) -> tuple[list[str], list[str], bool]:
    """(read, written, overwritten): the metadata fields an instruction reads,
    those it writes, and whether the write replaces the field's value."""
    words = instr.split()
    operands = _OPERAND.findall(instr)
    op = words[0] if words else ""
    if op in _WRITES_FIRST and operands and words[1].startswith("m."):
        dst = words[1][2:]
        reads = [o for o in operands[1:]] + ([dst] if op in _READS_FIRST_TOO else [])
        return reads, [dst], True
    if op == "meter" and operands:
        return operands[:-1], operands[-1:], True
    if op in _READS_ONLY:
        return operands, [], False
    return operands, operands, False


def check_forward(code: list[tuple[str | None, str]]) -> dict[str, int]:
    """Where each label is; SpecError for a backward jump."""
    where = {label: i for i, (label, _) in enumerate(code) if label}
    for i, (_, instr) in enumerate(code):
        m = _JUMP.match(instr)
        if m and m[1] in where and where[m[1]] <= i:
            raise SpecError(f"a backward jump ({instr!r}): one pass gives no liveness then")
    return where


def interference(code: list[tuple[str | None, str]], temps: set[str]) -> dict[str, set[str]]:
    """Which temporaries are ever live at once: one backward pass (every jump
    goes forward, so each instruction's successors are done first)."""
    where = check_forward(code)
    live_in: list[set[str]] = [set() for _ in range(len(code) + 1)]
    edges: dict[str, set[str]] = {t: set() for t in temps}
    for i in range(len(code) - 1, -1, -1):
        instr = code[i][1]
        words = instr.split()
        succ = [] if words[:1] == ["jmp"] else [i + 1]
        m = _JUMP.match(instr)
        if m and m[1] in where:
            succ.append(where[m[1]])
        live_out = set().union(*(live_in[j] for j in succ)) if succ else set()
        reads, writes, overwrites = effects(instr)
        reads = [r for r in reads if r in temps]
        writes = [w for w in writes if w in temps]
        for w in writes:
            for v in live_out:
                if v != w:
                    edges[w].add(v)
                    edges[v].add(w)
        live = live_out - set(writes) if overwrites else set(live_out)
        live_in[i] = live | set(reads)
    return edges


def allocate(spec: Spec) -> Slots:
    code = instructions(spec)
    keep = pinned(spec)
    width = dict((name, bits) for bits, name in spec.fields)
    named = {n for _, instr in code for n in _OPERAND.findall(instr)}
    temps = {n for n in named if TEMPORARY.match(n) and n in width and n not in keep}
    edges = interference(code, temps)
    first = {}
    for i, (_, instr) in enumerate(code):
        for n in _OPERAND.findall(instr):
            first.setdefault(n, i)
    slots = Slots()
    pools: dict[int, int] = {}  # width -> fields made
    for name in sorted(temps, key=lambda n: (first[n], n)):
        taken = {slots.by_temp[v] for v in edges[name] if v in slots.by_temp}
        bits = width[name]
        for k in range(pools.get(bits, 0)):
            if f"slot_{bits}_{k}" not in taken:
                slots.by_temp[name] = f"slot_{bits}_{k}"
                break
        else:
            k = pools.get(bits, 0)
            pools[bits] = k + 1
            slots.by_temp[name] = f"slot_{bits}_{k}"
            slots.fields.append((bits, f"slot_{bits}_{k}"))
    return slots


_ACTION = re.compile(r"^action (\w+) ")
_LEARN = re.compile(r"^\s*learn \w+ m\.(\w+) ")


def share_learn_arguments(spec: Spec) -> dict[str, str]:
    """Learner arguments that several actions stage in temporaries of their
    own (p4c-dpdk copies each add_entry's parameters into new fields right
    before its `learn`), mapped onto the first such action's: an action
    runs whole, so the copies are never live at once. Only temporaries
    named in that one action and nowhere else are shared, and only in the
    same widths in the same order (`learn` reads its arguments as
    consecutive fields)."""
    width = dict((name, bits) for bits, name in spec.fields)
    order = [name for _, name in spec.fields]
    uses: dict[str, int] = {}
    for i, line in enumerate(spec.lines):
        if spec.struct_start <= i <= spec.struct_end:
            continue
        for n in set(_OPERAND.findall(line)):
            uses[n] = uses.get(n, 0) + 1
    first: dict[tuple[int, ...], list[str]] = {}
    mapping: dict[str, str] = {}
    action: list[str] = []
    for line in spec.lines:
        if _ACTION.match(line):
            action = []
        action.append(line)
        m = _LEARN.match(line)
        if m is None or m[1] not in width or not TEMPORARY.match(m[1]):
            continue
        staged = [n for n in order if any(f"mov m.{n} " in a for a in action)]
        start = order.index(m[1])
        args = [n for n in order[start:] if n in staged][: len(staged)]
        if not args or any(not TEMPORARY.match(n) or uses.get(n, 0) > 2 for n in args):
            continue  # named elsewhere too, or not p4c-dpdk's copies
        key = tuple(width[n] for n in args)
        if key in first:
            mapping.update(zip(args, first[key], strict=True))
        else:
            first[key] = args
    return mapping


def rename(spec: Spec, mapping: dict[str, str]) -> str:
    """The spec with the mapped fields renamed everywhere and removed from
    the metadata."""
    lines = [_OPERAND.sub(lambda m: "m." + mapping.get(m[1], m[1]), line) for line in spec.lines]
    body = [f"\tbit<{bits}> {name}" for bits, name in spec.fields if name not in mapping]
    lines[spec.struct_start + 1 : spec.struct_end] = body
    return "\n".join(lines)


def rewrite(spec: Spec, slots: Slots) -> str:
    lines = list(spec.lines)
    for i in range(spec.apply_start, spec.apply_end):
        lines[i] = _OPERAND.sub(lambda m: "m." + slots.by_temp.get(m[1], m[1]), lines[i])
    kept = [(bits, name) for bits, name in spec.fields if name not in slots.by_temp]
    body = [f"\tbit<{bits}> {name}" for bits, name in kept + slots.fields]
    lines[spec.struct_start + 1 : spec.struct_end] = body
    return "\n".join(lines)


_CONSTANT = r"(?:0x[0-9a-fA-F]+|\d+)"
_REGADD_CONSTANTS = re.compile(rf"^\s*(?:\w+\s*:\s*)?regadd (\w+) {_CONSTANT} {_CONSTANT}\s*$")


def constant_regadd(spec: Spec) -> None:
    """SpecError for a regadd whose index and value are both constants: DPDK
    22.11's instr_regadd_translate never sets the register array of that
    form (regadd_rii), so it adds to the pipeline's first array instead:
    a count into the wrong counter. The program puts such an index in
    metadata instead."""
    for number, line in enumerate(spec.lines, 1):
        m = _REGADD_CONSTANTS.match(line)
        if m:
            raise SpecError(
                f"line {number}: `{line.strip()}`: DPDK 22.11 adds a constant to a constant "
                f"index of the first register array, not {m[1]}: index it from metadata"
            )


def metadata_bytes(spec: Spec) -> tuple[int, int]:
    """The metadata's size and where its last field starts, in bytes."""
    offset = last = 0
    for bits, _ in spec.fields:
        last = offset
        offset += bits // 8
    return offset, last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the limit")
    parser.add_argument("spec", type=Path)
    args = parser.parse_args(argv)
    try:
        spec = parse(args.spec.read_text())
        if not args.check:
            before = metadata_bytes(spec)[0]
            shared = share_learn_arguments(spec)
            spec = parse(rename(spec, shared))
            slots = allocate(spec)
            args.spec.write_text(rewrite(spec, slots))
            spec = parse(args.spec.read_text())
            print(
                f"swx_slots: {args.spec}: {len(slots.by_temp) + len(shared)} temporaries in "
                f"{len(slots.fields)} fields; metadata {before} -> {metadata_bytes(spec)[0]} bytes"
            )
        constant_regadd(spec)
        size, last = metadata_bytes(spec)
        if last >= LIMIT_BYTES:
            raise SpecError(
                f"metadata of {size} bytes: a field starts at byte {last}, past the "
                f"{LIMIT_BYTES} an SWX instruction can address"
            )
    except SpecError as exc:
        print(f"{args.spec}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
