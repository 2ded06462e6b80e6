"""Controller mode: the switch holds the established sessions, the
controller decides every new flow (docs/controller.md).

The switch punts a flow's first packet; the NAT core opens its session
(NatPunts, nat/core.py) and the writer installs its two entries, then the
packets that waited go back through the pipeline. The switch's idle
notification expires a session: its entries are deleted, then it is
forgotten (its mapping with its last session, the port resting). After a
restart of either side the switch's entries are adopted as sessions the
configuration still allows (Nat.restore) and the rest swept.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator, Sequence

from quicknat.addr import format_ipv4
from quicknat.config.model import Config
from quicknat.controller.context import ModeContext
from quicknat.controller.install_state import Held, InstallState
from quicknat.controller.punts import NatPunts
from quicknat.controller.recovery import HeldEntries
from quicknat.controller.status import SessionQuery
from quicknat.controller.writer import SwitchWriter, new_writer
from quicknat.events import EventLogger
from quicknat.ipfix import FLUSH_INTERVAL_S as IPFIX_FLUSH_S
from quicknat.nat import tcp_state
from quicknat.nat.core import Nat, Refusal
from quicknat.nat.fragments import Outcome
from quicknat.nat.session import FlowKey, Session
from quicknat.rules import Protocol

log = logging.getLogger("quicknat.controller")

# The oldest age a recovered entry's metadata is believed for (a wrong clock).
_MAX_AGE_S = 10 * 365 * 86400
# An operator's delete of sessions whose writes are out waits this long for
# them at most, looking again every DELETE_RETRY_S (a Write takes ~0.5 ms).
DELETE_WAIT_S, DELETE_RETRY_S = 2.0, 0.002


class ControllerMode:
    def __init__(self, context: ModeContext) -> None:
        config = context.config
        self.stats = context.stats
        self.now = context.now
        self.events = events = EventLogger(config.logging)
        # The core refuses beyond the switch's tables too (Refusal.TABLE_FULL,
        # RES-4), as swpath's does beyond its own.
        self.nat = Nat(
            config,
            on_mapping=events,
            on_quota=events.quota,
            capacity=context.target.session_capacity,
            on_session=events.session if events.ipfix_sessions else None,
            on_exhausted=events.exhausted,
        )
        self._flusher: asyncio.Task[None] | None = None
        self.writer: SwitchWriter[Session] = new_writer(context, self)
        self.punts = NatPunts(context, self.nat, self.writer)
        # Sessions an operator deleted whose DELETE is queued or out: gone
        # after it, never revived by a packet (the flow's next opens anew).
        self._operator: set[int] = set()

    @staticmethod
    def counter_names() -> tuple[str, ...]:
        """The NAT core's and the punt handlers' counters, per reason."""
        names = [
            "sessions_expired",
            "sessions_revived",
            "sessions_deleted",
            "sessions_recovered",
            "sessions_reinstalled",
            "hairpin.opened",
            "tcp_rst.routed",
            "tcp_state.segments",
            "tcp_state.no_session",
            "tcp_segment.routed",
            "tcp_segment.no_session",
            "ipv4_options.translated",
            "ipv4_options.hairpin",
            "ipv4_options.source_route",
            "ipv4_options.malformed",
            "packet_in.malformed",
            "packet_in.reinjected",
            "packet_in.install_in_flight",
            "icmp_error.translated",
            "icmp_error.no_session",
            "icmp_error.malformed",
        ]
        names += [f"refused.{r.name.lower()}" for r in Refusal]
        names += [f"refused.hairpin.{r.name.lower()}" for r in Refusal]
        names += [f"fragment.{o.name.lower()}" for o in Outcome]
        names += ["fragment.translated", "fragment.no_session", "fragment.hairpin"]
        names += ["fragment.malformed", "fragment.timed_out"]
        return tuple(names)

    # -- the writer's outcomes (writer.Outcomes) -----------------------------------------

    def timeout(self, session: Session) -> int:
        return self.nat.timeout(session)

    def installed(self, done: Sequence[tuple[Session, list[Held]]]) -> None:
        for _, packets in done:
            for payload, port in packets:
                self.punts.inject(payload, port)

    def refused(self, session: Session, packets: list[Held], full: bool) -> None:
        self._forget(session)  # its port rests, as any freed port
        if full:
            self.punts.table_full(packets)

    def deleted(self, session: Session, revived: bool) -> None:
        if session.id in self._operator:
            self._operator.discard(session.id)
            self._forget(session)  # not revived: its packets open a new one
            self.stats["sessions_deleted"] += 1
        elif revived:
            self.stats["sessions_revived"] += 1
        elif self.nat.contains(session):
            self._forget(session)
            self.stats["sessions_expired"] += 1

    def rewritten(self, session: Session, packets: list[Held]) -> None:
        for payload, port in packets:
            self.punts.inject(payload, port)

    def _forget(self, session: Session) -> None:
        """Forget a session; a hairpin partner left behind is rewritten to
        hairpin_pending (it must not translate to a freed endpoint)."""
        self.writer.forget(session)
        partner = session.partner
        self.nat.remove(session, self.now())
        if partner is not None:
            self.writer.want_rewrite(partner)

    # -- the mode (base.Mode) ---------------------------------------------------------------

    def start(self) -> None:
        """Beside the switch's stream, only the IPFIX flush interval."""
        if self.events.exporter is not None:
            self._flusher = asyncio.create_task(self._flush_events())

    async def _flush_events(self) -> None:
        # Records wait for a full message at most this long (ipfix.py).
        while True:
            await asyncio.sleep(IPFIX_FLUSH_S)
            self.events.flush()

    async def stop(self) -> None:
        """Stops the flush interval, sends what waits and closes the event
        log and the collectors' socket."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        self.events.close()

    def pipeline_pushed(self) -> None:
        """(recover, which follows, installs again what it lost)"""

    def recover(self, held: HeldEntries) -> None:
        """Adopt every session the switch holds that the configuration still
        allows (established flows keep their mappings across a controller
        restart), sweep the entries of the others, and install again what
        the switch lost (all of it after a new pipeline). A session known
        before (a reconnection, not a restart) whose entry holds another
        timeout than its TCP phase's is rewritten: the MODIFY of its last
        phase change went with the connection (RFC 7857 sec. 2.2)."""
        now = self.now()
        self.writer.lose_all(self.nat.sessions())
        adopted = 0
        for h in held.sessions:
            known = self.nat.session_for(h.in2out) is not None
            session = self.nat.restore(h.in2out, h.external, now)
            if session is None or session.out2in != h.out2in:
                self.writer.sweep("nat_in2out", h.in2out)
                self.writer.sweep("nat_out2in", h.out2in)
                continue
            if h.opened_ms:  # its age, from when its entry says it opened
                age = min(max(time.time() - h.opened_ms / 1000, 0.0), _MAX_AGE_S)
                session.created = now - age
            self.writer.adopt(session)
            if known and h.idle_timeout_s != self.writer.entry_timeout(session):
                self.writer.want_rewrite(session)
            adopted += 1
        for table, key in held.halves:
            self.writer.sweep(table, key)
        missing = [s for s in self.nat.sessions() if self.writer.state(s) is None]
        for session in missing:
            self.writer.queue(session)
        # Hairpin entries as the restored partners say (one may not have come back).
        for session in self.nat.sessions():
            if session.hairpin:
                self.writer.want_rewrite(session)
        self.stats["sessions_recovered"] += adopted
        self.stats["sessions_reinstalled"] += len(missing)
        log.info(
            "recovered %d sessions from the switch, %d to install again, %d stale entries",
            adopted,
            len(missing),
            len(held.sessions) - adopted + len(held.halves),
        )

    def idle(self, key: FlowKey) -> None:
        session = self.nat.session_for(key)
        if session is not None:
            self.writer.expire(session)

    async def prepare(self, running: Config, new: Config, flush: bool) -> None:
        """The switch's static entries are the whole change's outside part."""

    def apply(self, new: Config, removed: set[int], flush: bool) -> str:
        """The core gets the new rules and settings; with `flush` the sessions
        of removed or changed rules are deleted."""
        self.nat.reconfigure(new)
        self.punts.config = new
        if not flush:
            return ""
        gone = [s for s in list(self.nat.sessions()) if s.rule_id in removed]
        deleted = sum(self._delete(s) for s in gone)
        self.writer.flush()
        return f"; {deleted} sessions deleted"

    def _delete(self, session: Session) -> bool:
        """An operator deletes the session: its entries with the next flush,
        then the session, as an expiry but never revived by a packet (the
        flow's next packet opens a new session). False when a write of its
        entries is out (retry after it)."""
        state = self.writer.state(session)
        if state in (InstallState.INSTALLING, InstallState.DELETING):
            return False
        if state in (InstallState.INSTALLED, InstallState.REWRITING, InstallState.EXPIRING):
            self.writer.expire(session)  # (EXPIRING already is)
            self._operator.add(session.id)
        else:  # no entries in the switch: nothing to delete there
            self._forget(session)
            self.stats["sessions_deleted"] += 1
        return True

    def _selected(self, query: SessionQuery) -> Iterator[Session]:
        for s in self.nat.sessions():
            ports = (s.internal.port, s.external.port, s.remote_port)
            if query.matches(s.protocol, s.internal.address, s.remote_address, ports, s.rule_id):
                yield s

    async def delete_sessions(self, query: SessionQuery) -> int:
        """The selected sessions' entries are deleted and the sessions
        forgotten, their ports resting as after an expiry. A session whose
        INSERT is out (its first packet left before it: punts.py) is deleted
        once that write has answered; the wait is bounded (DELETE_WAIT_S),
        and what a switch that does not answer leaves is not counted."""
        done: set[int] = set()
        for _ in range(int(DELETE_WAIT_S / DELETE_RETRY_S) + 1):
            waiting = 0
            for session in list(self._selected(query)):
                if session.id not in done:
                    if self._delete(session):
                        done.add(session.id)
                    else:
                        waiting += 1
            self.writer.flush()
            if not waiting:
                break
            await asyncio.sleep(DELETE_RETRY_S)
        return len(done)

    def session_count(self) -> int:
        return self.nat.session_count

    async def session_rows(self, query: SessionQuery) -> list[dict[str, object]]:
        now = self.now()
        return [self._row(s, now) for s in self._selected(query)]

    def _row(self, s: Session, now: float) -> dict[str, object]:
        state = self.writer.state(s)
        row: dict[str, object] = {
            "id": s.id,
            "protocol": s.protocol,
            "origin": s.origin.value,
            "rule": s.rule_id,
            "internal": f"{format_ipv4(s.internal.address)}:{s.internal.port}",
            "external": f"{format_ipv4(s.external.address)}:{s.external.port}",
            "remote": f"{format_ipv4(s.remote.address)}:{s.remote.port}",
            "age_s": round(now - s.created, 1),
            "timeout_s": self.nat.timeout(s),
            "installed": self.writer.in_switch(s),
            "install": state.value if state is not None else "none",
        }
        if s.hairpin:
            row["hairpin_to"] = s.partner.id if s.partner else None
        if s.protocol == Protocol.TCP:
            row["tcp_state"] = tcp_state.phase(s.tcp).value
        return row

    async def stats_view(self) -> dict[str, object]:
        """The controller's own counters are the whole of it."""
        return {}

    def pools(self) -> list[dict[str, object]]:
        """Each configured pool's ports per protocol and how many are in use,
        the form swpath's stats give too (metrics.py: quicknat_pool_ports*)."""
        rows: list[dict[str, object]] = []
        for pool in self.nat.config.pools:
            ports, used = self.nat.allocators[pool.name].usage()
            in_use = {"tcp": used.get(6, 0), "udp": used.get(17, 0), "icmp": used.get(1, 0)}
            rows.append({"name": pool.name, "ports": ports, "in_use": in_use})
        return rows
