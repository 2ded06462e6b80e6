"""Reading one TOML table field by field, collecting every problem.

A user fixing a config wants all its mistakes at once, each naming the file,
its line (when the text is known: positions.py), the section entry and the
field, never a traceback: `nat.toml:31: rule 2: port 99999: must be 0..65535`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, TypeVar

from quicknat.config.positions import SourcePositions
from quicknat.config.values import WrongType, display

T = TypeVar("T")


class Problems:
    """The list of messages a parse produces, each prefixed with the file name
    and, when known, the line (`file:line: where: message`, as compilers
    write it, so editors jump to it)."""

    def __init__(self, source: str, positions: SourcePositions | None = None) -> None:
        self.source = source
        self.positions = positions
        # (line, message): listed in file order, those of no line (the file
        # as a whole) first, the rest as found
        self._errors: list[tuple[int, str]] = []
        self._warnings: list[tuple[int, str]] = []

    @property
    def errors(self) -> list[str]:
        return [message for _, message in sorted(self._errors, key=lambda e: e[0])]

    @property
    def warnings(self) -> list[str]:
        return [message for _, message in sorted(self._warnings, key=lambda w: w[0])]

    def line(self, section: str, index: int = 0, key: str | None = None) -> int | None:
        return self.positions.line(section, index, key) if self.positions else None

    def _format(self, where: str, message: str, line: int | None) -> str:
        prefix = f"{self.source}:{line}" if line else self.source
        return f"{prefix}: {where}: {message}" if where else f"{prefix}: {message}"

    def error(self, where: str, message: str, line: int | None = None) -> None:
        self._errors.append((line or 0, self._format(where, message, line)))

    def warn(self, where: str, message: str, line: int | None = None) -> None:
        self._warnings.append((line or 0, self._format(where, message, line)))


def unknown_name_message(kind: str, name: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean '{close[0]}'?" if close else "expected one of: " + ", ".join(known)
    return f"unknown {kind} '{name}' ({hint})"


class TableReader:
    """Fields of one table (a ``[[rule]]`` entry, ``[timeouts]``, ...).

    `place` is the table's (section, index) in the file (positions.py), for
    the line numbers of its messages."""

    def __init__(
        self,
        problems: Problems,
        where: str,
        table: Any,
        fields: tuple[str, ...],
        place: tuple[str, int] | None = None,
    ) -> None:
        self.problems = problems
        self.where = where
        self.place = place
        self.ok = isinstance(table, dict)
        self.table: dict[str, Any] = table if self.ok else {}
        if not self.ok:
            self.error("must be a table")
        # fields an unknown key is a misspelling of: their absence is already
        # said ("did you mean"), not again as "missing field"
        self.misspelled: set[str] = set()
        for key in self.table:
            if key not in fields:
                self.error(unknown_name_message("field", key, fields), key)
                self.misspelled.update(difflib.get_close_matches(key, fields, n=1))

    def has(self, field: str) -> bool:
        return field in self.table

    def line(self, field: str | None = None) -> int | None:
        """The field's line, else the table's."""
        return self.problems.line(*self.place, field) if self.place else None

    def error(self, message: str, field: str | None = None) -> None:
        self.problems.error(self.where, message, self.line(field))

    def warn(self, message: str, field: str | None = None) -> None:
        self.problems.warn(self.where, message, self.line(field))

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
            shown = display(value, quoted=isinstance(exc, WrongType))
            self.error(f"{field} {shown}: {exc}", field)
            return None
