"""The one writer of sessions' entries to the switch: in, rewritten, out.

Both modes write through it (modes/): controller mode the sessions its NAT
core opens, offload mode those slow-path instances announce. What a mode
decides is which sessions to queue, rewrite or expire, and what their
writes' outcomes mean (an `Outcomes`); how and when they are written, and
what a failure means, is decided here once:

- **Group commit.** One INSERT write is out at a time, and a further one (up
  to `writes_in_flight`) only for a full batch. While a write is out, new
  sessions wait in the batch, so under load each WriteRequest carries every
  session that arrived during the previous round trip; a lone session on an
  idle controller goes at once. (Packet-ins arrive one by one: with a write
  for each while slots were free, bench-bmv2 averaged 1.7 flows per write,
  and each write costs both sides a gRPC call.) Each session's place in
  this is its InstallState (install_state.py); packets that wait for its
  write are held there and handed back with the outcome.
- **DELETE first.** P4Runtime orders nothing between concurrent writes, nor
  within one (spec sec. 12.2), so an INSERT never starts while a DELETE of
  one of its keys is out: a flow whose session closed and opened again
  (offload mode: a new session of the instance's, the same key) is
  inserted when the old entries are gone. Nor does a DELETE start while a
  MODIFY of its entry is out, nor a MODIFY while another is
  (install_state.py): one write out per entry. Entries found in the switch
  that no session owns are swept by the same DELETE writes.
- **The entry follows its session.** A write carries the session's idle
  timeout (its TCP phase's, RFC 7857 sec. 2.2) and rewrite as they are when
  it is sent. A change while the entry is in the switch is a MODIFY; one
  while its INSERT is out (the answer to a first packet that left before
  its write, punts.py) is found at the INSERT's answer and MODIFYed then.
  Every change reaches the switch, in any order of writes, answers and
  changes (test_writer_timeouts.py).
- **One error policy.** An INSERT that fails with one of the target's
  full-table codes (target.py) is a full table: the session is refused by
  its mode, and for `table_full_backoff_s` no session is offered a place
  without a write, so a full table is no write storm; any other failure is
  an install failure. Either way whichever of its two entries got in is
  deleted. A DELETE that finds nothing (NOT_FOUND) did its work.
- **The target's limits.** A write longer than the target takes is split;
  entries carry an idle timeout only where the target notifies idle ones.

No write goes out while the writer is offline (not connected, or not yet
synced): work waits in the states and goes with the first flush online.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from quicknat.controller.context import ModeContext, Write, WriterOptions
from quicknat.controller.install_state import Held, Installs, InstallState
from quicknat.controller.program import NatEntries
from quicknat.controller.stats import Stats
from quicknat.controller.target import NOT_FOUND, TargetCapabilities
from quicknat.latency import InstallLatency
from quicknat.nat.session import FlowKey, Session
from quicknat.p4rt.client import UpdateError
from quicknat.p4rt.wire import EncodedUpdate

log = logging.getLogger("quicknat.controller")

S = TypeVar("S", bound=Session)
S_contra = TypeVar("S_contra", bound=Session, contravariant=True)

#: The writer's counters (Stats names), the same in both modes.
COUNTERS = (
    "install_writes",
    "sessions_installed",
    "install_failed",
    "entries_rewritten",
    "rewrite_failed",
    "delete_failed",
    "stale_entries_deleted",
    "packet_in.lost_on_disconnect",
)


class Outcomes(Protocol[S_contra]):
    """What a mode makes of its sessions' writes (modes/)."""

    def timeout(self, session: S_contra) -> int:
        """The idle timeout (s) of the session's ageing entry (nat/timeouts.py)."""

    def installed(self, done: Sequence[tuple[S_contra, list[Held]]]) -> None:
        """An INSERT write is done: these sessions' entries are in, each with
        the packets that waited for them (none for one whose entry is being
        rewritten first: they come with `rewritten`)."""

    def refused(self, session: S_contra, packets: list[Held], full: bool) -> None:
        """The switch refused its entries (`full`: the tables are full); the
        session has no install state any more, and these packets waited."""

    def deleted(self, session: S_contra, revived: bool) -> None:
        """Its DELETE is done. `revived`: a packet came meanwhile and it is
        queued again (install_state.py); else it has no install state."""

    def rewritten(self, session: S_contra, packets: list[Held]) -> None:
        """A MODIFY of its ageing entry is done; the packets that waited."""


class SwitchWriter(Generic[S]):
    def __init__(
        self,
        write: Write,
        entries: NatEntries,
        target: TargetCapabilities,
        stats: Stats,
        options: WriterOptions,
        outcomes: Outcomes[S],
        now: Callable[[], float],
    ) -> None:
        self._send = write
        self.entries = entries
        self.target = target
        self.stats = stats
        self.outcomes = outcomes
        self.now = now
        self.installs: Installs[S] = Installs()
        self.latency = InstallLatency()
        self.capacity = target.session_capacity
        updates = target.max_updates_per_write
        self.batch_max = min(options.batch_max, updates // 2) if updates else options.batch_max
        self.writes_in_flight = options.writes_in_flight
        self.backoff_s = options.table_full_backoff_s
        self._online = False
        self._writes: set[asyncio.Task[None]] = set()
        self._in_flight = 0  # INSERT writes out
        # Entries to delete that no session owns (table, key), and the keys
        # of the DELETEs out (a count each: two writes may name one key).
        self._sweep: list[tuple[str, FlowKey]] = []
        self._deleting: dict[FlowKey, int] = {}
        # Until when a full table was reported (0: not full).
        self._full_until = 0.0

    # -- what the modes ask --------------------------------------------------------------

    def state(self, session: S) -> InstallState | None:
        return self.installs.state(session)

    def in_switch(self, session: S) -> bool:
        return self.installs.in_switch(session)

    def installed_count(self) -> int:
        return self.installs.installed_count()

    def free_slots(self) -> int:
        """Sessions that may still be offered a place: the target's capacity
        less every session installed or on its way (O(1): asked per new
        session), and none while a full table's back-off lasts."""
        if self._full_until:
            if self.now() < self._full_until:
                return 0
            self._full_until = 0.0
        return self.capacity - self.installs.in_use()

    def table_full(self) -> None:
        """The tables are full (reported by the switch, or every place
        taken): no session is offered a place for the back-off, and one
        warning says so per episode."""
        if self._full_until == 0.0:
            log.warning(
                "the switch's connection tables are full (%d sessions): "
                "no new session gets entries until some are deleted",
                self.capacity,
            )
        self._full_until = self.now() + self.backoff_s

    def queue(self, session: S, packet: Held | None = None, since: float | None = None) -> None:
        """Install a session with the next write; its packet waits until then.
        One whose DELETE is out is revived after it. `since`: when the
        decision began (its packet-in's arrival), for the latency histograms."""
        self.installs.queue(session, packet)
        self.latency.queued(session.id, self.now() if since is None else since)

    def hold(self, session: S, packet: Held) -> None:
        self.installs.hold(session, packet)

    def want_rewrite(self, session: S) -> bool:
        """Its ageing entry is out of date (a TCP phase changed its timeout,
        a hairpin partner came or went): MODIFY it with the next flush."""
        return self.installs.want_rewrite(session)

    def expire(self, session: S) -> bool:
        """DELETE its entries with the next flush (it went idle, or closed)."""
        return self.installs.idle(session)

    def adopt(self, session: S) -> None:
        """Its entries are in the switch already (read back at recovery)."""
        self.latency.abandoned(session.id)  # whatever was queued is void
        self.installs.adopt(session)

    def forget(self, session: S) -> list[Held]:
        """No install state for it any more: its held packets."""
        self.latency.abandoned(session.id)
        return self.installs.forget(session)

    def lose_all(self, sessions: Iterable[S]) -> None:
        """These sessions' install states are void (recovery: the switch is
        read back, or has a new pipeline and holds nothing)."""
        sessions = list(sessions)
        for session in sessions:
            self.latency.abandoned(session.id)
        self.installs.lose_all(sessions)

    def sweep(self, table: str, key: FlowKey) -> None:
        """An entry no session owns (found at recovery): DELETE it."""
        self._sweep.append((table, key))

    def created_ms(self, session: S) -> int:
        """When the session opened, by the wall clock (ms): its entry keeps
        it, so a controller that recovers it knows its age."""
        return int((time.time() - (self.now() - session.created)) * 1000)

    # -- the writes ---------------------------------------------------------------------

    def online(self) -> None:
        """Connected and synced: writes may go; the work waiting goes now."""
        self._online = True
        self.flush()

    def flush(self) -> None:
        """Start the writes the states ask for: DELETEs first (their keys
        block INSERTs until they return), INSERTs group-commit style, and
        MODIFYs."""
        if not self._online:
            return
        expiring = self.installs.take_expiring()
        if expiring or self._sweep:
            swept, self._sweep = self._sweep, []
            keys = [k for s in expiring for k in (s.in2out, s.out2in)]
            keys += [key for _, key in swept]
            for key in keys:
                self._deleting[key] = self._deleting.get(key, 0) + 1
            self._spawn(self._delete(expiring, swept, keys))
        blocked = self._blocked if self._deleting else None
        while self.installs.queued() and (
            self._in_flight == 0
            or (
                self.installs.queued() >= self.batch_max and self._in_flight < self.writes_in_flight
            )
        ):
            batch = self.installs.take_batch(self.batch_max, blocked)
            if not batch:
                break  # every queued session waits for a DELETE
            self._in_flight += 1
            self._spawn(self._install_then_flush(batch))
        rewrites = self.installs.take_rewrites()
        if rewrites:
            self._spawn(self._rewrite(rewrites))

    def _blocked(self, session: S) -> bool:
        return session.in2out in self._deleting or session.out2in in self._deleting

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _write(
        self, updates: list[EncodedUpdate], sessions: list[S], during: InstallState
    ) -> list[UpdateError]:
        """One write for these sessions, split at the target's limit. When it
        does not return (the connection went), whether their entries changed
        is unknown: they leave their install states, and the recovery after
        the reconnection reads the switch to find out."""
        try:
            return await self._write_split(updates)
        except BaseException:
            for session in sessions:
                if self.installs.state(session) is during:
                    self.latency.abandoned(session.id)
                    self.installs.forget(session)
            raise

    async def _write_split(self, updates: list[EncodedUpdate]) -> list[UpdateError]:
        limit = self.target.max_updates_per_write
        if not limit or len(updates) <= limit:
            return await self._send(updates)
        errors = []
        for start in range(0, len(updates), limit):
            for e in await self._send(updates[start : start + limit]):
                errors.append(UpdateError(start + e.index, e.code, e.message))
        return errors

    def entry_timeout(self, session: S) -> int:
        """The idle timeout (s) its ageing entry is written with: its mode's,
        or 0 where the target notifies no idle entries."""
        return self.outcomes.timeout(session) if self.target.idle_timeout_notifications else 0

    async def _install_then_flush(self, sessions: list[S]) -> None:
        try:
            await self._install(sessions)
        finally:
            self._in_flight -= 1
            self.flush()

    async def _install(self, sessions: list[S]) -> None:
        updates = []
        timeouts = {}  # as written: a TCP phase may change during the write
        for session in sessions:
            timeouts[session.id] = timeout = self.entry_timeout(session)
            updates += self.entries.inserts(session, timeout, self.created_ms(session))
        # a hairpin session's rewrite as written: its partner may come or go
        # during the write (no other session's rewrite ever changes)
        written = {s.id: s.in2out_rewrite for s in sessions if s.hairpin}
        self.stats["install_writes"] += 1
        errors = await self._write(updates, sessions, InstallState.INSTALLING)
        failed = {e.index // 2: e for e in errors}  # two updates per session
        cleanup: list[EncodedUpdate] = []
        done = []
        acked = self.now()
        first_packets = []  # when each new flow whose packet waited began
        for index, session in enumerate(sessions):
            if self.installs.state(session) is not InstallState.INSTALLING:
                continue  # forgotten during the write
            error = failed.get(index)
            if error is not None:
                cleanup += self.entries.deletes(session)  # whichever got in
                self._refused(session, error)
                continue
            self._full_until = 0.0
            self.stats["sessions_installed"] += 1
            # Out of date already: a hairpin partner came or went, or the
            # session's TCP phase (so its timeout) changed while the INSERT
            # was out, e.g. the answer to a first packet that left before
            # its write (punts.py) made it established: MODIFY it next.
            timeout = self.entry_timeout(session)
            stale = (
                session.hairpin and session.in2out_rewrite != written[session.id]
            ) or timeout != timeouts[session.id]
            if stale:
                log.debug(
                    "session %d changed while its INSERT was out (timeout %d s, written %d s): "
                    "MODIFY next",
                    session.id,
                    timeout,
                    timeouts[session.id],
                )
            began = self.latency.installed(session.id, acked)
            packets = self.installs.installed(session, stale)
            if packets and began is not None:
                first_packets.append(began)
            done.append((session, packets))
        if done:
            self.outcomes.installed(done)  # controller mode: the packet-outs
            sent = self.now()
            for began in first_packets:
                self.latency.first_packet.observe(sent - began)
        if cleanup:
            await self._write_split(cleanup)

    def _refused(self, session: S, error: UpdateError) -> None:
        self.latency.abandoned(session.id)
        packets = self.installs.failed(session)
        full = self.target.table_full(error.code)
        if full:
            self.table_full()
        else:
            self.stats["install_failed"] += 1
            log.warning(
                "install of session %d failed (code %d): %s", session.id, error.code, error.message
            )
        self.outcomes.refused(session, packets, full)

    async def _rewrite(self, sessions: list[S]) -> None:
        """MODIFY ageing entries: a new idle timeout after a TCP phase change
        (RFC 7857 sec. 2.2), or a hairpin session's new rewrite. Then the
        packets that waited for it go on."""
        try:
            live = [s for s in sessions if self.installs.in_switch(s)]
            updates = [
                self.entries.in2out_modify(s, self.entry_timeout(s), self.created_ms(s))
                for s in live
            ]
            errors = await self._write_split(updates)
            self.stats["entries_rewritten"] += len(updates) - len(errors)
            self.stats["rewrite_failed"] += len(errors)
        finally:
            for session in sessions:
                self.outcomes.rewritten(session, self.installs.rewritten(session))
            self.flush()

    async def _delete(
        self, sessions: list[S], swept: list[tuple[str, FlowKey]], keys: list[FlowKey]
    ) -> None:
        """DELETE these sessions' entries and the swept ones; then each
        session is gone from here (or queued again, revived), and its mode
        is told. A session's entries are never left in the switch while its
        mode may give its port to another flow: the mode forgets it only now."""
        updates = [u for s in sessions for u in self.entries.deletes(s)]
        updates += [self.entries.delete_one(table, key) for table, key in swept]
        try:
            errors = await self._write(updates, sessions, InstallState.DELETING)
        finally:
            for key in keys:
                left = self._deleting[key] - 1
                if left:
                    self._deleting[key] = left
                else:
                    del self._deleting[key]
        self.stats["delete_failed"] += sum(1 for e in errors if e.code != NOT_FOUND)
        self.stats["stale_entries_deleted"] += len(swept)
        for session in sessions:
            if self.installs.state(session) is InstallState.DELETING:
                self._full_until = 0.0  # a place again
                self.outcomes.deleted(session, self.installs.deleted(session))
        self.flush()

    async def settle(self) -> None:
        """Until no write is out (each one's end may have started another)."""
        while self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)

    async def drain(self) -> None:
        """The connection went: no more writes; let those out finish, then
        drop the held packets (lost with the switch). What is queued stays
        queued for the recovery after the reconnection."""
        self._online = False
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)
        self._sweep = []
        self.stats["packet_in.lost_on_disconnect"] += self.installs.drop_held()


def new_writer(context: ModeContext, outcomes: Outcomes[S]) -> SwitchWriter[S]:
    """A mode's writer, on the context's switch and target."""
    return SwitchWriter(
        context.write,
        NatEntries(context.p4info),
        context.target,
        context.stats,
        context.writer_options,
        outcomes,
        context.now,
    )
