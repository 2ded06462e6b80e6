"""Offload mode's command channel to an instance (modes/offload_io.py):
`session` lines on one connection kept open, answered line by line, and a
connection the instance closed (it restarted) opened again for the batch."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from quicknat.config.model import SlowPath
from quicknat.controller.modes.offload_io import OffloadIO
from quicknat.controller.stats import Stats


class Instance:
    """A control socket that answers each line `ok` (`error: no` for one
    with `bad`), and closes a connection after `close_after` lines."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[str] = []
        self.connections = 0
        self.open = 0
        self.close_after: int | None = None

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open += 1
        while line := (await reader.readline()).decode().strip():
            self.lines.append(line)
            writer.write(b"error: no\n" if "bad" in line else b"ok\n")
            await writer.drain()
            if self.close_after is not None and len(self.lines) >= self.close_after:
                self.close_after = None
                break
        writer.close()
        self.open -= 1


async def until(what: Any, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not what():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_session_lines_share_one_connection_and_survive_a_restart(tmp_path: Path) -> None:
    async def scenario() -> None:
        instance = Instance(tmp_path / "sp0.sock")
        server = await asyncio.start_unix_server(instance.serve, str(instance.path))
        stats = Stats()
        sp = SlowPath(name="sp0", port=9, control=str(instance.path))
        io = OffloadIO(None, (sp,), stats)  # type: ignore[arg-type]
        sender = asyncio.ensure_future(io._sender(0))
        io.command(0, ["session offload 1 udp 10.0.0.1:1 8.8.8.8:53"])
        await until(lambda: len(instance.lines) == 1)
        io.command(0, ["session offload 2 udp 10.0.0.2:1 8.8.8.8:53", "bad line"])
        await until(lambda: len(instance.lines) == 3)
        await until(lambda: stats["instance_command_errors"] == 1)
        assert instance.connections == 1
        # the instance restarts: it drops the connection after the next line
        instance.close_after = 4
        io.command(0, ["session idle 1 udp 10.0.0.1:1 8.8.8.8:53"])
        await until(lambda: len(instance.lines) == 4)
        io.command(0, ["session idle 2 udp 10.0.0.2:1 8.8.8.8:53"])
        await until(lambda: len(instance.lines) == 5)
        assert instance.connections == 2
        assert stats["instance_command_errors"] == 1  # nothing lost
        sender.cancel()  # as OffloadIO.stop: it closes its connection
        with contextlib.suppress(asyncio.CancelledError):
            await sender
        await until(lambda: instance.open == 0)  # the instance saw it close
        server.close()
        await server.wait_closed()

    asyncio.run(scenario())
