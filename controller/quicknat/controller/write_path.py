"""The controller's writes to the switch: sessions' entries in, rewritten, out.

Group commit: one INSERT write is out at a time, and a further one (up to
`writes_in_flight`) only for a full batch. While a write is out, new flows wait
in the batch, so under load each WriteRequest carries every flow that arrived
during the previous round trip; a lone flow on an idle controller goes at once.
(Packet-ins arrive one by one: with a write for each while slots were free,
bench-bmv2 averaged 1.7 flows per write, and each write costs both sides a gRPC
call.) Each session's place in this is its InstallState (install_state.py); the
packets punted while its entries are on their way wait there and go back
through the pipeline (packet-out INJECT) when the write is done.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from quicknat.controller.install_state import Held, Installs, InstallState
from quicknat.controller.program import NatEntries
from quicknat.controller.stats import Stats
from quicknat.nat.core import Nat
from quicknat.nat.session import Session
from quicknat.p4rt.client import UpdateError
from quicknat.p4rt.wire import EncodedUpdate

log = logging.getLogger("quicknat.controller")

NOT_FOUND = 5  # google.rpc.Code
RESOURCE_EXHAUSTED = 8
# After the switch reports full tables, new flows are refused without a write
# for this long (or until a session expires).
TABLE_FULL_BACKOFF_S = 1.0


class WritePath:
    def __init__(
        self,
        write: Callable[[list[EncodedUpdate]], Awaitable[list[UpdateError]]],
        nat: Nat,
        entries: NatEntries,
        stats: Stats,
        *,
        batch_max: int,
        writes_in_flight: int,
        capacity: int,
        inject: Callable[[bytes, int], None],
        refused: Callable[[list[Held]], None],
        now: Callable[[], float],
    ) -> None:
        self._send = write  # a WriteRequest to the switch: its failed updates
        self.nat = nat
        self.entries = entries
        self.stats = stats
        self.batch_max = batch_max
        self.writes_in_flight = writes_in_flight
        # Sessions the switch's connection tables hold (their P4Info size).
        self.capacity = capacity
        self.inject = inject
        self.refused = refused  # a flow refused for a full table: answer its sender
        self.now = now
        self.installs: Installs[Session] = Installs()
        self._writes: set[asyncio.Task[None]] = set()
        self._in_flight = 0  # install writes outstanding
        self._draining = False
        # While the switch's tables are full (RESOURCE_EXHAUSTED), until when
        # new flows are refused without a write; 0: not full.
        self._table_full_until = 0.0
        # Sessions an operator deleted, whose DELETE is queued or in flight.
        self._operator: set[int] = set()

    # -- what the packet-in handlers ask ----------------------------------------------

    def state(self, session: Session) -> InstallState | None:
        return self.installs.state(session)

    def in_switch(self, session: Session) -> bool:
        return self.installs.in_switch(session)

    def queue(self, session: Session, packet: Held | None = None) -> None:
        """Install a session with the next write; its first packet waits until
        then. A session whose DELETE is in flight is revived only after it."""
        self.installs.queue(session, packet)

    def hold(self, session: Session, packet: Held) -> None:
        self.installs.hold(session, packet)

    def want_rewrite(self, session: Session) -> None:
        """Its in2out entry is out of date (a TCP state changed its timeout, a
        hairpin partner came or went): MODIFY it with the next flush."""
        self.installs.want_rewrite(session)

    def idle(self, session: Session) -> None:
        """The switch reported its entry idle: DELETE it with the next flush."""
        self.installs.idle(session)

    def delete(self, session: Session) -> bool:
        """An operator deletes the session: its entries with the next flush,
        then the session, as an expiry but never revived by a packet (the
        flow's next packet opens a new session). False when a write of its
        entries is in flight (retry after it)."""
        state = self.installs.state(session)
        if state in (InstallState.INSTALLING, InstallState.DELETING):
            return False
        if state in (InstallState.INSTALLED, InstallState.REWRITING, InstallState.EXPIRING):
            self.installs.idle(session)  # (EXPIRING already is)
            self._operator.add(session.id)
        else:  # no entries in the switch: nothing to delete there
            self.forget(session)
            self.stats["sessions_deleted"] += 1
        return True

    def created_ms(self, session: Session) -> int:
        """When the session opened, by the wall clock (ms): its entry keeps it."""
        return int((time.time() - (self.now() - session.created)) * 1000)

    def has_room(self) -> bool:
        """Whether one more session fits the switch's tables: fewer sessions
        installed and on their way than its P4Info size, and no full table
        reported within TABLE_FULL_BACKOFF_S."""
        if self.installs.in_use() >= self.capacity:
            return False
        if self._table_full_until and self.now() < self._table_full_until:
            return False
        self._table_full_until = 0.0
        return True

    def table_full(self, packets: list[Held]) -> None:
        """RES-4: the switch's connection tables are full (RESOURCE_EXHAUSTED).
        The flow is refused as any flow out of resources; for
        TABLE_FULL_BACKOFF_S new flows are refused before a port is taken or a
        write tried, so a full table is no write storm, and one warning says so
        per episode."""
        self.stats["refused.table_full"] += 1
        if self._table_full_until == 0.0:
            log.warning(
                "the switch's connection tables are full: new flows refused "
                "until sessions expire (refused.table_full)"
            )
        self._table_full_until = self.now() + TABLE_FULL_BACKOFF_S
        self.refused(packets)

    def forget(self, session: Session) -> None:
        """Forget a session; a hairpin partner left behind is rewritten to
        hairpin_pending (it must not translate to a freed endpoint)."""
        self.installs.forget(session)
        partner = session.partner
        self.nat.remove(session, self.now())
        if partner is not None:
            self.installs.want_rewrite(partner)

    # -- group commit -------------------------------------------------------------------

    def flush(self) -> None:
        """Start the writes the states ask for: INSERTs group-commit style
        (module doc), DELETEs of expired sessions, MODIFYs of stale entries."""
        while (
            self.installs.queued()
            and not self._draining
            and (
                self._in_flight == 0
                or (
                    self.installs.queued() >= self.batch_max
                    and self._in_flight < self.writes_in_flight
                )
            )
        ):
            self._in_flight += 1
            self._spawn(self._install_then_flush(self.installs.take_batch(self.batch_max)))
        expiring = self.installs.take_expiring()
        if expiring:
            self._spawn(self._expire(expiring))
        rewrite = self.installs.take_rewrites()
        if rewrite:
            self._spawn(self._rewrite(rewrite))

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _install_then_flush(self, sessions: list[Session]) -> None:
        try:
            await self._install(sessions)
        finally:
            self._in_flight -= 1
            self.flush()

    async def install_now(self, sessions: list[Session]) -> None:
        """Write these sessions' entries now, batch by batch (a new pipeline,
        or sessions the switch did not have at recovery)."""
        for session in sessions:
            self.installs.forget(session)
            self.installs.queue(session)
        while self.installs.queued():
            await self._install(self.installs.take_batch(self.batch_max))

    async def _write(
        self, updates: list[EncodedUpdate], sessions: list[Session], during: InstallState
    ) -> list[UpdateError]:
        """One write for these sessions. When it does not return (the
        connection went), whether their entries changed is unknown: they keep
        their NAT state but leave the install states, and the recovery after
        the reconnect reads the switch to find out (service.py)."""
        try:
            return await self._send(updates)
        except BaseException:
            for session in sessions:
                if self.installs.state(session) is during:
                    self.installs.forget(session)
            raise

    async def _install(self, sessions: list[Session]) -> None:
        updates = []
        written = []  # the in2out rewrite each entry gets
        for session in sessions:
            updates += self.entries.inserts(
                session, self.nat.timeout(session), self.created_ms(session)
            )
            written.append(session.in2out_rewrite)
        self.stats["install_writes"] += 1
        errors = await self._write(updates, sessions, InstallState.INSTALLING)
        failed = _failed_sessions(errors)
        cleanup = []
        for index, session in enumerate(sessions):
            if self.installs.state(session) is not InstallState.INSTALLING:
                continue  # forgotten during the write (the connection went)
            if index in failed:
                code, message = failed[index]
                packets = self.installs.failed(session)
                # Remove whichever of the two entries did get in.
                cleanup += self.entries.deletes(session)
                self.forget(session)  # its port rests, as any freed port
                if code == RESOURCE_EXHAUSTED:
                    self.table_full(packets)
                    continue
                self.stats["install_failed"] += 1
                log.warning("install of session %d failed (code %d): %s", session.id, code, message)
                continue
            self._table_full_until = 0.0
            self.stats["sessions_installed"] += 1
            # A hairpin partner came or went during the write: the entry is
            # stale, and its packets wait for the rewrite.
            stale = session.in2out_rewrite != written[index] and self.nat.contains(session)
            for payload, port in self.installs.installed(session, stale):
                self.inject(payload, port)
        if cleanup:
            await self._send(cleanup)

    async def _rewrite(self, sessions: list[Session]) -> None:
        """MODIFY in2out entries: new idle timeouts after TCP state changes (RFC
        7857 sec. 2.2), or a hairpin session's new rewrite. Then the packets that
        waited for it go through."""
        try:
            live = [s for s in sessions if self.installs.in_switch(s)]
            updates = [
                self.entries.in2out_modify(s, self.nat.timeout(s), self.created_ms(s)) for s in live
            ]
            errors = await self._send(updates)
            self.stats["entries_rewritten"] += len(updates) - len(errors)
            self.stats["rewrite_failed"] += len(errors)
        finally:
            for session in sessions:
                for payload, port in self.installs.rewritten(session):
                    self.inject(payload, port)
            self.flush()

    async def _expire(self, sessions: list[Session]) -> None:
        """Delete expired sessions' entries, then forget the sessions, except
        those a packet revived meanwhile: they are installed again, same
        mapping, now that the DELETE is done. A session must not be forgotten
        while entries for it may be in the switch: they would go on translating
        with a port that went back to the pool."""
        updates = [u for s in sessions for u in self.entries.deletes(s)]
        errors = await self._write(updates, sessions, InstallState.DELETING)
        unexpected = [e for e in errors if e.code != NOT_FOUND]
        if unexpected:
            self.stats["delete_failed"] += len(unexpected)
        for session in sessions:
            if self.installs.state(session) is not InstallState.DELETING:
                continue
            if session.id in self._operator:
                self._operator.discard(session.id)
                self.forget(session)  # not revived: its packets open a new one
                self.stats["sessions_deleted"] += 1
            elif self.installs.deleted(session):
                self.stats["sessions_revived"] += 1
            elif self.nat.contains(session):
                self.forget(session)
                self.stats["sessions_expired"] += 1
                self._table_full_until = 0.0  # room again
        self.flush()

    async def drain(self) -> None:
        """The connection went: let the writes out finish, then drop the held
        packets (lost with the switch) and forget the sessions that never got
        in. Rewrites and deletes still queued go out after the reconnect."""
        self._draining = True
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)
        self._draining = False
        self.stats["packet_in.lost_on_disconnect"] += self.installs.drop_held()
        for session in self.installs.queued_sessions():
            if self.nat.contains(session):
                self.forget(session)


def _failed_sessions(errors: list[UpdateError]) -> dict[int, tuple[int, str]]:
    """Index of each session whose insert failed (two updates per session)."""
    return {e.index // 2: (e.code, e.message) for e in errors}
