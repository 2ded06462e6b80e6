"""`quicknat stats` as a table: the JSON answer of either data path's `stats`
(the controller's, swpath's), laid out for a terminal; `--json` prints the
answer as it is.

The layout follows the answer's shape rather than a list of known fields, so a
field either path adds later is shown too: scalars as `name value` lines,
`counters` with the non-zero ones only (all of them are in `--json`), a list of
objects (pools, lcores, instances) as a table of its scalar columns, a nested
object as an indented section.
"""

from __future__ import annotations

from typing import Any

INDENT = "  "


def stats_lines(answer: dict[str, Any], indent: str = "") -> list[str]:
    """The lines of one stats object (the answer, or a section of it)."""
    scalars = {k: v for k, v in answer.items() if not isinstance(v, dict | list)}
    width = max((len(k) for k in scalars), default=0)
    lines = [f"{indent}{k:<{width}}  {_scalar(v)}" for k, v in scalars.items()]
    for key, value in answer.items():
        if key == "counters" and isinstance(value, dict):
            lines += _counters(value, indent)
        elif isinstance(value, dict):
            lines += [f"{indent}{key}:", *stats_lines(value, indent + INDENT)]
        elif isinstance(value, list):
            lines += _rows(key, value, indent)
    return lines


def table_lines(title: str, rows: list[Any]) -> list[str]:
    """A list of objects (`quicknat neighbors`' rows) as a table under a title."""
    return _rows(title, rows, "")


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None else str(value)


def _counters(counters: dict[str, Any], indent: str) -> list[str]:
    shown = {k: v for k, v in counters.items() if v}
    hidden = len(counters) - len(shown)
    title = f"{indent}counters ({len(shown)} non-zero"
    title += f", {hidden} at 0: --json shows them):" if hidden else "):"
    width = max((len(k) for k in shown), default=0)
    return [title, *(f"{indent}{INDENT}{k:<{width}}  {v:>14}" for k, v in shown.items())]


def _rows(key: str, rows: list[Any], indent: str) -> list[str]:
    """A list of objects as a table: one column per scalar field, a small
    nested object's fields as `field.key` (a pool's in_use per protocol);
    a row's own counters (a worker's) only in --json."""
    if not rows:
        return [f"{indent}{key}: none"]
    if not all(isinstance(row, dict) for row in rows):
        return [f"{indent}{key}: {', '.join(_scalar(row) for row in rows)}"]
    flat = [_flatten(row) for row in rows]
    columns = list(dict.fromkeys(c for row in flat for c in row))
    cells = [[_scalar(row.get(c)) for c in columns] for row in flat]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = [f"{indent}{key}:"]
    for row in [columns, *cells]:
        text = "  ".join(f"{cell:>{w}}" for cell, w in zip(row, widths, strict=True))
        lines.append(f"{indent}{INDENT}{text}")
    return lines


def _flatten(row: dict[str, Any]) -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in row.items():
        if key == "counters":
            continue
        if isinstance(value, dict):
            flat.update(
                {f"{key}.{k}": v for k, v in value.items() if not isinstance(v, dict | list)}
            )
        elif not isinstance(value, list):
            flat[key] = value
    return flat
