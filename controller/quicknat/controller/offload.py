"""The offload manager: the switch's connection tables as a cache of the
sessions slow-path instances (swpath) open (docs/offload.md).

Input: each instance's session event stream (stream.py) and the switch's idle
notifications. Output: writes to the switch (both directions of a session,
group-committed: one write at a time, carrying every session that arrived
while the previous one was out) and `session offload|idle|onload` lines to the
instance that owns a session. No I/O here: the service passes in `write` (a
P4Runtime Write, its failed updates back) and `command` (lines to an
instance's control socket), so every rule below is unit-tested.

- **What is offloaded.** Every session an instance opens, but hairpin sessions
  (the remote is the NAT's own: their packets come back in through the switch
  as outside traffic, and swpath keeps the pair together) and, when the switch
  is full, the ones that do not fit: those stay in software, counted, never
  refused or dropped (the instance already translates them). The last tenth
  of the switch's tables is kept for long-lived flows: past that mark a
  session waits in software (`offload.deferred`) until it is an established
  TCP session, so short flows cannot crowd out the ones worth a slot.
- **Ageing.** Only the inside-to-outside entry ages, as in controller mode. The
  switch's idle notification is forwarded (`session idle`); the instance ends
  the session when it too has seen nothing, and its `closed` event deletes the
  entries. So a session is never expired in software while the switch still
  forwards it, and never kept after both have seen it idle.
- **TCP.** A phase change (`state`) rewrites the entry's idle timeout, by
  the one timeout rule (nat/timeouts.py): tcp_established while
  established, tcp_transitory otherwise (RFC 7857 sec. 2.2).
- **Resynchronisation.** When an instance's stream starts again (it restarted,
  or the connection dropped), its sessions wait for the new snapshot: those in
  it are kept (same id and key). Of the others, when the instance restarted
  (another `run` in its `synced`) and lost them (no --state file, or records
  it could not take over), those the switch holds are **handed back**:
  `session adopt` gives the instance the session as the switch has it, the
  instance takes it over with its port and announces it under a new id,
  and the switch's entries stay, so the flow never breaks. One the instance
  opened anew meanwhile (its own mapping), or refused (no `opened` within
  HANDBACK_WAIT_S), is deleted from the switch. Within one run a session
  missing from the snapshot really closed, and is closed. Sessions the
  switch holds at start (read back) are adopted when an instance claims
  them; after every instance has synced, entries nobody claimed are deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from quicknat.addr import Prefix, format_ipv4
from quicknat.config.model import Timeouts
from quicknat.controller.install_state import Installs, InstallState
from quicknat.controller.program import NatEntries
from quicknat.controller.stats import Stats
from quicknat.nat.session import FlowKey, Origin, Session
from quicknat.nat.tcp_state import PHASES, TcpPhase
from quicknat.nat.timeouts import idle_timeout
from quicknat.offload.stream import SessionEvent
from quicknat.p4rt.client import UpdateError
from quicknat.p4rt.wire import EncodedUpdate
from quicknat.rules import Protocol

log = logging.getLogger("quicknat.offload")

RESOURCE_EXHAUSTED = 8  # google.rpc.Code
UNKNOWN = 2  # BMv2's answer to a full table
NOT_FOUND = 5

#: The last 1/HIGH_WATER_SHARE of the switch's tables is kept for long-lived flows.
HIGH_WATER_SHARE = 10

#: How long a session handed back may wait for its instance's `opened`.
HANDBACK_WAIT_S = 5.0

#: The manager's counters (Stats names), all present from start-up.
COUNTERS = (
    "offload.sessions_seen",
    "offload.installed",
    "offload.deleted",
    "offload.rewritten",
    "offload.software_only.hairpin",
    "offload.software_only.table_full",
    "offload.deferred",
    "offload.install_failed",
    "offload.delete_failed",
    "offload.idle_forwarded",
    "offload.adopted",
    "offload.stale_entries_deleted",
    "offload.resyncs",
    "offload.handed_back",
    "offload.handback_refused",
)

Write = Callable[[list[EncodedUpdate]], Awaitable[list[UpdateError]]]
Command = Callable[[int, list[str]], None]


@dataclass(slots=True, eq=False)
class OffloadSession(Session):
    """A session an instance opened, as the switch gets it. `id` is the
    manager's own (unique, never reused: the install state is keyed by it);
    the instance knows it as `swpath_id`."""

    instance: int = 0
    swpath_id: int = 0
    phase: TcpPhase | None = None  # TCP's, as its instance announced it
    closed: bool = False  # its instance closed it while its INSERT was out
    deferred: bool = False  # the switch nearly full: waits to prove long-lived
    stale: bool = False  # its instance's stream restarted; not in the new snapshot yet
    handed_back: float | None = None  # when `session adopt` went to its restarted instance


def session_of(uid: int, instance: int, e: SessionEvent, now: float) -> OffloadSession:
    assert e.internal is not None and e.external is not None and e.remote is not None
    return OffloadSession(
        id=uid,
        rule_id=e.rule,
        origin=Origin(e.origin),
        protocol=e.protocol,
        internal=e.internal,
        external=e.external,
        remote_address=e.remote.address,
        remote_port=e.remote.port,
        created=now,
        instance=instance,
        swpath_id=e.id,
        phase=_phase(e),
    )


def _phase(e: SessionEvent) -> TcpPhase | None:
    """An event's TCP phase (its stream's word); ValueError for a word swpath
    does not write."""
    if e.tcp_state is None:
        return None
    try:
        return PHASES[e.tcp_state]
    except KeyError:
        raise ValueError(f"not a TCP phase: {e.tcp_state!r}") from None


def _endpoint(address: int, port: int) -> str:
    return f"{format_ipv4(address)}:{port}"


# the commands' protocol words, looked up per offloaded flow
_PROTOCOL_WORDS = {p.value: p.name.lower() for p in Protocol}


def command_line(action: str, s: OffloadSession) -> str:
    """`session ACTION ...` for the session's instance (docs/swpath-commands.md)."""
    proto = _PROTOCOL_WORDS[s.protocol]
    internal = _endpoint(s.internal.address, s.internal.port)
    remote = _endpoint(s.remote_address, s.remote_port)
    return f"session {action} {s.swpath_id} {proto} {internal} {remote}"


def adopt_line(s: OffloadSession) -> str:
    """`session adopt ...`: the session as the switch holds it, for an
    instance that lost it (docs/swpath-commands.md)."""
    proto = _PROTOCOL_WORDS[s.protocol]
    endpoints = [
        _endpoint(s.internal.address, s.internal.port),
        _endpoint(s.external.address, s.external.port),
        _endpoint(s.remote_address, s.remote_port),
    ]
    phase = [s.phase.value] if s.protocol == Protocol.TCP and s.phase else []
    return " ".join(["session", "adopt", proto, *endpoints, s.origin.value, *phase])


class OffloadManager:
    def __init__(
        self,
        entries: NatEntries,
        timeouts: Timeouts,
        public: Iterable[Prefix],
        stats: Stats,
        write: Write,
        command: Command,
        *,
        capacity: int,
        instances: int,
        batch_max: int = 256,
        now: Callable[[], float],
    ) -> None:
        self.entries = entries
        self.timeouts = timeouts
        self._public_masks = tuple((p.address, p.mask) for p in public)
        self.stats = stats
        for name in COUNTERS:
            stats[name] += 0
        self._write = write
        self._command = command
        self.capacity = capacity
        # Above this many sessions in the switch only long-lived flows go in.
        self.high_water = capacity - max(1, capacity // HIGH_WATER_SHARE)
        self.batch_max = batch_max
        self.now = now
        self.installs: Installs[OffloadSession] = Installs()
        self.sessions: dict[tuple[int, int], OffloadSession] = {}  # (instance, swpath id)
        self._next_uid = 1
        self.by_key: dict[FlowKey, OffloadSession] = {}  # in2out key: idle notifications
        self._software_only: set[tuple[int, int]] = set()  # kept in software
        self._synced = [False] * instances
        self._runs: list[int | None] = [None] * instances  # each instance's last `run`
        # sessions handed back to a restarted instance, until it announces them
        self._handing_back: dict[FlowKey, OffloadSession] = {}
        # entries found in the switch at start, not yet claimed (in2out key -> out2in key)
        self._unclaimed: dict[FlowKey, FlowKey] = {}
        self._claimed: set[FlowKey] = set()
        self._stale_entries: list[tuple[FlowKey, FlowKey]] = []
        self._halves: list[tuple[str, FlowKey]] = []

    # -- what comes in -------------------------------------------------------------

    def on_event(self, instance: int, e: SessionEvent) -> None:
        if e.kind == "opened":
            self._opened(instance, e)
        elif e.kind == "state":
            s = self.sessions.get((instance, e.id))
            phase = _phase(e)
            if s is not None and s.in2out == self._key_of(e) and s.phase is not phase:
                s.phase = phase
                if s.deferred and self._long_lived(s):
                    s.deferred = False
                    self._place(s)
                else:
                    self.installs.want_rewrite(s)  # its idle timeout, with the next flush
        elif e.kind == "closed":
            s = self.sessions.get((instance, e.id))
            if s is not None and s.in2out == self._key_of(e):
                self._close(s)
            self._software_only.discard((instance, e.id))
        elif e.kind == "synced":
            self._instance_synced(instance, e.run)
        # "lost": the service resubscribes (stream_restarted), nothing to do here

    def stream_restarted(self, instance: int) -> None:
        """The instance's stream begins again: its sessions are stale until the
        snapshot confirms them."""
        self.stats["offload.resyncs"] += 1
        self._synced[instance] = False
        for s in self.sessions.values():
            if s.instance == instance:
                s.stale = True
        self._software_only = {k for k in self._software_only if k[0] != instance}

    def switch_entries(
        self,
        in2out_out2in: Iterable[tuple[FlowKey, FlowKey]],
        halves: Iterable[tuple[str, FlowKey]] = (),
    ) -> None:
        """What the switch holds at (re)connection, read back: every session
        loses its install state, then each is adopted if its entries are there,
        else queued; entries no instance claims are deleted once all synced,
        entries without their other half (table, key) with the next flush."""
        for s in [*self.sessions.values(), *self._handing_back.values()]:
            self.installs.forget(s)
        self._halves += list(halves)
        self._unclaimed = dict(in2out_out2in)
        self._claimed = set()
        for s in list(self.sessions.values()):
            self._place(s)
        self._maybe_sweep()

    def on_idle(self, key: FlowKey) -> None:
        """The switch reports a session's in2out entry idle: ask its instance."""
        s = self.by_key.get(key)
        if s is None or not self.installs.in_switch(s):
            return
        self.stats["offload.idle_forwarded"] += 1
        self._command(s.instance, [command_line("idle", s)])

    # -- the rules --------------------------------------------------------------------

    @staticmethod
    def _key_of(e: SessionEvent) -> FlowKey:
        assert e.internal is not None and e.remote is not None
        if e.protocol == Protocol.ICMP:
            sport = dport = e.internal.port
        else:
            sport, dport = e.internal.port, e.remote.port
        return FlowKey(e.protocol, e.internal.address, e.remote.address, sport, dport)

    def _is_public(self, address: int) -> bool:
        # per flow: masks, not Prefix's property and __contains__ calls
        return any(address & mask == network for network, mask in self._public_masks)

    def _opened(self, instance: int, e: SessionEvent) -> None:
        sid = (instance, e.id)
        known = self.sessions.get(sid)
        key = self._key_of(e)
        back = self._handing_back.get(key) if self._handing_back else None
        if back is not None and back.instance == instance:
            del self._handing_back[key]
            back.handed_back = None
            if back.external == e.external:  # taken over: the switch's entries stay
                back.swpath_id = e.id
                back.phase = _phase(e)
                self.sessions[sid] = back
                if not self.installs.in_switch(back):  # the switch restarted meanwhile
                    self._place(back)
                return
            self._close(back)  # the instance mapped the flow anew: its entries go
        if known is not None:
            if known.in2out == key:  # the snapshot, or a repeat around it
                known.stale = False
                return
            self._close(known)  # the instance restarted: its ids start again
        if sid in self._software_only:
            return
        self.stats["offload.sessions_seen"] += 1
        assert e.remote is not None
        if self._is_public(e.remote.address):
            self.stats["offload.software_only.hairpin"] += 1
            self._software_only.add(sid)
            return
        s = session_of(self._next_uid, instance, e, self.now())
        self._next_uid += 1
        self.sessions[sid] = s
        self.by_key[key] = s  # its in2out
        self._place(s)

    def _place(self, s: OffloadSession) -> None:
        """Adopt the session's entries if the switch has them, else queue them."""
        key = s.in2out
        unclaimed = self._unclaimed.get(key) if self._unclaimed else None
        used = self.installs.in_use()
        if unclaimed is not None and unclaimed == s.out2in:
            del self._unclaimed[key]
            self._claimed.add(key)
            self.installs.adopt(s)
            self.stats["offload.adopted"] += 1
            self._command(s.instance, [command_line("offload", s)])
        elif used < self.high_water or (used < self.capacity and self._long_lived(s)):
            self.installs.queue(s)
        elif used < self.capacity:
            # nearly full: the last slots go to flows that have shown they
            # last (an established TCP session), not to the next DNS query
            s.deferred = True
            self.stats["offload.deferred"] += 1
        else:
            self._to_software(s, "table_full")

    @staticmethod
    def _long_lived(s: OffloadSession) -> bool:
        return s.protocol == Protocol.TCP and s.phase is TcpPhase.ESTABLISHED

    def _to_software(self, s: OffloadSession, why: str) -> None:
        self.stats[f"offload.software_only.{why}"] += 1
        self._forget(s)
        self._software_only.add((s.instance, s.swpath_id))

    def _close(self, s: OffloadSession) -> None:
        state = self.installs.state(s)
        if state is InstallState.INSTALLING:
            s.closed = True  # deleted once its INSERT is done
        elif state in (InstallState.INSTALLED, InstallState.REWRITING):
            self.installs.idle(s)  # DELETE with the next flush
        elif state in (InstallState.EXPIRING, InstallState.DELETING):
            pass
        else:
            self._forget(s)

    def _forget(self, s: OffloadSession) -> None:
        self.installs.forget(s)
        if self.sessions.get((s.instance, s.swpath_id)) is s:
            del self.sessions[s.instance, s.swpath_id]
        if self.by_key.get(s.in2out) is s:
            del self.by_key[s.in2out]

    def _instance_synced(self, instance: int, run: int) -> None:
        self._synced[instance] = True
        restarted = self._runs[instance] not in (None, run)
        self._runs[instance] = run
        for s in [s for s in self.sessions.values() if s.instance == instance and s.stale]:
            s.stale = False
            if restarted and self.installs.in_switch(s) and not s.closed:
                self._hand_back(s)
            else:
                self._close(s)
        self._maybe_sweep()

    def _hand_back(self, s: OffloadSession) -> None:
        """The switch forwards a session its restarted instance lost: give
        it back (`session adopt`); it comes back under a new id (_opened)."""
        del self.sessions[s.instance, s.swpath_id]  # the new run's ids start again
        s.handed_back = self.now()
        self._handing_back[s.in2out] = s
        self.stats["offload.handed_back"] += 1
        self._command(s.instance, [adopt_line(s)])

    def tick(self) -> None:
        """Called about every second: sessions handed back that their
        instance did not take over in time are deleted from the switch."""
        now = self.now()
        for key, s in list(self._handing_back.items()):
            if s.handed_back is not None and now - s.handed_back > HANDBACK_WAIT_S:
                del self._handing_back[key]
                s.handed_back = None
                self.stats["offload.handback_refused"] += 1
                self._close(s)

    def _maybe_sweep(self) -> None:
        if all(self._synced) and self._unclaimed:
            self._stale_entries += list(self._unclaimed.items())
            self._unclaimed = {}

    def timeout(self, s: OffloadSession) -> int:
        """The one timeout rule (nat/timeouts.py), by the phase the instance
        announced (RFC 7857 sec. 2.2)."""
        return idle_timeout(self.timeouts, s.protocol, s.phase)

    # -- writes ---------------------------------------------------------------------------

    def has_work(self) -> bool:
        return self.installs.has_work() or bool(self._stale_entries or self._halves)

    async def flush(self) -> None:
        """One round of writes: the DELETEs asked for meanwhile, a batch of
        INSERTs, then the MODIFYs. The service calls it again while
        has_work(). Deletes go first: a flow whose session closed and opened
        again (an instance's new mapping for a flow handed back, an id
        reused) has the same inside-to-outside key, which the switch holds
        once."""
        expiring = self.installs.take_expiring()
        if expiring or self._stale_entries or self._halves:
            await self._delete(expiring)
        batch = self.installs.take_batch(self.batch_max)
        if batch:
            await self._install(batch)
        rewrites = self.installs.take_rewrites()
        if rewrites:
            await self._rewrite(rewrites)

    async def _install(self, batch: list[OffloadSession]) -> None:
        updates = [u for s in batch for u in self.entries.inserts(s, self.timeout(s))]
        errors = {e.index // 2: e for e in await self._write(updates)}
        cleanup: list[EncodedUpdate] = []
        offloaded: dict[int, list[str]] = {}
        for index, s in enumerate(batch):
            if self.installs.state(s) is not InstallState.INSTALLING:
                continue
            error = errors.get(index)
            if error is not None:
                cleanup += self.entries.deletes(s)  # whichever of the two got in
                self.installs.failed(s)
                if error.code in (RESOURCE_EXHAUSTED, UNKNOWN):
                    self._to_software(s, "table_full")
                else:
                    self.stats["offload.install_failed"] += 1
                    log.warning("offload of session %d failed: %s", s.swpath_id, error.message)
                    self._to_software(s, "table_full")
                continue
            self.installs.installed(s)
            self.stats["offload.installed"] += 1
            if s.closed:
                self.installs.idle(s)
                continue
            offloaded.setdefault(s.instance, []).append(command_line("offload", s))
        for instance, lines in offloaded.items():
            self._command(instance, lines)
        if cleanup:
            await self._write(cleanup)

    async def _delete(self, sessions: list[OffloadSession]) -> None:
        updates = [u for s in sessions for u in self.entries.deletes(s)]
        stale, self._stale_entries = self._stale_entries, []
        for in2out, out2in in stale:
            updates += self.entries.deletes_by_key(in2out, out2in)
        halves, self._halves = self._halves, []
        updates += [self.entries.delete_one(table, key) for table, key in halves]
        errors = await self._write(updates)
        self.stats["offload.delete_failed"] += sum(1 for e in errors if e.code != NOT_FOUND)
        self.stats["offload.stale_entries_deleted"] += len(stale) + len(halves)
        for s in sessions:
            if self.installs.state(s) is InstallState.DELETING:
                self.installs.deleted(s)
                self._forget(s)
                self.stats["offload.deleted"] += 1

    async def _rewrite(self, sessions: list[OffloadSession]) -> None:
        live = [s for s in sessions if self.installs.in_switch(s)]
        updates = [self.entries.in2out_modify(s, self.timeout(s)) for s in live]
        errors = await self._write(updates)
        self.stats["offload.rewritten"] += len(updates) - len(errors)
        for s in sessions:
            self.installs.rewritten(s)
