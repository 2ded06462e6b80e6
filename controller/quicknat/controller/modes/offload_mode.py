"""Offload mode: the switch's connection tables as a cache of the sessions
slow-path instances (swpath) open (docs/offload.md).

Input: each instance's session event stream (offload/stream.py, read by
offload_io.py) and the switch's idle notifications. Output: the sessions the
switch is to hold, for the one writer (writer.py: both directions of a
session, group-committed, the same as controller mode's), and `session
offload|idle|adopt` lines to the instance that owns a session (offload_io.py
sends them). No I/O here, so every rule below is unit-tested.

- **What is offloaded.** Every session an instance opens, but hairpin sessions
  (the remote is the NAT's own: their packets come back in through the switch
  as outside traffic, and swpath keeps the pair together) and, when the switch
  is full, the ones that do not fit: those stay in software, counted, never
  refused or dropped (the instance already translates them). The last tenth
  of the switch's tables is kept for long-lived flows: past that mark a
  session waits in software (`sessions_deferred`) until it is an established
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
  them, and written again when they hold another idle timeout than the
  phase the instance announces; after every instance has synced, entries
  nobody claimed are deleted.
- **The operator's view.** `quicknat sessions` (list, delete, flush) and
  `quicknat stats` on the controller span every instance (offload_view.py):
  each row says its instance and whether the switch holds it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from quicknat.addr import format_ipv4
from quicknat.config.command_render import render
from quicknat.config.commands import rule_command, runtime_commands
from quicknat.config.model import Config, OffloadInstall
from quicknat.controller.context import ModeContext
from quicknat.controller.install_state import Held, InstallState
from quicknat.controller.modes.offload_io import OffloadIO
from quicknat.controller.modes.offload_view import (
    deleted_total,
    instance_line,
    merged_rows,
    stats_view,
)
from quicknat.controller.punts import Punts
from quicknat.controller.reconfigure import ReconfigureError
from quicknat.controller.recovery import HeldEntries, HeldSession
from quicknat.controller.status import SessionQuery
from quicknat.controller.writer import SwitchWriter, new_writer
from quicknat.counters import OFFLOAD
from quicknat.nat.session import FlowKey, Origin, Session
from quicknat.nat.tcp_state import PHASES, TcpPhase
from quicknat.nat.timeouts import idle_timeout
from quicknat.offload.stream import SessionEvent
from quicknat.rules import Protocol

log = logging.getLogger("quicknat.offload")

#: The last 1/HIGH_WATER_SHARE of the switch's tables is kept for long-lived flows.
HIGH_WATER_SHARE = 10

#: How long a session handed back may wait for its instance's `opened`.
HANDBACK_WAIT_S = 5.0


@dataclass(slots=True, eq=False)
class OffloadSession(Session):
    """A session an instance opened, as the switch gets it. `id` is the
    mode's own (unique, never reused: the install state is keyed by it);
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


class OffloadMode:
    def __init__(self, context: ModeContext) -> None:
        config = context.config
        self.config = config
        self.learning = config.offload.install is OffloadInstall.LEARN
        if self.learning and not context.target.learns:
            raise ValueError(
                f'[offload] install = "learn" needs a switch that learns sessions: '
                f"{context.target.name} does not (docs/offload.md, Learning)"
            )
        self.stats = context.stats
        self.now = context.now
        self.writer: SwitchWriter[OffloadSession] = new_writer(context, self)
        # the switch punts only its error copies here (punts.py)
        self.punts = Punts(context)
        self.io = OffloadIO(self, config.slow_paths, context.stats, config.offload.batch_window_ms)
        self._public_masks = tuple((p.address, p.mask) for p in config.public_prefixes())
        # The places kept for long-lived flows: past the rest, only those go in.
        self.reserve = max(1, context.target.session_capacity // HIGH_WATER_SHARE)
        self.sessions: dict[tuple[int, int], OffloadSession] = {}  # (instance, swpath id)
        self._next_uid = 1
        self.by_key: dict[FlowKey, OffloadSession] = {}  # in2out key: idle notifications
        self._software_only: set[tuple[int, int]] = set()  # kept in software
        instances = len(config.slow_paths)
        self._synced = [False] * instances
        self._runs: list[int | None] = [None] * instances  # each instance's last `run`
        # sessions handed back to a restarted instance, until it announces them
        self._handing_back: dict[FlowKey, OffloadSession] = {}
        # sessions found in the switch at start, not yet claimed (by in2out key:
        # their out2in key and the idle timeout their entry holds)
        self._unclaimed: dict[FlowKey, HeldSession] = {}

    @staticmethod
    def counter_names() -> tuple[str, ...]:
        """Offload mode's vocabulary (counters.OFFLOAD: the writer's and
        offload_io.py's among them)."""
        return tuple(c.p4 for c in OFFLOAD)

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
                    self.writer.want_rewrite(s)  # its idle timeout, with the next flush
        elif e.kind == "closed":
            s = self.sessions.get((instance, e.id))
            if s is not None and s.in2out == self._key_of(e):
                self._close(s)
            self._software_only.discard((instance, e.id))
        elif e.kind == "synced":
            self._instance_synced(instance, e.run)
        # "lost": offload_io.py resubscribes (stream_restarted), nothing to do here

    def stream_restarted(self, instance: int) -> None:
        """The instance's stream begins again: its sessions are stale until the
        snapshot confirms them."""
        self.stats["instance_resyncs"] += 1
        self._synced[instance] = False
        for s in self.sessions.values():
            if s.instance == instance:
                s.stale = True
        self._software_only = {k for k in self._software_only if k[0] != instance}

    def pipeline_pushed(self) -> None:
        """A learning switch with new tables holds no lease of any instance's
        ports: each may end the quiet period it keeps after a start without
        its state (docs/offload.md, Learning)."""
        if self.learning:
            self.stats["learn_fresh_told"] += 1
            for instance in range(len(self.config.slow_paths)):
                self.io.command(instance, [render("offload fresh")])

    def idle(self, key: FlowKey) -> None:
        """The switch reports a session's in2out entry idle: ask its instance."""
        s = self.by_key.get(key)
        if s is None or not self.writer.in_switch(s):
            return
        self.stats["idle_forwarded"] += 1
        self.io.command(s.instance, [command_line("idle", s)])

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
            self._taken_back(back, e)
            return
        if known is not None:
            if known.in2out == key:  # the snapshot, or a repeat around it
                known.stale = False
                return
            self._close(known)  # the instance restarted: its ids start again
        if sid in self._software_only:
            return
        self.stats["sessions_announced"] += 1
        assert e.remote is not None
        if self._is_public(e.remote.address):
            self.stats["software_only.hairpin"] += 1
            self._software_only.add(sid)
            return
        if self.learning:
            # (an instance in learn mode announces none: the switch learns
            # each from its tags and lets it go by itself, config/leases.py)
            self._software_only.add(sid)
            return
        s = session_of(self._next_uid, instance, e, self.now())
        self._next_uid += 1
        self.sessions[sid] = s
        self.by_key[key] = s  # its in2out
        self._place(s)

    def _taken_back(self, back: OffloadSession, e: SessionEvent) -> None:
        """A session handed back is announced by its restarted instance: taken
        over with its external endpoint (the switch's entries stay, under the
        new id), or mapped anew (the old entries go; this one is new)."""
        del self._handing_back[back.in2out]
        back.handed_back = None
        if back.external != e.external:
            self.stats["handback_refused"] += 1
            self._close(back)
            self._opened(back.instance, e)
            return
        self.stats["sessions_handed_back"] += 1
        back.swpath_id = e.id
        back.phase = _phase(e)
        self.sessions[back.instance, e.id] = back
        if not self.writer.in_switch(back):  # the switch restarted meanwhile
            self._place(back)

    def _place(self, s: OffloadSession) -> None:
        """Adopt the session's entries if the switch has them, else offer it
        a place: the last `reserve` places only to long-lived flows (an
        established TCP session), not to the next DNS query; past them it
        waits in software, and with none left it stays there."""
        held = self._unclaimed.get(s.in2out) if self._unclaimed else None
        if held is not None and held.out2in == s.out2in:
            del self._unclaimed[s.in2out]
            self.writer.adopt(s)
            self.stats["sessions_recovered"] += 1
            # The instance says the flow's TCP phase; the entry may hold an
            # older phase's timeout (its MODIFY went with the connection or
            # the controller): written again (RFC 7857 sec. 2.2).
            if held.idle_timeout_s != self.writer.entry_timeout(s):
                self.writer.want_rewrite(s)
            self.io.command(s.instance, [command_line("offload", s)])
            return
        free = self.writer.free_slots()
        if free > self.reserve or (free > 0 and self._long_lived(s)):
            self.writer.queue(s)
        elif free > 0:
            s.deferred = True
            self.stats["sessions_deferred"] += 1
        else:
            self.writer.table_full()
            self._to_software(s, full=True)

    @staticmethod
    def _long_lived(s: OffloadSession) -> bool:
        return s.protocol == Protocol.TCP and s.phase is TcpPhase.ESTABLISHED

    def _to_software(self, s: OffloadSession, full: bool) -> None:
        """The session stays in its instance only (a full table, or a write
        the switch refused)."""
        if full:
            self.stats["software_only.table_full"] += 1
        self._forget(s)
        self._software_only.add((s.instance, s.swpath_id))

    def _close(self, s: OffloadSession) -> None:
        state = self.writer.state(s)
        if state is InstallState.INSTALLING:
            s.closed = True  # deleted once its INSERT is done
        elif state in (InstallState.INSTALLED, InstallState.REWRITING):
            self.writer.expire(s)  # DELETE with the next flush
        elif state in (InstallState.EXPIRING, InstallState.DELETING):
            pass
        else:
            self._forget(s)

    def _forget(self, s: OffloadSession) -> None:
        self.writer.forget(s)
        self._drop(s)

    def _drop(self, s: OffloadSession) -> None:
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
            if restarted and self.writer.in_switch(s) and not s.closed:
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
        self.io.command(s.instance, [adopt_line(s)])

    def tick(self) -> None:
        """Called about every second: sessions handed back that their
        instance did not take over in time are deleted from the switch."""
        now = self.now()
        for key, s in list(self._handing_back.items()):
            if s.handed_back is not None and now - s.handed_back > HANDBACK_WAIT_S:
                del self._handing_back[key]
                s.handed_back = None
                self.stats["handback_refused"] += 1
                self._close(s)

    def _maybe_sweep(self) -> None:
        """Once every instance has synced, entries found in the switch that
        none claimed are deleted."""
        if all(self._synced) and self._unclaimed:
            for in2out, held in self._unclaimed.items():
                self.writer.sweep("nat_in2out", in2out)
                self.writer.sweep("nat_out2in", held.out2in)
            self._unclaimed = {}

    # -- the writer's outcomes (writer.Outcomes) -----------------------------------------

    def timeout(self, s: OffloadSession) -> int:
        """The one timeout rule (nat/timeouts.py), by the phase the instance
        announced (RFC 7857 sec. 2.2)."""
        return idle_timeout(self.config.timeouts, s.protocol, s.phase)

    def installed(self, done: Sequence[tuple[OffloadSession, list[Held]]]) -> None:
        """Each instance is told which of its sessions the switch forwards
        now (it ages them by the switch's idle reports from here); one it
        closed during the write is deleted again."""
        offloaded: dict[int, list[str]] = {}
        for s, _ in done:
            if s.closed:
                self.writer.expire(s)
                continue
            offloaded.setdefault(s.instance, []).append(command_line("offload", s))
        for instance, lines in offloaded.items():
            self.io.command(instance, lines)

    def refused(self, s: OffloadSession, packets: list[Held], full: bool) -> None:
        """Not offloaded: its instance goes on translating it."""
        self._to_software(s, full)

    def deleted(self, s: OffloadSession, revived: bool) -> None:
        self._drop(s)
        self.stats["sessions_closed"] += 1

    def rewritten(self, s: OffloadSession, packets: list[Held]) -> None:
        """Nothing waits for a rewrite: the instance translates meanwhile."""

    # -- the mode (base.Mode) ---------------------------------------------------------------

    def start(self) -> None:
        self.io.start()

    async def stop(self) -> None:
        await self.io.stop()

    def recover(self, held: HeldEntries) -> None:
        """Every session loses its install state; each is adopted when its
        instance claims entries the switch holds (now, or in its snapshot to
        come), else queued; entries no instance claims are swept once all
        have synced, entries without their other half at once."""
        self.writer.lose_all([*self.sessions.values(), *self._handing_back.values()])
        for table, key in held.halves:
            self.writer.sweep(table, key)
        self._unclaimed = {h.in2out: h for h in held.sessions}
        for s in list(self.sessions.values()):
            self._place(s)
        self._maybe_sweep()
        log.info("offload: %d sessions in the switch to reconcile", len(held.sessions))

    def flush(self) -> None:
        """What the instances' events asked for (offload_io.py)."""
        self.writer.flush()

    async def prepare(self, running: Config, new: Config, flush: bool) -> None:
        """The instances decide every new flow, so they get the change first
        (the commands `quicknat reload` computes for swpath alone); the
        switch then steers to them what is new in scope."""
        rules = {rule.id: rule_command(rule) for rule in running.rules}
        refused = await self.io.configure(runtime_commands(rules, new, flush))
        if refused:
            raise ReconfigureError(
                "; ".join(refused) + " (instances not named took the change; "
                "the switch and the controller's configuration are unchanged)"
            )

    def apply(self, new: Config, removed: set[int], flush: bool) -> str:
        """New timeouts for the sessions written from now on; the instances
        flushed their own sessions (prepare)."""
        self.config = new
        self.punts.config = new
        return ""

    def session_count(self) -> int:
        """The controller holds no session of its own: the instances' count
        is `quicknat stats`' instances_total (stats_view), asked of them."""
        return 0

    async def session_rows(self, query: SessionQuery) -> list[dict[str, object]]:
        """Every instance's sessions the query selects, with their instance
        and whether the switch holds them (offload_view.py)."""
        replies = await self.io.ask_all(instance_line(query))
        return merged_rows(replies, self._in_switch)

    def _in_switch(self, instance: int, row: dict[str, Any]) -> bool:
        """Whether the switch holds this instance's row: a session this mode
        has installed (the same id, and the same key: not an id of the
        instance's last run), or with learning, one whose lease the
        instance says has not ended (its `switch_lease_s`: the switch
        learned it from the session's last tag, docs/offload.md)."""
        if self.learning:
            return float(row.get("switch_lease_s", 0)) > 0
        s = self.sessions.get((instance, int(row["id"])))
        return (
            s is not None
            and self.writer.in_switch(s)
            and row.get("internal") == _endpoint(s.internal.address, s.internal.port)
            and row.get("remote") == _endpoint(s.remote_address, s.remote_port)
        )

    async def delete_sessions(self, query: SessionQuery) -> int:
        """Each instance deletes its own sessions the query selects; their
        `closed` events take the switch's entries away (on_event)."""
        return deleted_total(await self.io.ask_all(instance_line(query)))

    async def stats_view(self) -> dict[str, object]:
        """Each instance's own counters, and their sum."""
        return stats_view(await self.io.ask_all(render("stats")))

    def pools(self) -> list[dict[str, object]]:
        """The instances allocate, each from its block (their exporters)."""
        return []
