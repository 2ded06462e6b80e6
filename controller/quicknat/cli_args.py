"""What the quicknat command checks of its arguments before it does anything:
files it will read, sockets it will create, and `rule` words; and how it says
that one is wrong.

Exit statuses, the same for every command: 2 for what the user gave (a bad
option or value, a file that cannot be read, an invalid configuration or rule),
1 for what happened when running (a socket nobody answers on, an address that
cannot be bound, a change the running NAT refused).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

EXIT_USAGE = 2
EXIT_RUNTIME = 1


class ArgumentParser(argparse.ArgumentParser):
    """argparse's, but a usage error is one line (the usage is in --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def readable_file(text: str) -> str:
    """A file the command reads later: said now if it cannot be."""
    try:
        with open(text, "rb"):
            pass
    except OSError as exc:
        # a directory: "Is a directory" (EISDIR from open)
        raise argparse.ArgumentTypeError(f"{text}: {exc.strerror or exc}") from None
    return text


def pem_file(text: str) -> str:
    """A certificate or key for TLS: gRPC reads it only when it connects,
    and then logs its own errors and retries forever, so it is checked here."""
    readable_file(text)
    with open(text, "rb") as f:
        if b"-----BEGIN " not in f.read(1 << 20):
            raise argparse.ArgumentTypeError(f"{text}: not a PEM file (no -----BEGIN line)")
    return text


def socket_path(text: str) -> str:
    """A control socket the command creates: its directory must exist. A
    misspelt directory is an error, not created (systemd's units create
    theirs with RuntimeDirectory=)."""
    directory = Path(text).parent
    if not directory.is_dir():
        raise argparse.ArgumentTypeError(
            f"{text}: no directory {directory} (create it, or choose another path)"
        )
    return text


def rule_words_problem(words: list[str]) -> str | None:
    """What is wrong with `rule` words, known without the running NAT: the
    syntax of `rule add ...` (as the configuration file's [[rule]] is
    checked) or of `rule del N [flush]`; None when nothing is. Each line
    of the answer starts with the command (`rule add: ...`)."""
    from quicknat.config.parse import rule_problems
    from quicknat.controller.reconfigure import rule_from_words

    if words[:1] == ["add"]:
        try:
            table = rule_from_words(words[1:])
        except ValueError as exc:
            return str(exc)
        problems = rule_problems(table, "rule add")
        return "\n".join(problems) if problems else None
    if words[:1] == ["del"]:
        id_ok = len(words) in (2, 3) and words[1].isdigit() and int(words[1]) >= 1
        if id_ok and words[2:] in ([], ["flush"]):
            return None
        return "rule del: expected 'rule del N [flush]' (N: the rule's id, 1 or more)"
    return "rule: expected 'rule add id N type snat|dnat prefix P ...' or 'rule del N [flush]'"


def fail(command: str, message: str, status: int) -> int:
    """One line on stderr (per problem), and the exit status to return."""
    for line in message.splitlines():
        print(f"quicknat {command}: {line}", file=sys.stderr)
    return status
