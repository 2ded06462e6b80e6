"""The P4Runtime controller service: `quicknat controller`.

This module keeps the connection: arbitration, the pipeline, the static
entries, recovery of the switch's sessions after a restart of either side, and
one asyncio task that drains the switch's stream. Each drain hands packet-ins
to their handlers (punts.py: the NAT core decides, no I/O there) and idle
timeouts to the write path, then flushes the write path (write_path.py), which
sends the new sessions' entries, both directions of every session, in one
WriteRequest; one such write is out at a time (more only for full batches), so
the flows that arrive during a round trip share the next one and a burst of
new flows costs a few round trips, not one per flow. When a write returns, each
session's first packets are sent back through the pipeline (packet-out,
INJECT) and are translated by the entries just installed.

The controller survives restarts of either side: on connect it keeps a pipeline
that is already installed (same cookie) and adopts the sessions it reads back,
or pushes the pipeline and everything it knows to a switch that lost it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from finsy.proto import p4r

from quicknat.addr import format_ipv4
from quicknat.config import ConfigError, load_config
from quicknat.config.commands import rule_command, runtime_commands
from quicknat.config.model import Config
from quicknat.controller import program, systemd
from quicknat.controller import stats as stats_module
from quicknat.controller.install_state import InstallState
from quicknat.controller.offload import OffloadManager
from quicknat.controller.offload_io import OffloadIO
from quicknat.controller.program import ConfigMismatch, Pipeline
from quicknat.controller.punts import ERROR_COPIES, Punts
from quicknat.controller.reconfigure import (
    ReconfigureError,
    check_runtime_change,
    entry_diff,
    rule_from_words,
    with_rule,
    without_rule,
)
from quicknat.controller.stats import Stats
from quicknat.controller.status import SessionQuery, serve_status
from quicknat.controller.write_path import WritePath
from quicknat.events import EventLogger
from quicknat.icmp_gen import Kind
from quicknat.metrics import serve_metrics
from quicknat.nat import tcp_state
from quicknat.nat.allocator import Endpoint
from quicknat.nat.core import Nat, Refusal
from quicknat.nat.fragments import Outcome
from quicknat.nat.session import FlowKey, Session
from quicknat.p4.constants import PuntReason
from quicknat.p4rt.client import P4RuntimeClient, P4RuntimeError, Tls
from quicknat.p4rt.entities import (
    action_params,
    exact_fields,
    update,
)
from quicknat.packet import (
    TCP,
)

log = logging.getLogger(__name__)

INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE
ALREADY_EXISTS = 6  # google.rpc.Code


class ResetRefused(Exception):
    """--reset against a switch that holds sessions, without --force."""


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    grpc_addr: str = "127.0.0.1:9559"
    """The switch's P4Runtime server."""
    device_id: int = 1
    election_id: int = 1
    """Primary arbitration: the highest election id among controllers is primary."""
    socket: Path | None = None
    """Unix socket for `quicknat sessions` / `quicknat stats`; None: no socket."""
    batch_max: int = 256
    """Most sessions installed by one WriteRequest."""
    writes_in_flight: int = 4
    """Most install WriteRequests outstanding at once; beyond the first, only
    for full batches (WritePath.flush)."""
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
        self.pipeline = pipeline
        self.p4info = pipeline.p4info
        events = EventLogger(config.logging)
        self.stats = Stats.seeded(_counter_names())
        self.client = P4RuntimeClient(
            options.grpc_addr, options.device_id, options.election_id, options.tls
        )
        self.static = program.static_entries(self.p4info, config)
        # Sessions the switch's connection tables hold (their P4Info size): a
        # flow beyond it is refused before a port is taken or a write tried.
        # (BMv2's P4Runtime server answers a full table with UNKNOWN, not the
        # RESOURCE_EXHAUSTED the specification asks for, handled too.)
        capacity = min(
            t.size for t in self.p4info.proto.tables if t.preamble.alias in _SESSION_TABLES
        )
        # The core refuses beyond it too (Refusal.TABLE_FULL), as swpath's does.
        self.nat = Nat(config, on_mapping=events, on_quota=events.quota, capacity=capacity)
        self.connected = asyncio.Event()
        self._reset_pending = options.reset
        self.nat_entries = program.NatEntries(self.p4info)
        # Every write of sessions' entries, and each session's install state.
        self.writes = WritePath(
            lambda updates: self.client.write(updates),
            self.nat,
            self.nat_entries,
            self.stats,
            batch_max=options.batch_max,
            writes_in_flight=options.writes_in_flight,
            capacity=capacity,
            inject=lambda payload, port: self.punts.inject(payload, port),
            refused=lambda packets: self.punts.answer_refused(packets),
            now=self.now,
        )
        # One handler per punt reason; packet-outs go on whichever stream is up.
        self.punts = Punts(
            config,
            self.p4info,
            self.nat,
            self.writes,
            self.stats,
            lambda payload, metadata: self.client.packet_out(payload, metadata),
            self.now,
        )
        self._in2out_id = self.p4info.table("nat_in2out").id
        self._out2in_id = self.p4info.table("nat_out2in").id
        # Offload mode ([[slow_path]]): the sessions are the instances', the
        # switch their cache (docs/offload.md); controller mode without them.
        self.offload: OffloadIO | None = None
        if config.slow_paths:
            manager = OffloadManager(
                self.nat_entries,
                config.timeouts,
                config.public_prefixes(),
                self.stats,
                lambda updates: self.client.write(updates),
                lambda instance, lines: self._offload_command(instance, lines),
                capacity=capacity,
                instances=len(config.slow_paths),
                batch_max=options.batch_max,
                now=self.now,
            )
            self.offload = OffloadIO(
                manager,
                config.slow_paths,
                self.stats,
                self.connected,
                config.offload.batch_window_ms,
            )
        self.slow_path = program.slow_path_entries(self.p4info, config)

    def _offload_command(self, instance: int, lines: list[str]) -> None:
        assert self.offload is not None
        self.offload.command(instance, lines)

    @staticmethod
    def now() -> float:
        """The event loop's clock (asyncio's BaseEventLoop.time() is
        time.monotonic()), read without finding the running loop: the
        offload manager asks per session event."""
        return time.monotonic()

    # -- lifecycle ---------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        server = await self._start_socket()
        metrics = None
        if self.options.metrics is not None:
            host, port = self.options.metrics
            metrics = await serve_metrics(host, port, self.stats_dict, "p4")
        backoff = 0.25
        if self.offload is not None:
            self.offload.start()
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
                    if self.offload is not None:
                        self.offload.kick()  # what the manager queued while not connected
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
                    await self.writes.drain()
                if not stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), backoff)
                    backoff = min(backoff * 2, self.options.reconnect_max_s)
        finally:
            systemd.notify("STOPPING=1")
            if self.offload is not None:
                await self.offload.stop()
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
        the sessions in the switch (_recover), and serves."""
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
        cookie = await self.client.get_pipeline_cookie()
        if self._reset_pending:
            if cookie == self.pipeline.cookie and not self.options.force:
                held = await self.client.read(
                    [p4r.Entity(table_entry=p4r.TableEntry(table_id=self._in2out_id))]
                )
                if held:
                    raise ResetRefused(
                        f"--reset would drop the {len(held)} sessions the switch at "
                        f"{self.options.grpc_addr} holds (established flows would break); "
                        "start without --reset to keep them, or add --force"
                    )
            self._reset_pending = False
            cookie = None
        if cookie != self.pipeline.cookie:
            log.info(
                "pushing the pipeline (switch had %s)", "none" if cookie is None else "another"
            )
            # From here the switch holds none of our entries: say so before the
            # first await, so nobody (`quicknat stats`) sees stale "installed".
            sessions = list(self.nat.sessions())
            self.writes.installs.lose_all(sessions)
            if self.offload is not None:
                # an empty switch: refilled from the instances (the writer
                # waits for the connection, set once this sync is done)
                self.offload.recover([], [])
            await self.client.set_pipeline(
                self.p4info.proto, self.pipeline.device_config, self.pipeline.cookie
            )
            self.stats["pipeline_pushes"] += 1
            await self._write_checked([update(INSERT, e) for e in self.static], "static entries")
            await self._configure_meters()
            await self._configure_clone_session()
            await self._configure_slow_paths()
            await self.writes.install_now(sessions)
            self.stats["sessions_reinstalled"] += len(sessions)
            return
        # Same program already running: keep its state, make static entries match
        # the configuration, and adopt the sessions it holds.
        errors = await self.client.write([update(INSERT, e) for e in self.static])
        retry = [update(MODIFY, self.static[e.index]) for e in errors if e.code == ALREADY_EXISTS]
        await self._write_checked(retry, "static entries")
        await self._configure_meters()
        await self._configure_clone_session()
        await self._configure_slow_paths()
        if self.offload is not None:
            await self._recover_offloaded()
        else:
            await self._recover()

    async def _write_checked(self, updates: list[p4r.Update], what: str) -> None:
        for error in await self.client.write(updates):
            raise P4RuntimeError(f"writing {what}: update {error.index}: {error.message}")

    async def _configure_meters(self) -> None:
        meter_id = self.p4info.object_id("punt_meter")
        rate = self.options.punt_rate_pps
        updates = []
        for reason in PuntReason:
            if reason is PuntReason.NONE:
                continue
            full = (PuntReason.NEW_FLOW, PuntReason.NEW_FLOW_DNAT, PuntReason.FRAGMENT)
            pps = rate if reason in full else rate // 10
            burst = pps
            if reason in ERROR_COPIES:  # no more than the errors icmp_gen may send
                pps, burst = self.config.icmp.rate, self.config.icmp.burst
            config = p4r.MeterConfig(cir=pps, cburst=burst, pir=pps, pburst=burst)
            entry = p4r.MeterEntry(
                meter_id=meter_id, index=p4r.Index(index=int(reason)), config=config
            )
            updates.append(p4r.Update(type=MODIFY, entity=p4r.Entity(meter_entry=entry)))
        await self._write_checked(updates, "punt meter")

    async def _configure_clone_session(self) -> None:
        entity = program.cpu_clone_session()
        errors = await self.client.write([p4r.Update(type=INSERT, entity=entity)])
        if errors and errors[0].code == ALREADY_EXISTS:
            errors = await self.client.write([p4r.Update(type=MODIFY, entity=entity)])
        for error in errors:
            raise P4RuntimeError(f"writing the CPU clone session: {error.message}")

    async def _configure_slow_paths(self) -> None:
        """Offload mode's members, group and tables, in that order (each names
        the one before); what is there already is made to match."""
        for stage in self.slow_path:
            errors = await self.client.write([p4r.Update(type=INSERT, entity=e) for e in stage])
            retry = [
                p4r.Update(type=MODIFY, entity=stage[e.index])
                for e in errors
                if e.code == ALREADY_EXISTS
            ]
            await self._write_checked(retry, "slow path entries")
            for error in errors:
                if error.code != ALREADY_EXISTS:
                    raise P4RuntimeError(f"writing slow path entries: {error.message}")

    async def _recover_offloaded(self) -> None:
        """Offload mode's recovery: the sessions' entries the switch holds, as
        (in2out, out2in) keys, for the offload manager to adopt as the
        instances' snapshots claim them (and sweep the rest)."""
        assert self.offload is not None
        in2out = await self.client.read(
            [p4r.Entity(table_entry=p4r.TableEntry(table_id=self._in2out_id))]
        )
        out2in = await self.client.read(
            [p4r.Entity(table_entry=p4r.TableEntry(table_id=self._out2in_id))]
        )
        out_keys = {self._key(e.table_entry) for e in out2in}
        pairs = []
        halves = []  # an entry without its other half: swept with the rest
        for entity in in2out:
            key = self._key(entity.table_entry)
            _, params = action_params(self.p4info, entity.table_entry)
            address, port = params.get("addr", 0), params.get("port", 0)
            icmp = key.protocol == 1
            back = FlowKey(key.protocol, key.dst, address, port if icmp else key.dport, port)
            if back in out_keys:
                pairs.append((key, back))
                out_keys.discard(back)
            else:
                halves.append(("nat_in2out", key))
        halves += [("nat_out2in", k) for k in out_keys]
        self.offload.recover(pairs, halves)
        log.info("offload: %d sessions in the switch to reconcile", len(in2out))

    async def _recover(self) -> None:
        """Rebuild sessions from the switch's NAT tables (P4Runtime Read)."""
        now = self.now()
        in2out = await self.client.read(
            [p4r.Entity(table_entry=p4r.TableEntry(table_id=self._in2out_id))]
        )
        out2in = await self.client.read(
            [p4r.Entity(table_entry=p4r.TableEntry(table_id=self._out2in_id))]
        )
        out2in_keys = {self._key(e.table_entry) for e in out2in}
        stale: list[p4r.Update] = []
        adopted: set[FlowKey] = set()
        for entity in in2out:
            entry = entity.table_entry
            key = self._key(entry)
            _, params = action_params(self.p4info, entry)
            # rewrite_src: addr, port; rewrite_src_dst, hairpin_pending: src_addr, src_port
            external = Endpoint(
                params.get("addr", params.get("src_addr", 0)),
                params.get("port", params.get("src_port", 0)),
            )
            session = self.nat.restore(key, external, now)
            if session is not None and len(entry.metadata) == 8:
                # its age, from when its entry says it opened (write_path.py)
                opened_s = int.from_bytes(entry.metadata, "big") / 1000
                session.created = now - min(max(time.time() - opened_s, 0.0), 10 * 365 * 86400)
            if session is None or session.out2in not in out2in_keys:
                stale.append(update(DELETE, entry))
                if session is not None:
                    self.writes.forget(session)
                continue
            self.writes.installs.adopt(session)
            adopted.add(session.out2in)
        stale += [
            update(DELETE, e.table_entry) for e in out2in if self._key(e.table_entry) not in adopted
        ]
        await self.client.write(stale)
        missing = [s for s in self.nat.sessions() if self.writes.state(s) is None]
        if missing:
            await self.writes.install_now(missing)
        # Hairpin entries as the restored partners say (one may not have come back).
        for session in self.nat.sessions():
            if session.hairpin:
                self.writes.want_rewrite(session)
        self.writes.flush()
        self.stats["sessions_recovered"] += len(adopted)
        self.stats["stale_entries_deleted"] += len(stale)
        log.info(
            "recovered %d sessions from the switch, deleted %d stale entries",
            len(adopted),
            len(stale),
        )

    def _key(self, entry: p4r.TableEntry) -> FlowKey:
        f = exact_fields(self.p4info, entry)
        return FlowKey(f["ip_proto"], f["ipv4_src"], f["ipv4_dst"], f["l4_sport"], f["l4_dport"])

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
        queue = self.client.messages
        while True:
            self._handle(await queue.get())
            while not queue.empty() and self.writes.installs.queued() < 4 * self.options.batch_max:
                self._handle(queue.get_nowait())
            self.writes.flush()

    def _handle(self, message: p4r.StreamMessageResponse) -> None:
        if message.HasField("packet"):
            self.punts.packet_in(message.packet)
        elif message.HasField("idle_timeout_notification"):
            self._on_idle_timeout(message.idle_timeout_notification)
        elif message.HasField("error"):
            self.stats["stream_errors"] += 1
            log.warning("switch reported: %s", message.error.message)
        else:
            self.stats["stream_other"] += 1

    def _on_idle_timeout(self, note: p4r.IdleTimeoutNotification) -> None:
        if self.offload is not None:
            for entry in note.table_entry:
                self.stats["idle_timeouts"] += 1
                self.offload.manager.on_idle(self._key(entry))
            return
        for entry in note.table_entry:
            self.stats["idle_timeouts"] += 1
            session = self.nat.session_for(self._key(entry))
            if session is not None:
                self.writes.idle(session)

    # -- visibility -----------------------------------------------------------------

    # -- run-time configuration (reconfigure.py) -----------------------------------

    async def line_command(self, line: str) -> list[str]:
        """swpath's run-time commands, on the P4 path: `rules`, `rule add ...`,
        `rule del N [flush]`, `reload [flush] [config PATH]`. Result lines, or
        ReconfigureError (a ValueError) with the reason."""
        words = line.split()
        if words == ["rules"]:
            return [rule_command(rule) for rule in self.config.rules]
        if words[:2] == ["rule", "add"]:
            return await self.reconfigure(with_rule(self.config, rule_from_words(words[2:])))
        if words[:2] == ["rule", "del"] and len(words) in (3, 4) and words[2].isdigit():
            if len(words) == 4 and words[3] != "flush":
                raise ReconfigureError("rule del: expected 'rule del N [flush]'")
            new = without_rule(self.config, int(words[2]))
            return await self.reconfigure(new, flush=len(words) == 4)
        if words[0] == "reload":
            flush = "flush" in words[1:]
            rest = [w for w in words[1:] if w != "flush"]
            if rest and (len(rest) != 2 or rest[0] != "config"):
                raise ReconfigureError("reload: expected 'reload [flush] [config PATH]'")
            path = Path(rest[1]) if rest else self.options.config_path
            if path is None:
                raise ReconfigureError("reload: the controller was not started from a file")
            try:
                new = load_config(path)
            except ConfigError as exc:
                raise ReconfigureError("; ".join(exc.messages)) from None
            return await self.reconfigure(new, flush)
        raise ReconfigureError(f"unknown command {line!r} (rules, rule add, rule del, reload)")

    async def reconfigure(self, new: Config, flush: bool = False) -> list[str]:
        """Apply a new configuration at run time: the switch gets the
        difference of the static entries, the NAT core the new rules and
        settings; established sessions keep their mappings, or, with `flush`,
        those of removed or changed rules are deleted (their flows' next packets
        decide again)."""
        check_runtime_change(self.config, new)
        try:
            static = program.static_entries(self.p4info, new)
            slow_path = program.slow_path_entries(self.p4info, new)
        except ConfigMismatch as exc:
            raise ReconfigureError(str(exc)) from None
        # Offload mode: the instances decide every new flow, so they get the
        # change first; the switch then steers to them what is new in scope
        # (a DNAT address: slow_path_out2in).
        if self.offload is not None:
            running = {rule.id: rule_command(rule) for rule in self.config.rules}
            refused = await self.offload.configure(runtime_commands(running, new, flush))
            if refused:
                raise ReconfigureError(
                    "; ".join(refused) + " (instances not named took the change; "
                    "the switch and the controller's configuration are unchanged)"
                )
        diff = entry_diff(
            [*self.static, *_table_entries(self.slow_path)], [*static, *_table_entries(slow_path)]
        )
        if diff and self.connected.is_set():
            updates = [update(DELETE, e) for e in diff.deletes]
            updates += [update(MODIFY, e) for e in diff.modifies]
            updates += [update(INSERT, e) for e in diff.inserts]
            errors = await self.client.write(updates)
            if errors:
                raise ReconfigureError(
                    f"the switch refused {len(errors)} of {len(updates)} updates: "
                    f"{errors[0].message}"
                )
        # (not connected: the next sync writes self.static)
        # removed, or changed (the same id matching other flows or translating
        # them otherwise): what `flush` takes the sessions of
        kept = {r.id: r for r in new.rules}
        removed = {r.id for r in self.config.rules if kept.get(r.id) != r}
        self.static, self.slow_path = static, slow_path
        self.nat.reconfigure(new)
        self.punts.config = new
        self.config = new
        self.stats["reconfigured"] += 1
        answer = f"{len(new.rules)} rules; static entries: {diff.describe()}"
        if flush:
            gone = [s for s in list(self.nat.sessions()) if s.rule_id in removed]
            answer += f"; {sum(self.writes.delete(s) for s in gone)} sessions deleted"
            self.writes.flush()
        log.info("reconfigured: %s", answer)
        return [answer]

    async def reload_from_file(self) -> None:
        """SIGHUP: `reload` from the configuration file, logged."""
        try:
            await self.line_command("reload")
        except ReconfigureError as exc:
            log.warning("reload refused: %s", exc)

    def _selected(self, query: SessionQuery) -> Iterator[Session]:
        for s in self.nat.sessions():
            ports = (s.internal.port, s.external.port, s.remote_port)
            if query.matches(s.protocol, s.internal.address, s.remote_address, ports, s.rule_id):
                yield s

    def delete_sessions(self, query: SessionQuery) -> int:
        """An operator's `sessions delete|flush`: the selected sessions' entries
        are deleted (write_path.py) and the sessions forgotten, their ports
        resting as after an expiry. The flows' next packets open new sessions."""
        deleted = sum(self.writes.delete(s) for s in list(self._selected(query)))
        self.writes.flush()
        return deleted

    def session_rows(self, query: SessionQuery | None = None) -> list[dict[str, object]]:
        now = self.now()
        rows: list[dict[str, object]] = []
        for s in self._selected(query or SessionQuery()):
            rows.append(
                {
                    "id": s.id,
                    "protocol": s.protocol,
                    "origin": s.origin.value,
                    "rule": s.rule_id,
                    "internal": f"{format_ipv4(s.internal.address)}:{s.internal.port}",
                    "external": f"{format_ipv4(s.external.address)}:{s.external.port}",
                    "remote": f"{format_ipv4(s.remote.address)}:{s.remote.port}",
                    "age_s": round(now - s.created, 1),
                    "timeout_s": self.nat.timeout(s),
                    "installed": self.writes.in_switch(s),
                    "install": _state_name(self.writes.state(s)),
                    **({"hairpin_to": s.partner.id if s.partner else None} if s.hairpin else {}),
                    **({"tcp_state": tcp_state.phase(s.tcp).value} if s.protocol == TCP else {}),
                }
            )
        return rows

    def stats_dict(self) -> dict[str, object]:
        # in offload mode the switch holds what the offload manager installed
        installs = self.offload.manager.installs if self.offload else self.writes.installs
        return {
            "sessions": self.nat.session_count,
            "installed": installs.installed_count(),
            "connected": self.connected.is_set(),
            "stream_queue_dropped": self.client.dropped,
            "pools": pool_usage(self.nat),
            "counters": self.stats.as_dict(),
        }

    async def _start_socket(self) -> asyncio.AbstractServer | None:
        if self.options.socket is None:
            return None
        return await serve_status(self.options.socket, self)


# The tables every session has entries in.
_SESSION_TABLES = frozenset({"nat_in2out", "nat_out2in"})


def pool_usage(nat: Nat) -> list[dict[str, object]]:
    """Each configured pool's ports per protocol and how many are in use, the
    form swpath's stats give too (metrics.py: quicknat_pool_ports*)."""
    rows: list[dict[str, object]] = []
    for pool in nat.config.pools:
        ports, used = nat.allocators[pool.name].usage()
        in_use = {"tcp": used.get(6, 0), "udp": used.get(17, 0), "icmp": used.get(1, 0)}
        rows.append({"name": pool.name, "ports": ports, "in_use": in_use})
    return rows


def _table_entries(stages: list[list[p4r.Entity]]) -> list[p4r.TableEntry]:
    """The table entries of slow_path_entries' stages (its members and group
    follow the instances, which change only with a restart)."""
    return [e.table_entry for stage in stages for e in stage if e.HasField("table_entry")]


def _counter_names() -> list[str]:
    """Every counter the controller keeps, for Stats.seeded."""
    names = list(stats_module.FIXED)
    names += [f"refused.{r.name.lower()}" for r in Refusal]
    names += [f"refused.hairpin.{r.name.lower()}" for r in Refusal]
    names += [f"icmp_gen.sent.{k.name.lower()}" for k in Kind]
    names += [f"fragment.{o.name.lower()}" for o in Outcome]
    return names


def _state_name(state: InstallState | None) -> str:
    return state.value if state is not None else "none"
