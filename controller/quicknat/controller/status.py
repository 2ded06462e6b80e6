"""The status socket: one command per connection, one JSON answer.

`quicknat sessions` and `quicknat stats` are its clients; the swpath data path
answers the same commands on its control socket, so one CLI serves both.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path
from typing import Protocol


class StatusSource(Protocol):
    def session_rows(self) -> list[dict[str, object]]: ...
    def stats_dict(self) -> dict[str, object]: ...


async def serve_status(path: Path, source: StatusSource) -> asyncio.AbstractServer:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            command = (await asyncio.wait_for(reader.readline(), 5)).decode().strip()
            if command == "sessions":
                answer: object = source.session_rows()
            elif command == "stats":
                answer = source.stats_dict()
            else:
                answer = {"error": f"unknown command {command!r} (sessions, stats)"}
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
        except (TimeoutError, ConnectionError, UnicodeDecodeError):
            pass
        finally:
            writer.close()

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        os.unlink(path)  # a stale socket from a previous run
    return await asyncio.start_unix_server(handle, path=str(path))


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
