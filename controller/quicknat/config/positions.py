"""Where each table, array-of-tables entry and key of a TOML file starts.

tomllib (the standard library's parser, which the configuration uses) returns
plain dicts and lists without positions, and no parser that keeps them
(tomlkit) is a dependency; adding one for error messages alone is not worth
a second TOML reader. So the file is scanned once more, lightly, after
tomllib accepted it: a valid file's headers (`[name]`, `[[name]]`) and keys
(`key = ...`) each start a line, and only multi-line strings can hold text
that looks like either (they are skipped). A key written inside an inline
table or a dotted key has no line of its own here: its message carries the
line of the table it is in, or none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"^\s*(?P<open>\[\[?)\s*(?P<name>[A-Za-z0-9_.\"' -]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*(?P<key>"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)\s*=""")
_MULTILINE_QUOTES = ('"""', "'''")


@dataclass(slots=True)
class TablePlace:
    """One table: the line of its header and of each key under it."""

    line: int
    keys: dict[str, int] = field(default_factory=dict)


class SourcePositions:
    """Line numbers (1-based) of a TOML text's tables and keys.

    A table is named by (section, index): index 0 for `[section]` and the
    top-level keys (section ""), 1, 2, ... for the entries of `[[section]]`
    in file order, the numbering of the configuration's messages."""

    def __init__(self, text: str) -> None:
        self.tables: dict[tuple[str, int], TablePlace] = {("", 0): TablePlace(0)}
        entries: dict[str, int] = {}
        current = self.tables["", 0]
        in_string: str | None = None
        for number, line in enumerate(text.splitlines(), 1):
            if in_string is not None:
                if line.count(in_string) % 2:
                    in_string = None
                continue
            header = _HEADER.match(line)
            if header:
                name = header["name"].strip("\"'")
                index = 0
                if header["open"] == "[[":
                    index = entries[name] = entries.get(name, 0) + 1
                current = self.tables[name, index] = TablePlace(number)
                continue
            key = _KEY.match(line)
            if key:
                current.keys.setdefault(key["key"].strip("\"'"), number)
            in_string = next((q for q in _MULTILINE_QUOTES if line.count(q) % 2), None)

    def line(self, section: str, index: int = 0, key: str | None = None) -> int | None:
        """The line of `key` in the table, else of the table's header; a
        section written as a top-level key (`rule = 5`) is found too."""
        place = self.tables.get((section, index))
        if place is not None:
            found = place.keys.get(key, place.line) if key else place.line
            return found or None
        if index == 0:
            return self.tables["", 0].keys.get(section)
        return None
