"""Reading one TOML table field by field, collecting every problem.

A user fixing a config wants all its mistakes at once, each naming the file, the
section entry and the field, never a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, TypeVar

from quicknat.config.values import WrongType, display

T = TypeVar("T")


class Problems:
    """The list of messages a parse produces, each prefixed with the file name."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def error(self, where: str, message: str) -> None:
        self.errors.append(
            f"{self.source}: {where}: {message}" if where else f"{self.source}: {message}"
        )

    def warn(self, where: str, message: str) -> None:
        self.warnings.append(f"{self.source}: {where}: {message}")


def unknown_name_message(kind: str, name: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean '{close[0]}'?" if close else "expected one of: " + ", ".join(known)
    return f"unknown {kind} '{name}' ({hint})"


class TableReader:
    """Fields of one table (a ``[[rule]]`` entry, ``[timeouts]``, ...)."""

    def __init__(self, problems: Problems, where: str, table: Any, fields: tuple[str, ...]) -> None:
        self.problems = problems
        self.where = where
        self.ok = isinstance(table, dict)
        self.table: dict[str, Any] = table if self.ok else {}
        if not self.ok:
            problems.error(where, "must be a table")
        # fields an unknown key is a misspelling of: their absence is already
        # said ("did you mean"), not again as "missing field"
        self.misspelled: set[str] = set()
        for key in self.table:
            if key not in fields:
                problems.error(where, unknown_name_message("field", key, fields))
                self.misspelled.update(difflib.get_close_matches(key, fields, n=1))

    def has(self, field: str) -> bool:
        return field in self.table

    def error(self, message: str) -> None:
        self.problems.error(self.where, message)

    def get(self, field: str, parse: Callable[[Any], T], *, required: bool = False) -> T | None:
        """The parsed value, or None when absent or invalid (the problem is recorded)."""
        if field not in self.table:
            if required and field not in self.misspelled:
                self.error(f"missing field '{field}'")
            return None
        value = self.table[field]
        try:
            return parse(value)
        except ValueError as exc:
            self.error(f"{field} {display(value, quoted=isinstance(exc, WrongType))}: {exc}")
            return None
