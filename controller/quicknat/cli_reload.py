"""`quicknat reload` for quicknat-swpath, which reads no TOML: the new file's
rules, settings, neighbours and routes as the run-time commands that turn
the running ones into them (docs/swpath-commands.md), or a refusal when the
file changes what only a restart changes. A swpath older than this CLI
(still running across an upgrade) lacks commands the reload asks; that is
said, with what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quicknat.config import load_config
from quicknat.config.commands import (
    neighbor_commands,
    restart_only_changes,
    route_commands,
    runtime_commands,
)
from quicknat.controller import status


def _older_swpath(socket_path: Path, verb: str) -> ValueError:
    return ValueError(
        f"{socket_path}: this quicknat-swpath does not know `{verb}`: it is older than this "
        "quicknat; restart it (--state keeps its sessions), then reload"
    )


def _rows(socket_path: Path, verb: str) -> list[dict[str, Any]]:
    """swpath's `neighbors` or `routes`: its JSON rows."""
    try:
        rows = status.query(socket_path, verb)
    except ValueError:  # a line, not JSON: an older swpath's "unknown command"
        raise _older_swpath(socket_path, verb) from None
    if not isinstance(rows, list):
        raise ValueError(f"{verb}: not a list of rows: {rows!r}")
    return rows


def reload_swpath(socket_path: Path, config_path: str, flush: bool) -> list[str]:
    """Applies the file at config_path to the swpath at socket_path: the
    summary line, or ValueError (nothing applied when the file is refused)."""
    config = load_config(config_path)
    try:
        started = status.line_command(socket_path, "startup")
    except ValueError as exc:
        if str(exc).startswith("unknown command"):
            raise _older_swpath(socket_path, "startup") from None
        raise
    restart = restart_only_changes(started, config)
    if restart:  # nothing applied: the file is either taken whole or refused
        raise ValueError(
            f"reload: {', '.join(restart)} changed: that needs a restart of quicknat-swpath "
            "(rules, timeouts, filtering, limits, icmp, neighbors and routes change at run time)"
        )
    running = {int(line.split()[3]): line for line in status.line_command(socket_path, "rules")}
    neighbors = neighbor_commands(_rows(socket_path, "neighbors"), config)
    routes = route_commands(_rows(socket_path, "routes"), config)
    # a new route whose gateway has no MAC yet is no matter: its packets wait
    # while swpath asks for it by ARP
    commands = runtime_commands(running, config, flush) + neighbors + routes
    for command in commands:
        if command.startswith("sessions "):
            status.query(socket_path, command)
        else:
            status.line_command(socket_path, command)
    changed = sum(1 for c in commands if c.startswith("rule "))
    return [
        f"{len(config.rules)} rules; {changed} rule commands, "
        f"{len(neighbors)} neighbor commands, {len(routes)} route commands, settings applied"
    ]
