"""The status socket: one command per connection, one JSON answer.

`quicknat sessions` and `quicknat stats` are its clients; the swpath data path
answers the same commands on its control socket, so one CLI serves both:

    sessions [list|delete|flush] [limit N] [proto P] [src A] [dst A] [port N]
             [rule N]
    stats
    counters

`counters` is the controller's alone: its own counters and nothing else,
asked of no instance, for whatever polls (the benchmarks, every 20 ms). In
offload mode `stats` asks every instance for theirs: polled every 10 ms it
cost the controller 64 us per new flow and halved the setup rate it was
measuring (docs/benchmarks.md, "Seams: before and after").

As conntrack's filters: `src` is the inside host, `dst` the remote peer,
`port` any of a session's three ports, `rule` the rule that opened it.
`delete` needs a filter; `flush` deletes every session the filters select
(all without one). A deleted
session's port rests before reuse as an expired one's does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from quicknat.addr import format_ipv4, parse_ipv4
from quicknat.rules import Protocol as IpProtocol

log = logging.getLogger(__name__)

ACTIONS = ("list", "delete", "flush")


@dataclass(frozen=True, slots=True)
class SessionQuery:
    """Which sessions a `sessions` command lists or deletes (module doc)."""

    action: str = "list"
    limit: int = 0  # list: most rows; 0 = all
    proto: int = 0  # 0: any
    src: int | None = None
    dst: int | None = None
    port: int | None = None
    rule: int | None = None  # the rule that opened the session

    @classmethod
    def parse(cls, words: list[str]) -> SessionQuery:
        """From the words after `sessions`; ValueError with the reason."""
        action = words.pop(0) if words and words[0] in ACTIONS else "list"
        values: dict[str, int] = {}
        if len(words) % 2:
            raise ValueError(f"{words[-1]}: missing value")
        for key, text in zip(words[::2], words[1::2], strict=True):
            try:
                if key == "limit" and action == "list":
                    values[key] = int(text)
                elif key == "proto":
                    values[key] = int(IpProtocol.parse(text))
                elif key in ("src", "dst"):
                    values[key] = parse_ipv4(text)
                elif (key == "port" and 1 <= int(text) <= 65535) or (
                    key == "rule" and int(text) >= 1
                ):
                    values[key] = int(text)
                else:
                    raise ValueError
            except ValueError:
                raise ValueError(
                    f"at '{key} {text}': expected [limit N] [proto tcp|udp|icmp] "
                    "[src A] [dst A] [port N] [rule N]"
                ) from None
        query = cls(action, **values)
        if action == "delete" and not query.filtered():
            raise ValueError("delete needs a filter (proto, src, dst, port); flush deletes all")
        return query

    def filtered(self) -> bool:
        values = (self.src, self.dst, self.port, self.rule)
        return bool(self.proto) or any(v is not None for v in values)

    def matches(
        self, proto: int, internal: int, remote: int, ports: tuple[int, ...], rule: int = 0
    ) -> bool:
        return (
            (not self.proto or proto == self.proto)
            and (self.src is None or internal == self.src)
            and (self.dst is None or remote == self.dst)
            and (self.port is None or self.port in ports)
            and (self.rule is None or rule == self.rule)
        )

    def command(self) -> str:
        """The line a client sends (both the controller and swpath read it)."""
        words = ["sessions", self.action]
        if self.limit:
            words += ["limit", str(self.limit)]
        if self.proto:
            words += ["proto", str(IpProtocol(self.proto))]
        for key in ("src", "dst"):
            value = getattr(self, key)
            if value is not None:
                words += [key, format_ipv4(value)]
        if self.port is not None:
            words += ["port", str(self.port)]
        if self.rule is not None:
            words += ["rule", str(self.rule)]
        return " ".join(words)


class StatusSource(Protocol):
    """What the socket asks (service.Controller); ValueError from the
    sessions' methods is the answer's error (offload mode: an instance that
    did not answer)."""

    async def session_rows(self, query: SessionQuery) -> list[dict[str, object]]: ...
    async def delete_sessions(self, query: SessionQuery) -> int: ...
    async def stats_answer(self) -> dict[str, object]: ...
    def counters_answer(self) -> dict[str, object]: ...
    async def routes_answer(self) -> list[dict[str, object]] | dict[str, object]: ...
    async def line_command(self, line: str) -> list[str]: ...


# Commands of swpath's run-time language the controller takes too: answered
# as swpath answers them, result lines then `ok` or `error: MESSAGE`.
LINE_VERBS = ("rule", "rules", "reload")


async def _answer(source: StatusSource, line: str) -> object:
    words = line.split()
    if words == ["stats"]:
        return await source.stats_answer()
    if words == ["counters"]:
        return source.counters_answer()
    if words == ["routes"]:
        return await source.routes_answer()
    if words and words[0] == "sessions":
        try:
            query = SessionQuery.parse(words[1:])
            if query.action == "list":
                rows = await source.session_rows(query)
                return rows[: query.limit] if query.limit else rows
            return {"deleted": await source.delete_sessions(query)}
        except ValueError as exc:
            return {"error": f"sessions: {exc}"}
    return {"error": f"unknown command {line!r} (sessions, stats, counters, routes)"}


async def _reply(source: StatusSource, command: str) -> bytes:
    """The answer to one command: result lines, then `ok` or `error: ...`,
    for the run-time language; one JSON document for the status queries. A
    failure nobody planned for (the switch gone in the middle of a reload's
    write) is answered too, and its trace logged: the client always gets a
    reason, never a closed socket."""
    verb = command.split()[0] if command.split() else ""
    try:
        if verb in LINE_VERBS:
            try:
                lines = [*await source.line_command(command), "ok"]
            except ValueError as exc:
                lines = [f"error: {exc}"]
            return "".join(f"{line}\n" for line in lines).encode()
        return json.dumps(await _answer(source, command)).encode() + b"\n"
    except Exception as exc:
        log.exception("control socket: %r failed", command)
        reason = f"{verb}: {type(exc).__name__}: {exc}"
        if verb in LINE_VERBS:
            return f"error: {reason}\n".encode()
        return json.dumps({"error": reason}).encode() + b"\n"


async def serve_status(path: Path, source: StatusSource) -> asyncio.AbstractServer:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            command = (await asyncio.wait_for(reader.readline(), 5)).decode().strip()
            writer.write(await _reply(source, command))
            await writer.drain()
        except (TimeoutError, ConnectionError, UnicodeDecodeError):
            pass
        finally:
            writer.close()

    # No mkdir: a --socket in a directory that does not exist is the user's
    # error, said by the CLI before we get here (cli_args.socket_path).
    claim_socket(path)
    return await asyncio.start_unix_server(handle, path=str(path))


class SocketInUse(Exception):
    """The status socket's path is a live socket (another process answers
    on it) or not a socket at all: taking it would cut that process off."""


def claim_socket(path: Path) -> None:
    """Makes `path` free for our socket: a socket nobody answers on (left by
    a process that died) is removed; a live one, or a file that is no socket,
    raises SocketInUse. Connecting is the only test of liveness a Unix socket
    has: its file stays after its process is gone. swpath's control socket
    does the same (swpath/src/control/ctl_socket.c)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise SocketInUse(f"{path} exists and is not a socket; remove it or choose another path")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(2)
        try:
            probe.connect(str(path))
        except ConnectionRefusedError:  # nobody listens: stale
            os.unlink(path)
            return
        except OSError as exc:  # e.g. a full backlog: something is there
            raise SocketInUse(f"{path}: {exc.strerror or exc}; not taking it over") from None
    raise SocketInUse(
        f"{path} is in use: another process answers on it (another controller "
        "of this name?); stop it or choose another --socket"
    )


def line_command(path: Path, line: str, timeout: float = 10.0) -> list[str]:
    """One line of the run-time command language to either path's socket: its
    result lines; ValueError with the `error:` message."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.sendall(line.encode() + b"\n")
        sock.shutdown(socket.SHUT_WR)  # swpath then answers and closes
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    lines = b"".join(chunks).decode().splitlines()
    if lines and lines[-1].startswith("error: "):
        raise ValueError(lines[-1].removeprefix("error: "))
    if not lines or lines[-1] != "ok":
        raise ValueError(f"unexpected answer: {lines[-1:] or 'nothing'}")
    return lines[:-1]


def query(path: Path, command: str, timeout: float = 5.0) -> object:
    """Blocking client for the CLI."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.sendall(command.encode() + b"\n")
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return json.loads(b"".join(chunks))
