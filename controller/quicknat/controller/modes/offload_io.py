"""Offload mode's I/O with its slow-path instances (docs/offload.md): one
task per instance reading its session event stream (resubscribing with
backoff when it ends) into the mode (offload_mode.py), one task per instance
sending it `session` lines in order, the mode's clock, the flushes of the
writer that the instances' events ask for, and the operator's status
commands to every instance at once (offload_view.py makes one answer of
theirs). The mode owns it: `start`, `stop`, `command`, `configure`, `ask_all`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from pathlib import Path
from typing import Protocol

from quicknat.config.model import SlowPath
from quicknat.controller.modes.offload_view import Reply
from quicknat.controller.stats import Stats
from quicknat.offload.stream import SessionEvent, subscribe

log = logging.getLogger("quicknat.offload")

BACKOFF_MIN_S, BACKOFF_MAX_S = 0.25, 5.0

#: How long an instance may take over a status command: within the CLI's
#: own wait (status.query, 5 s), so the operator hears which instance was
#: slow rather than a timeout of the controller's socket.
STATUS_WAIT_S = 4.0

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Instances(Protocol):
    """What the instances' events go to (offload_mode.OffloadMode)."""

    def on_event(self, instance: int, event: SessionEvent) -> None: ...
    def stream_restarted(self, instance: int) -> None: ...
    def tick(self) -> None: ...
    def flush(self) -> None: ...


class OffloadIO:
    def __init__(
        self,
        mode: Instances,
        instances: tuple[SlowPath, ...],
        stats: Stats,
        batch_window_ms: int = 0,  # [offload] batch_window_ms
    ) -> None:
        self.mode = mode
        self.instances = instances
        self.stats = stats
        self.batch_window_s = batch_window_ms / 1000
        self._flush_due: asyncio.TimerHandle | None = None
        self._queues: list[asyncio.Queue[list[str]]] = [asyncio.Queue() for _ in instances]
        self._tasks: list[asyncio.Task[None]] = []

    # -- life ---------------------------------------------------------------------

    def start(self) -> None:
        for i in range(len(self.instances)):
            self._tasks.append(asyncio.ensure_future(self._feed(i)))
            self._tasks.append(asyncio.ensure_future(self._sender(i)))
        self._tasks.append(asyncio.ensure_future(self._ticker()))

    async def stop(self) -> None:
        if self._flush_due is not None:
            self._flush_due.cancel()
            self._flush_due = None
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    def command(self, instance: int, lines: list[str]) -> None:
        """Lines for an instance, sent in order."""
        self._queues[instance].put_nowait(lines)

    async def configure(self, lines: list[str]) -> list[str]:
        """Run-time commands for every instance, now (rule changes and
        settings: `runtime_commands`): what went wrong, each naming its
        instance; an instance that cannot be reached is one."""
        errors = []
        for sp in self.instances:
            try:
                answers = await _exchange(sp.control, lines)
            except (OSError, TimeoutError) as exc:
                errors.append(f"slow path {sp.name}: {exc or type(exc).__name__}")
                continue
            errors += [f"slow path {sp.name}: {a}" for a in answers if a.startswith("error:")]
        return errors

    async def ask_all(self, line: str) -> list[Reply]:
        """A status command (`sessions ...`, `stats`) to every instance at
        once: each one's decoded JSON answer, or why it gave none."""
        return list(await asyncio.gather(*(self._ask(sp, line) for sp in self.instances)))

    @staticmethod
    async def _ask(sp: SlowPath, line: str) -> Reply:
        """swpath answers a status command with one JSON document and closes
        (docs/swpath-commands.md)."""
        try:
            reader, writer = await asyncio.open_unix_connection(sp.control)
            try:
                writer.write(line.encode() + b"\n")
                writer.write_eof()
                async with asyncio.timeout(STATUS_WAIT_S):
                    data = await reader.read()
            finally:
                writer.close()
        except (OSError, TimeoutError) as exc:
            return Reply(sp.name, error=f"{sp.control}: {exc or type(exc).__name__}")
        try:
            return Reply(sp.name, json.loads(data))
        except ValueError:  # cut off, or not swpath
            return Reply(sp.name, error=f"{sp.control}: not a JSON answer: {data[:80]!r}")

    def kick(self) -> None:
        """The instances brought work: the writer flushes it, after
        `[offload] batch_window_ms` to gather what else comes meanwhile (a
        write is one round trip whatever it carries)."""
        if not self.batch_window_s:
            self.mode.flush()
        elif self._flush_due is None:
            loop = asyncio.get_running_loop()
            self._flush_due = loop.call_later(self.batch_window_s, self._flush_now)

    def _flush_now(self) -> None:
        self._flush_due = None
        self.mode.flush()

    async def _ticker(self) -> None:
        """The mode's clock (sessions handed back that were not taken)."""
        while True:
            await asyncio.sleep(1.0)
            self.mode.tick()
            self.mode.flush()

    # -- the instances ------------------------------------------------------------------

    async def _feed(self, instance: int) -> None:
        sp = self.instances[instance]
        backoff = BACKOFF_MIN_S
        said = False
        while True:
            self.mode.stream_restarted(instance)
            try:
                async for events in subscribe(Path(sp.control)):
                    backoff = BACKOFF_MIN_S
                    said = False
                    lost = self._take(instance, events)
                    self.kick()
                    if lost:
                        log.warning("slow path %s dropped session events: resubscribing", sp.name)
                        break
            except (OSError, ConnectionError, ValueError) as exc:
                if not said:
                    log.warning("slow path %s (%s): %s; retrying", sp.name, sp.control, exc)
                    said = True
            self.stats["instance_stream_reconnects"] += 1
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_S)

    def _take(self, instance: int, events: list[SessionEvent]) -> bool:
        """A batch of the instance's events to the mode, up to a "lost"
        (records dropped: what follows it is not to be trusted); whether
        there was one."""
        for event in events:
            self.mode.on_event(instance, event)
            if event.kind == "lost":
                return True
        return False

    async def _sender(self, instance: int) -> None:
        """`session` lines to the instance, in order, on one connection kept
        open (a connection per batch was 9% of the offload manager's CPU): each line
        is answered with one `ok` or `error: ...`. A broken connection is
        opened again for the next batch; the batch it broke is counted."""
        connection: Connection | None = None
        try:
            while True:
                connection = await self._send_batch(instance, connection)
        finally:
            if connection is not None:
                connection[1].close()

    async def _send_batch(self, instance: int, connection: Connection | None) -> Connection | None:
        """What queued for the instance, in order, on `connection` (opened if
        None); the connection for the next batch (None: it broke). A kept
        connection the instance closed meanwhile (it restarted) is opened
        again once for the same batch (a `session` line twice is harmless)."""
        sp = self.instances[instance]
        lines = await self._queues[instance].get()
        while not self._queues[instance].empty():  # what queued meanwhile, in order
            lines += self._queues[instance].get_nowait()
        for attempt in range(2):
            fresh = connection is None
            try:
                if connection is None:
                    connection = await asyncio.open_unix_connection(sp.control)
                answers = await _answers(connection, lines)
                break
            except (OSError, TimeoutError) as exc:
                if connection is not None:
                    connection[1].close()
                    connection = None
                if fresh or attempt == 1:
                    self.stats["instance_command_errors"] += len(lines)
                    log.warning(
                        "slow path %s: %d session commands not sent: %s", sp.name, len(lines), exc
                    )
                    return None
        errors = [a.strip() for a in answers if a.startswith("error:")]
        if errors:
            self.stats["instance_command_errors"] += len(errors)
            log.warning("slow path %s: %s", sp.name, errors[0])
        return connection


async def _answers(connection: Connection, lines: list[str]) -> list[str]:
    """Lines on a kept connection, and the one answer each gets."""
    reader, writer = connection
    writer.write("".join(line + "\n" for line in lines).encode())
    await writer.drain()
    # one deadline for the batch (wait_for per line made a task and a timer
    # for each: 5% of the manager's CPU), and the answers read as they come,
    # not an await per line
    data = b""
    async with asyncio.timeout(10):
        while data.count(b"\n") < len(lines):
            chunk = await reader.read(1 << 16)
            if not chunk:
                raise ConnectionResetError("the instance closed the connection")
            data += chunk
    return data.decode().splitlines()


async def _exchange(control: str, lines: list[str]) -> list[str]:
    """Lines to an instance's control socket on one connection, and its
    answers (one result line per command, `error: ...` for a refused one)."""
    reader, writer = await asyncio.open_unix_connection(control)
    try:
        writer.write("".join(line + "\n" for line in lines).encode())
        writer.write_eof()
        return (await asyncio.wait_for(reader.read(), 10)).decode().splitlines()
    finally:
        writer.close()
