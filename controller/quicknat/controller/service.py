"""The P4Runtime controller service: `quicknat controller`.

This module keeps the connection: arbitration, the pipeline and the
configuration's entries (switch_config.py), recovery of the switch's
sessions after a restart of either side, and one asyncio task that drains
the switch's stream. What differs between controller mode and offload mode
is the mode's, chosen once at start-up (modes/): each drain hands
packet-ins to the mode's handlers (punts.py) and idle timeouts to the mode,
then flushes the mode's writer (writer.py), which sends the sessions'
entries group-commit style: the flows that arrive during a write's round
trip share the next one, so a burst of new flows costs a few round trips,
not one per flow.

The controller survives restarts of either side: on connect it keeps a pipeline
that is already installed (same cookie) and its mode adopts the sessions read
back (recovery.py), or it pushes the pipeline and the mode installs again
everything it knows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from finsy.proto import p4r

from quicknat import __version__
from quicknat.config.model import Config
from quicknat.controller import route_view, systemd
from quicknat.controller.context import ModeContext, WriterOptions
from quicknat.controller.modes import Mode, counter_names, select
from quicknat.controller.program import ConfigMismatch, Pipeline
from quicknat.controller.reconfigure import (
    ReconfigureError,
    check_runtime_change,
    command_change,
    entry_diff,
    removed_rules,
)
from quicknat.controller.recovery import HeldEntries, flow_key, held_entries
from quicknat.controller.stats import Stats
from quicknat.controller.status import SessionQuery, serve_status
from quicknat.controller.switch_config import SwitchConfig, write_diff
from quicknat.controller.target import for_program
from quicknat.metrics import registry, serve_metrics
from quicknat.p4rt.client import P4RuntimeClient, P4RuntimeError, Tls

log = logging.getLogger(__name__)


class ResetRefused(Exception):
    """--reset against a switch that holds sessions, without --force."""


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    """How `quicknat controller` runs (its command line, cli.py)."""

    grpc_addr: str = "127.0.0.1:9559"
    """The switch's P4Runtime server."""
    device_id: int = 1
    """The switch's P4Runtime device id."""
    election_id: int = 1
    """Primary arbitration: the highest election id among controllers is primary."""
    socket: Path | None = None
    """Unix socket for `quicknat sessions` / `quicknat stats`; None: no socket."""
    batch_max: int = 256
    """Most sessions installed by one WriteRequest."""
    writes_in_flight: int = 4
    """Most install WriteRequests outstanding at once; beyond the first, only
    for full batches (writer.SwitchWriter.flush)."""
    punt_rate_pps: int = 5000
    """New-flow packet-ins per second the data plane lets through (punt_meter)."""
    reconnect_max_s: float = 10.0
    """Longest wait between reconnection attempts (exponential backoff from 0.25 s)."""
    reset: bool = False
    """Push the pipeline on the first connection even if it is installed, which
    clears the switch's tables (a clean start, e.g. for tests); refused while
    the switch holds sessions unless `force`."""
    metrics: tuple[str, int] | None = None
    """(host, port) of the Prometheus endpoint (quicknat/metrics.py); None: off."""
    force: bool = False
    """With reset: even when the switch holds sessions (their flows break)."""
    config_path: Path | None = None
    """The configuration file `reload` (and SIGHUP) reads again."""
    tls: Tls | None = None
    """TLS to the switch (mutual with a certificate); None: plaintext."""
    standby: bool = False
    """When another controller (a higher election id) is primary, stay
    connected as its backup and take over when it goes, instead of retrying."""


class Controller:
    def __init__(self, config: Config, options: ControllerOptions, pipeline: Pipeline) -> None:
        self.config = config
        self.options = options
        self.p4info = pipeline.p4info
        self.client = P4RuntimeClient(
            options.grpc_addr, options.device_id, options.election_id, options.tls
        )
        self.target = for_program(self.p4info)
        # a learning switch runs the timeout classes the instances are told
        # of (config/leases.py): they go with the program it is given
        self.pipeline = (
            pipeline.with_learn_timeouts(config.offload.learn_timeouts)
            if self.target.learns
            else pipeline
        )
        self.switch_config = SwitchConfig.of(
            self.p4info, config, options.punt_rate_pps, self.target
        )
        self.connected = asyncio.Event()
        self._reset_pending = options.reset
        self.stats = Stats()
        # Writes and packet-outs go on whichever connection is up.
        context = ModeContext(
            config=config,
            p4info=self.p4info,
            target=self.target,
            stats=self.stats,
            write=lambda updates: self.client.write(updates),
            packet_out=lambda payload, metadata: self.client.packet_out(payload, metadata),
            now=self.now,
            writer_options=WriterOptions(options.batch_max, options.writes_in_flight),
        )
        self.mode: Mode = select(context)
        self._packet_in = self.mode.punts.packet_in
        for name in counter_names(self.mode):
            self.stats[name] = 0
        self._in2out_id = self.p4info.table("nat_in2out").id
        self._out2in_id = self.p4info.table("nat_out2in").id

    @staticmethod
    def now() -> float:
        """The event loop's clock (asyncio's BaseEventLoop.time() is
        time.monotonic()), read without finding the running loop: offload
        mode asks per session event."""
        return time.monotonic()

    # -- lifecycle ---------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        server = await self._start_socket()
        metrics = None
        if self.options.metrics is not None:
            host, port = self.options.metrics
            metrics = await serve_metrics(host, port, registry(self.stats_dict, "p4"))
        backoff = 0.25
        self.mode.start()
        try:
            while not stop.is_set():
                try:
                    await self.client.connect(standby=self.options.standby)
                    if not self.client.primary:
                        await self._stand_by(stop)
                        if stop.is_set():
                            break
                    await self._sync()
                    backoff = 0.25
                    self.connected.set()
                    self.mode.writer.online()  # what waited for the connection goes now
                    status = (
                        f"primary for device {self.options.device_id} at {self.options.grpc_addr}"
                    )
                    log.info("%s", status)
                    systemd.notify(f"READY=1\nSTATUS={status}")
                    await self._serve(stop)
                except P4RuntimeError as exc:
                    log.warning("%s; next attempt in %.2g s", exc, backoff)
                    self.stats["reconnects"] += 1
                finally:
                    self.connected.clear()
                    await self.mode.writer.drain()
                if not stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), backoff)
                    backoff = min(backoff * 2, self.options.reconnect_max_s)
        finally:
            systemd.notify("STOPPING=1")
            await self.mode.stop()
            await self.client.close()
            if metrics is not None:
                metrics.close()
                await metrics.wait_closed()
            if server is not None:
                server.close()
                await server.wait_closed()
                # asyncio (3.11) leaves a Unix socket's file behind
                if self.options.socket is not None:
                    self.options.socket.unlink(missing_ok=True)

    async def _stand_by(self, stop: asyncio.Event) -> None:
        """A backup: connected, ready, doing nothing until the switch makes it
        primary (its primary went away); then the caller syncs, which adopts
        the sessions in the switch (Mode.recover), and serves."""
        device, addr = self.options.device_id, self.options.grpc_addr
        status = f"standby for device {device} at {addr} (election id {self.options.election_id})"
        log.info("%s: another controller is primary", status)
        systemd.notify(f"READY=1\nSTATUS={status}")
        waiting = asyncio.ensure_future(self.client.wait_primary())
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not waiting.done():
                waiting.cancel()
        if waiting.done() and not waiting.cancelled():
            waiting.result()  # P4RuntimeError when the stream ended
            self.stats["takeovers"] += 1
            log.info("primary for device %d now: taking over", device)

    async def _sync(self) -> None:
        """Primary now: the pipeline, the configuration's entries, and the
        sessions, kept from the switch (same program) or installed again."""
        cookie = await self.client.get_pipeline_cookie()
        if self._reset_pending:
            if cookie == self.pipeline.cookie and not self.options.force:
                held = await self._read(self._in2out_id)
                if held:
                    raise ResetRefused(
                        f"--reset would drop the {len(held)} sessions the switch at "
                        f"{self.options.grpc_addr} holds (established flows would break); "
                        "start without --reset to keep them, or add --force"
                    )
            self._reset_pending = False
            cookie = None
        fresh = cookie != self.pipeline.cookie
        if fresh:
            log.info(
                "pushing the pipeline (switch had %s)", "none" if cookie is None else "another"
            )
            # From here the switch holds none of our entries: say so before the
            # first await, so nobody (`quicknat stats`) sees stale "installed".
            self.mode.recover(HeldEntries())
            await self.client.set_pipeline(
                self.p4info.proto, self.pipeline.device_config, self.pipeline.cookie
            )
            self.stats["pipeline_pushes"] += 1
            self.mode.pipeline_pushed()
        await self.switch_config.write(self.client, fresh)
        if not fresh:
            # Same program running: its sessions, read once, for the mode to
            # adopt or sweep (established flows keep their mappings).
            in2out, out2in = await self._read(self._in2out_id), await self._read(self._out2in_id)
            self.mode.recover(held_entries(self.p4info, in2out, out2in))

    async def _read(self, table_id: int) -> list[p4r.Entity]:
        return await self.client.read([p4r.Entity(table_entry=p4r.TableEntry(table_id=table_id))])

    # -- the miss loop -------------------------------------------------------------

    async def _serve(self, stop: asyncio.Event) -> None:
        """Consume the stream until it closes (P4RuntimeError) or `stop` is set."""
        consume = asyncio.ensure_future(self._consume())
        closed = asyncio.ensure_future(self.client.stream_closed.wait())
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({consume, closed, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (consume, closed, stopping):
                task.cancel()
        if consume.done() and not consume.cancelled():
            consume.result()  # it only ends by raising
        if closed.done() and not stopping.done():
            raise P4RuntimeError("stream to the switch closed")

    async def _consume(self) -> None:
        """The miss loop. One await per wake-up (not a wait on three futures:
        at a few thousand flows/s most wake-ups find one message), then a
        synchronous drain of what else has arrived, so concurrent new flows
        share a write."""
        queue, handle = self.client.messages, self._handle
        writer, most = self.mode.writer, 4 * self.options.batch_max
        while True:
            handle(await queue.get())
            while not queue.empty() and writer.installs.queued() < most:
                handle(queue.get_nowait())
            writer.flush()

    def _handle(self, message: p4r.StreamMessageResponse) -> None:
        if message.HasField("packet"):
            self._packet_in(message.packet)
        elif message.HasField("idle_timeout_notification"):
            for entry in message.idle_timeout_notification.table_entry:
                self.stats["idle_timeouts"] += 1
                self.mode.idle(flow_key(self.p4info, entry))
        elif message.HasField("error"):
            self.stats["stream_errors"] += 1
            log.warning("switch reported: %s", message.error.message)
        else:
            self.stats["stream_other"] += 1

    # -- run-time configuration (reconfigure.py) -----------------------------------

    async def line_command(self, line: str) -> list[str]:
        """swpath's run-time commands, on the P4 path: `rules`, `rule add ...`,
        `rule del N [flush]`, `reload [flush] [config PATH]`. Result lines, or
        ReconfigureError (a ValueError) with the reason."""
        change = command_change(line, self.config, self.options.config_path)
        if isinstance(change, list):
            return change
        return await self.reconfigure(change.config, change.flush)

    async def reconfigure(self, new: Config, flush: bool = False) -> list[str]:
        """Apply a new configuration at run time: the mode prepares (offload:
        every instance takes the change first), the switch gets the
        difference of the configuration's entries, then the mode applies it;
        established sessions keep their mappings, or, with `flush`, those of
        removed or changed rules are deleted (their flows' next packets
        decide again)."""
        check_runtime_change(self.config, new)
        try:
            wanted = SwitchConfig.of(self.p4info, new, self.options.punt_rate_pps, self.target)
        except ConfigMismatch as exc:
            raise ReconfigureError(str(exc)) from None
        await self.mode.prepare(self.config, new, flush)
        diff = entry_diff(self.switch_config.table_entries(), wanted.table_entries())
        if diff and self.connected.is_set():
            errors = await write_diff(self.client, diff)
            if errors:
                updates = len(diff.deletes) + len(diff.modifies) + len(diff.inserts)
                raise ReconfigureError(
                    f"the switch refused {len(errors)} of {updates} updates: {errors[0].message}"
                )
        # (not connected: the next sync writes them)
        removed = removed_rules(self.config, new)
        self.switch_config, self.config = wanted, new
        answer = f"{len(new.rules)} rules; static entries: {diff.describe()}"
        answer += self.mode.apply(new, removed, flush)
        self.stats["reconfigured"] += 1
        log.info("reconfigured: %s", answer)
        return [answer]

    async def reload_from_file(self) -> None:
        """SIGHUP: `reload` from the configuration file, logged."""
        try:
            await self.line_command("reload")
        except ReconfigureError as exc:
            log.warning("reload refused: %s", exc)

    # -- visibility (status.py, metrics.py) -----------------------------------------

    async def delete_sessions(self, query: SessionQuery) -> int:
        return await self.mode.delete_sessions(query)

    async def session_rows(self, query: SessionQuery | None = None) -> list[dict[str, object]]:
        return await self.mode.session_rows(query or SessionQuery())

    async def stats_answer(self) -> dict[str, object]:
        """`quicknat stats`: the controller's own, and what its mode adds."""
        return {**self.stats_dict(), **await self.mode.stats_view()}

    async def routes_answer(self) -> list[dict[str, object]] | dict[str, object]:
        """`quicknat routes`: the switch's route table as it holds it, read
        over P4Runtime (route_view.py)."""
        if not self.connected.is_set():
            return {"error": f"routes: not connected to the switch at {self.options.grpc_addr}"}
        table = self.p4info.table(route_view.TABLE)
        try:
            entities = await self._read(table.id)
        except P4RuntimeError as exc:
            return {"error": f"routes: the switch at {self.options.grpc_addr}: {exc}"}
        entries = [entity.table_entry for entity in entities]
        return route_view.route_rows(self.p4info, self.config, entries)

    def counters_answer(self) -> dict[str, object]:
        """`counters` on the socket: the controller's own, asking nobody
        (status.py says why it exists beside `stats`)."""
        return {"counters": self.stats.as_dict()}

    def stats_dict(self) -> dict[str, object]:
        return {
            "sessions": self.mode.session_count(),
            "installed": self.mode.writer.installed_count(),
            "connected": self.connected.is_set(),
            "stream_queue_dropped": self.client.dropped,
            "pools": self.mode.pools(),
            "counters": self.stats.as_dict(),
            "histograms": self.mode.writer.latency.as_dict(),
            "version": __version__,
        }

    async def _start_socket(self) -> asyncio.AbstractServer | None:
        if self.options.socket is None:
            return None
        return await serve_status(self.options.socket, self)
