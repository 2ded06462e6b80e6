"""The P4Runtime controller service: `quicknat controller`.

One asyncio task drains the switch's stream (packet-ins, idle-timeout
notifications). Each drain turns the new flows it found into sessions (the NAT
core decides; no I/O there) and sends their entries, both directions of every
session, in one WriteRequest; one such write is out at a time (more only for
full batches), so the flows that arrive during a round trip share the next one
and a burst of new flows costs a few round trips, not one per flow. When a write
returns, each session's first packets are sent back through the pipeline
(packet-out, INJECT) and are translated by the entries just installed.

The controller survives restarts of either side: on connect it keeps a pipeline
that is already installed (same cookie) and adopts the sessions it reads back,
or pushes the pipeline and everything it knows to a switch that lost it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from finsy.proto import p4r

from quicknat.addr import format_ipv4
from quicknat.config.model import Config, Zone
from quicknat.controller import program
from quicknat.controller import stats as stats_module
from quicknat.controller.install_state import IN_SWITCH, InstallState
from quicknat.controller.program import PacketOutMode, Pipeline, PuntReason
from quicknat.controller.stats import Stats
from quicknat.controller.status import serve_status
from quicknat.controller.write_path import WritePath
from quicknat.events import EventLogger
from quicknat.icmp_error import translate as translate_icmp_error
from quicknat.icmp_gen import Kind, Originator
from quicknat.metrics import serve_metrics
from quicknat.nat import tcp_state
from quicknat.nat.allocator import Endpoint
from quicknat.nat.core import Nat, Refusal, Refused
from quicknat.nat.fragments import DatagramKey, Outcome, Reassembly
from quicknat.nat.session import FlowKey, Session
from quicknat.p4rt.client import P4RuntimeClient, P4RuntimeError
from quicknat.p4rt.entities import (
    action_params,
    exact_fields,
    packet_metadata,
    update,
)
from quicknat.p4rt.p4info import decode
from quicknat.packet import (
    TCP,
    PacketError,
    fragment_of,
    parse_flow,
    rewrite_addresses,
    rewrite_flow,
    tcp_flags,
)

log = logging.getLogger(__name__)

INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE
ALREADY_EXISTS = 6  # google.rpc.Code


class Punt(NamedTuple):
    """A packet-in: the packet, where it came in, and why the switch sent it."""

    payload: bytes
    zone: Zone
    port: int
    mtu: int  # FRAG_NEEDED: the egress MTU the packet was over
    reason: PuntReason


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
    for full batches (Controller._flush)."""
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


class Controller:
    def __init__(self, config: Config, options: ControllerOptions, pipeline: Pipeline) -> None:
        self.config = config
        self.options = options
        self.pipeline = pipeline
        self.p4info = pipeline.p4info
        events = EventLogger(config.logging)
        self.stats = Stats.seeded(_counter_names())
        self.icmp = Originator(config, self.stats)
        self.client = P4RuntimeClient(options.grpc_addr, options.device_id, options.election_id)
        self.zone_of_port = {i.port: i.zone for i in config.interfaces}
        self.static = program.static_entries(self.p4info, config)
        # The ports of fragmented datagrams (FRAGMENT packet-ins, IN-IP-8).
        self.fragments = Reassembly()
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
            self.client,
            self.nat,
            self.nat_entries,
            self.stats,
            batch_max=options.batch_max,
            writes_in_flight=options.writes_in_flight,
            capacity=capacity,
            inject=self._inject,
            refused=self._answer_refused,
            now=self.now,
        )
        self._in2out_id = self.p4info.table("nat_in2out").id
        self._out2in_id = self.p4info.table("nat_out2in").id
        # Per-packet metadata, resolved once: packet-in field ids -> names, and
        # the packet-out header for each (port, mode) the controller sends with.
        self._packet_in_fields = {
            f.id: f.name for f in self.p4info.packet_metadata("packet_in").values()
        }
        self._packet_out_headers: dict[tuple[int, PacketOutMode], list[p4r.PacketMetadata]] = {}
        # One handler per punt reason (program.PuntReason).
        self._handlers: dict[int, Callable[[Punt], None]] = {
            PuntReason.NEW_FLOW: self._on_new_flow,
            PuntReason.NEW_FLOW_DNAT: self._on_new_flow,
            PuntReason.TCP_RST: self._on_tcp_rst,
            PuntReason.TCP_STATE: self._on_tcp_state,
            PuntReason.ICMP_ERROR: self._on_icmp_error,
            PuntReason.FRAGMENT: self._on_fragment,
            PuntReason.TIME_EXCEEDED: self._on_error_copy,
            PuntReason.FRAG_NEEDED: self._on_error_copy,
        }

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    # -- lifecycle ---------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        server = await self._start_socket()
        metrics = None
        if self.options.metrics is not None:
            host, port = self.options.metrics
            metrics = await serve_metrics(host, port, self.stats_dict, "p4")
        backoff = 0.25
        try:
            while not stop.is_set():
                try:
                    await self.client.connect()
                    await self._sync()
                    backoff = 0.25
                    self.connected.set()
                    log.info(
                        "primary for device %d at %s",
                        self.options.device_id,
                        self.options.grpc_addr,
                    )
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
            self.writes.installs.lose_all()
            await self.client.set_pipeline(
                self.p4info.proto, self.pipeline.device_config, self.pipeline.cookie
            )
            self.stats["pipeline_pushes"] += 1
            await self._write_checked([update(INSERT, e) for e in self.static], "static entries")
            await self._configure_meters()
            await self._configure_clone_session()
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
        await self._recover()

    async def _write_checked(self, updates: list[p4r.Update], what: str) -> None:
        for error in await self.client.write(updates):
            raise P4RuntimeError(f"writing {what}: update {error.index}: {error.message}")

    async def _configure_meters(self) -> None:
        meter_id = self.p4info.object_id("punt_meter")
        rate = self.options.punt_rate_pps
        updates = []
        for reason in PuntReason:
            full = (PuntReason.NEW_FLOW, PuntReason.NEW_FLOW_DNAT, PuntReason.FRAGMENT)
            pps = rate if reason in full else rate // 10
            burst = pps
            if reason in _ERROR_COPIES:  # no more than the errors icmp_gen may send
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
            if session is None or session.out2in not in out2in_keys:
                stale.append(update(DELETE, entry))
                if session is not None:
                    self.writes.forget(session)
                continue
            self.writes.installs.adopt(session.id, session)
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
            self._on_packet_in(message.packet)
        elif message.HasField("idle_timeout_notification"):
            self._on_idle_timeout(message.idle_timeout_notification)
        elif message.HasField("error"):
            self.stats["stream_errors"] += 1
            log.warning("switch reported: %s", message.error.message)
        else:
            self.stats["stream_other"] += 1

    def _on_packet_in(self, packet: p4r.PacketIn) -> None:
        self.stats["packet_in"] += 1
        names = self._packet_in_fields
        meta = {
            names[m.metadata_id]: decode(m.value) for m in packet.metadata if m.metadata_id in names
        }
        port, reason = meta.get("ingress_port", -1), meta.get("reason", 0)
        handler = self._handlers.get(reason)
        if handler is None:
            self.stats[f"packet_in.ignored.{_reason_name(reason)}"] += 1
            return
        zone = self.zone_of_port.get(port)
        if zone is None:
            self.stats["packet_in.unknown_port"] += 1
            return
        handler(Punt(packet.payload, zone, port, meta.get("mtu", 0), PuntReason(reason)))

    def _flow_key(self, punt: Punt) -> FlowKey | None:
        try:
            return parse_flow(punt.payload)
        except PacketError as exc:
            self.stats["packet_in.malformed"] += 1
            log.debug("malformed packet-in from port %d: %s", punt.port, exc)
            return None

    def _on_new_flow(self, punt: Punt, key: FlowKey | None = None) -> None:
        """NEW_FLOW, NEW_FLOW_DNAT: a packet the switch has no entry for. Its
        session (opened, or found: it raced its install) and its place in the
        write path decide whether it waits for a write or goes back at once."""
        key = key or self._flow_key(punt)
        if key is None:
            return
        flags = tcp_flags(punt.payload) if key.protocol == TCP else 0
        session = self._flow_session(punt.zone, key, flags, punt.payload, punt.port)
        if session is None:
            return
        if session.hairpin and session.partner is None and not self._open_hairpin(session, flags):
            return
        if key.protocol == TCP:
            self._track_tcp(session, key, flags)
        held = (punt.payload, punt.port)
        state = self.writes.state(session)
        if state is InstallState.REWRITING:
            # Its entry is being rewritten (a hairpin that just opened): after that.
            self.writes.hold(session, held)
        elif state in IN_SWITCH:
            # Punted before its entries were in place: they are now.
            self.stats["packet_in.reinjected"] += 1
            self._inject(punt.payload, punt.port)
        elif state in (InstallState.QUEUED, InstallState.INSTALLING):
            self.stats["packet_in.install_in_flight"] += 1
            self.writes.hold(session, held)
        else:  # new, or revived while its DELETE is out (sent after it)
            self.writes.queue(session, held)

    def _on_tcp_rst(self, punt: Punt) -> None:
        """TCP_RST: an inside RST, routed without a lookup (_route_rst), or,
        with no session to route it by, a new flow (which opens none)."""
        key = self._flow_key(punt)
        if key is not None and not self._route_rst(punt.payload, key, punt.port):
            self._on_new_flow(punt, key)

    def _on_error_copy(self, punt: Punt) -> None:
        """TIME_EXCEEDED, FRAG_NEEDED: a copy of a packet the switch dropped,
        answered with the NAT's own ICMP error (ICMP-4)."""
        self._send_icmp_error(punt.payload, punt.port, _ERROR_COPIES[punt.reason], punt.mtu)

    def _flow_session(
        self, zone: Zone, key: FlowKey, flags: int, payload: bytes, port: int
    ) -> Session | None:
        """The session of a punted packet's flow, opened if need be; None when
        the flow is refused (counted, and answered with code 13 when out of
        resources and the configuration says so, RFC 5508)."""
        if self.nat.session_for(key) is None and not self.writes.has_room():
            self.writes.table_full([(payload, port)])
            return None
        try:
            return self.nat.new_flow(zone, key, self.now(), flags)
        except Refused as exc:
            self.stats[f"refused.{exc.reason.name.lower()}"] += 1
            if exc.reason in _OUT_OF_RESOURCES and self.config.icmp.unreachable_on_exhaustion:
                self._send_icmp_error(payload, port, Kind.PROHIBITED)
            return None

    def _open_hairpin(self, session: Session, tcp_flags: int = 0) -> bool:
        """The second half of a hairpinned flow (Nat.open_hairpin). On success both
        sessions' in2out entries get each other's inside host as destination; on a
        refusal the packet is dropped and the session is installed with
        hairpin_pending, so its next packets come back here and it ages."""
        try:
            partner = self.nat.open_hairpin(session, self.now(), tcp_flags)
        except Refused as exc:
            self.stats[f"refused.hairpin.{exc.reason.name.lower()}"] += 1
            self._install_if_out(session)
            return False
        self.stats["hairpin.opened"] += 1
        for s in (session, partner):
            if self.writes.in_switch(s):
                self.writes.want_rewrite(s)
            else:  # (an insert in flight sees the stale action when it returns)
                self._install_if_out(s)
        return True

    def _install_if_out(self, session: Session) -> None:
        """Install a session that has no entries and none on their way (or
        only a DELETE, after which it is installed again)."""
        if self.writes.state(session) in (None, InstallState.DELETING):
            self.writes.queue(session)

    def _on_icmp_error(self, punt: Punt) -> None:
        """ICMP_ERROR: translate an ICMP error for one of our sessions (the
        tables cannot match its quoted packet) and have the switch route it."""
        payload, zone, port = punt.payload, punt.zone, punt.port
        try:
            translated = translate_icmp_error(payload, zone, self.nat.session_for)
        except PacketError as exc:
            self.stats["icmp_error.malformed"] += 1
            log.debug("malformed ICMP error from port %d: %s", port, exc)
            return
        if translated is None:
            self.stats["icmp_error.no_session"] += 1
            return
        self.stats["icmp_error.translated"] += 1
        self._packet_out(translated, port, PacketOutMode.ROUTE)

    def _on_fragment(self, punt: Punt) -> None:
        """FRAGMENT, RFC 4787 REQ-14 (IN-IP-8): the switch cannot keep a datagram's ports,
        so it sends every fragment that needs NAT here. The first is translated
        as a packet of its flow (which it may open), the later ones with its
        ports (nat/fragments.py); the switch routes them (ROUTE)."""
        payload, zone, port = punt.payload, punt.zone, punt.port
        now = self.now()
        try:
            fragment = fragment_of(payload)
            if fragment is None:
                raise PacketError("not a fragment")
            datagram = DatagramKey(fragment.src, fragment.dst, fragment.protocol, fragment.ident)
            key = parse_flow(payload) if fragment.first else None
        except PacketError as exc:
            self.stats["fragment.malformed"] += 1
            log.debug("malformed fragment from port %d: %s", port, exc)
            return
        if key is None:
            ports = self.fragments.later(datagram, payload, now)
            self._count_fragments_timed_out()
            if isinstance(ports, Outcome):
                self.stats[f"fragment.{ports.name.lower()}"] += 1
                return
            self._route_later_fragment(payload, datagram, ports, port)
            return
        flags = tcp_flags(payload) if key.protocol == TCP else 0
        session = self._flow_session(zone, key, flags, payload, port)
        if session is None:
            return
        if session.hairpin:  # its second half would need the ports again
            self.stats["fragment.hairpin"] += 1
            return
        if key.protocol == TCP:
            self._track_tcp(session, key, flags)
        self._install_if_out(session)  # for the flow's whole packets
        rewrite = session.in2out_rewrite if key == session.in2out else session.out2in_rewrite
        assert rewrite is not None
        self.stats["fragment.translated"] += 1
        self._packet_out(rewrite_flow(payload, rewrite), port, PacketOutMode.ROUTE)
        for held in self.fragments.first(datagram, (key.sport, key.dport), now):
            self._route_later_fragment(held, datagram, (key.sport, key.dport), port)
        self._count_fragments_timed_out()

    def _route_later_fragment(
        self, payload: bytes, datagram: DatagramKey, ports: tuple[int, int], port: int
    ) -> None:
        key = FlowKey(datagram.protocol, datagram.src, datagram.dst, *ports)
        session = self.nat.session_for(key)
        if session is None or session.hairpin:
            self.stats["fragment.no_session"] += 1
            return
        rewrite = session.in2out_rewrite if key == session.in2out else session.out2in_rewrite
        assert rewrite is not None
        self.stats["fragment.translated"] += 1
        self._packet_out(rewrite_addresses(payload, rewrite), port, PacketOutMode.ROUTE)

    def _count_fragments_timed_out(self) -> None:
        timed_out = self.fragments.timed_out
        if timed_out:
            self.stats["fragment.timed_out"] += timed_out
            self.fragments.timed_out = 0

    def _send_icmp_error(self, frame: bytes, port: int, kind: Kind, mtu: int = 0) -> None:
        """The NAT's own ICMP error about a packet that arrived on `port`
        (icmp_gen.py decides, counts and rate-limits), routed by the switch."""
        error = self.icmp.error(frame, port, kind, self.now(), mtu)
        if error is not None:
            self._packet_out(error, port, PacketOutMode.ROUTE)

    def _route_rst(self, payload: bytes, key: FlowKey, port: int) -> bool:
        """An inside RST the switch did not look up, since a hit would restart
        its entry's idle timer (RFC 7857 sec. 2.2: an outbound RST does not
        refresh): tracked (the session turns transitory), translated with its
        session's rewrite and routed by the switch. That holds for a session
        whose idle timeout fired and whose DELETE is on its way too: any other
        packet would revive it (_queue_install), a RST must not. False when it
        has no session with a rewrite: then it is handled as a new flow (which
        opens none for a RST, Nat.new_flow)."""
        session = self.nat.session_for(key)
        if session is None or key != session.in2out:
            return False
        if self.writes.state(session) not in (*IN_SWITCH, InstallState.DELETING):
            return False
        rewrite = session.in2out_rewrite
        if rewrite is None:  # a hairpin half waiting for its peer
            return False
        try:
            translated = rewrite_flow(payload, rewrite)
        except PacketError:
            self.stats["packet_in.malformed"] += 1
            return True
        self._track_tcp(session, key, tcp_flags(payload))
        self.stats["tcp_rst.routed"] += 1
        self._packet_out(translated, port, PacketOutMode.ROUTE)
        return True

    def _on_tcp_state(self, punt: Punt) -> None:
        """TCP_STATE: a copy of a SYN, FIN or RST that the switch translated."""
        key = self._flow_key(punt)
        if key is None:
            return
        session = self.nat.session_for(key)
        if session is None:
            self.stats["tcp_state.no_session"] += 1
            return
        self.stats["tcp_state.segments"] += 1
        self._track_tcp(session, key, tcp_flags(punt.payload))

    def _track_tcp(self, session: Session, key: FlowKey, flags: int) -> None:
        for changed in self.nat.tcp_segment(session, key, flags):
            self.writes.want_rewrite(changed)

    def _on_idle_timeout(self, note: p4r.IdleTimeoutNotification) -> None:
        for entry in note.table_entry:
            self.stats["idle_timeouts"] += 1
            session = self.nat.session_for(self._key(entry))
            if session is not None:
                self.writes.idle(session)

    def _answer_refused(self, packets: list[tuple[bytes, int]]) -> None:
        """A flow refused for a full table, as any flow out of resources: code
        13 to its sender if the configuration says so (RFC 5508)."""
        if packets and self.config.icmp.unreachable_on_exhaustion:
            payload, port = packets[0]
            self._send_icmp_error(payload, port, Kind.PROHIBITED)

    def _inject(self, payload: bytes, port: int) -> None:
        self._packet_out(payload, port, PacketOutMode.INJECT)

    def _packet_out(self, payload: bytes, port: int, mode: PacketOutMode) -> None:
        metadata = self._packet_out_headers.get((port, mode))
        if metadata is None:
            values = {"egress_port": 0, "ingress_port": port, "mode": mode}
            metadata = packet_metadata(self.p4info, "packet_out", values)
            self._packet_out_headers[(port, mode)] = metadata
        self.client.packet_out(payload, metadata)
        self.stats["packet_out"] += 1

    # -- visibility -----------------------------------------------------------------

    def session_rows(self) -> list[dict[str, object]]:
        now = self.now()
        rows: list[dict[str, object]] = []
        for s in self.nat.sessions():
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
                    **({"tcp_state": tcp_state.describe(s.tcp)} if s.protocol == TCP else {}),
                }
            )
        return rows

    def stats_dict(self) -> dict[str, object]:
        return {
            "sessions": self.nat.session_count,
            "installed": self.writes.installs.installed_count(),
            "connected": self.connected.is_set(),
            "stream_queue_dropped": self.client.dropped,
            "counters": self.stats.as_dict(),
        }

    async def _start_socket(self) -> asyncio.AbstractServer | None:
        if self.options.socket is None:
            return None
        return await serve_status(self.options.socket, self)


# The tables every session has entries in.
_SESSION_TABLES = frozenset({"nat_in2out", "nat_out2in"})

# Copies of packets the switch dropped, to answer with the NAT's own ICMP error.
_ERROR_COPIES = {
    PuntReason.TIME_EXCEEDED: Kind.TIME_EXCEEDED,
    PuntReason.FRAG_NEEDED: Kind.FRAG_NEEDED,
}
# Refusals answered with destination unreachable code 13 (RFC 5508, out of resources).
_OUT_OF_RESOURCES = frozenset(
    {Refusal.POOL_EXHAUSTED, Refusal.QUOTA_EXCEEDED, Refusal.SESSION_LIMIT, Refusal.TABLE_FULL}
)


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


def _reason_name(reason: int) -> str:
    try:
        return PuntReason(reason).name.lower()
    except ValueError:
        return f"reason_{reason}"
