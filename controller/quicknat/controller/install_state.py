"""Where each session's switch entries stand: one explicit state per session.

The controller writes a session's two entries (in2out, out2in) after the NAT
core opens it, rewrites its in2out entry when its TCP state or hairpin partner
changes, and deletes both when the switch reports it idle. Each of those writes
is asynchronous and may race a packet of the same flow, so every session is in
exactly one of these states, changed only by the transitions below (no I/O
here; write_path.py does the writes and reports their outcome):

    (none) --queue--> QUEUED --take_batch--> INSTALLING --installed--> INSTALLED
                                                        \\-stale-----> REWRITING
                                                        \\-failed----> (none)
    INSTALLED --want_rewrite--> REWRITING --take_rewrites, rewritten--> INSTALLED
    INSTALLED, REWRITING --idle--> EXPIRING --take_expiring--> DELETING
    DELETING --deleted--> (none), or QUEUED when a packet revived it meanwhile

A session in INSTALLED, REWRITING or EXPIRING has entries in the switch; a
packet punted for it can be sent back through the pipeline at once, unless its
entry is being rewritten (REWRITING): then it is held, as in QUEUED and
INSTALLING, until the write is done. A DELETE in flight is never overtaken: a
packet that revives a DELETING session is held and the session is queued again
only when the DELETE is done (else the DELETE would remove the new entries).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Generic, TypeVar

Held = tuple[bytes, int]  # a punted packet and the port it came in on
S = TypeVar("S")  # a session (anything with an `id`)


class InstallState(enum.Enum):
    QUEUED = "queued"  # waiting for the next INSERT write
    INSTALLING = "installing"  # its INSERT is in flight
    INSTALLED = "installed"  # both entries in the switch
    REWRITING = "rewriting"  # installed; a MODIFY of its in2out entry queued or in flight
    EXPIRING = "expiring"  # the switch reported it idle; its DELETE is queued
    DELETING = "deleting"  # its DELETE is in flight


IN_SWITCH = frozenset({InstallState.INSTALLED, InstallState.REWRITING, InstallState.EXPIRING})


class TransitionError(RuntimeError):
    """A transition the state machine does not have: a controller bug."""


class Installs(Generic[S]):
    """The install state of every session the controller writes, the packets
    waiting for a write, and the queues the write path takes work from."""

    def __init__(self) -> None:
        self._state: dict[int, InstallState] = {}
        self._session: dict[int, S] = {}
        self._held: dict[int, list[Held]] = {}
        self._batch: list[int] = []  # QUEUED, in order
        self._expiring: list[int] = []  # EXPIRING, in order
        self._rewrite: dict[int, None] = {}  # REWRITING, MODIFY not yet sent (ordered set)
        self._rewriting: set[int] = set()  # REWRITING or EXPIRING, MODIFY in flight
        self._revived: set[int] = set()  # DELETING, with a packet waiting
        self._count = dict.fromkeys(InstallState, 0)  # sessions per state

    # -- queries -------------------------------------------------------------------

    def state(self, sid: int) -> InstallState | None:
        return self._state.get(sid)

    def in_switch(self, sid: int) -> bool:
        """Whether the session's entries are in the switch."""
        return self._state.get(sid) in IN_SWITCH

    def count(self, *states: InstallState) -> int:
        """Sessions in these states (kept as they change: O(1))."""
        return sum(self._count[s] for s in states)

    def installed_count(self) -> int:
        """Sessions with entries in the switch."""
        return self.count(*IN_SWITCH)

    def held_packets(self) -> int:
        return sum(len(p) for p in self._held.values())

    def queued(self) -> int:
        return len(self._batch)

    def has_work(self) -> bool:
        return bool(self._batch or self._expiring or self._rewrite)

    def queued_sessions(self) -> list[S]:
        return [self._session[sid] for sid in self._batch]

    def sessions(self) -> Iterator[S]:
        return iter(self._session.values())

    # -- transitions -----------------------------------------------------------------

    def _set(self, sid: int, state: InstallState | None) -> None:
        before = self._state.get(sid)
        if before is not None:
            self._count[before] -= 1
        if state is not None:
            self._count[state] += 1
        if state is None:
            self._state.pop(sid, None)
            self._session.pop(sid, None)
        else:
            self._state[sid] = state

    def _expect(self, sid: int, *allowed: InstallState | None) -> InstallState | None:
        state = self._state.get(sid)
        if state not in allowed:
            names = ", ".join(a.value if a else "none" for a in allowed)
            now = state.value if state else "none"
            raise TransitionError(f"session {sid}: {now}, expected {names}")
        return state

    def queue(self, sid: int, session: S, packet: Held | None = None) -> bool:
        """A session to install, with its first packet. True when it joins the
        batch; False when it waits for its DELETE to finish (revived)."""
        state = self._expect(sid, None, InstallState.DELETING)
        held = self._held.setdefault(sid, [])
        if packet is not None:
            held.append(packet)
        if state is InstallState.DELETING:
            self._revived.add(sid)
            return False
        self._session[sid] = session
        self._set(sid, InstallState.QUEUED)
        self._batch.append(sid)
        return True

    def hold(self, sid: int, packet: Held) -> None:
        """A packet of a session whose entries are not (yet, or not rightly) in
        the switch: sent when its write is done."""
        self._expect(sid, InstallState.QUEUED, InstallState.INSTALLING, InstallState.REWRITING)
        self._held.setdefault(sid, []).append(packet)

    def take_batch(self, limit: int) -> list[S]:
        """QUEUED -> INSTALLING: the sessions of the next INSERT write."""
        taken, self._batch = self._batch[:limit], self._batch[limit:]
        for sid in taken:
            self._set(sid, InstallState.INSTALLING)
        return [self._session[sid] for sid in taken]

    def installed(self, sid: int, stale: bool = False) -> list[Held]:
        """INSTALLING -> INSTALLED: its held packets, to send. A stale entry (a
        hairpin partner came or went during the write) is rewritten first; its
        packets wait for that."""
        self._expect(sid, InstallState.INSTALLING)
        if stale:
            self._set(sid, InstallState.REWRITING)
            self._rewrite[sid] = None
            return []
        self._set(sid, InstallState.INSTALLED)
        return self._held.pop(sid, [])

    def failed(self, sid: int) -> list[Held]:
        """INSTALLING -> none: the write refused it; its held packets."""
        self._expect(sid, InstallState.INSTALLING)
        return self.forget(sid)

    def want_rewrite(self, sid: int) -> bool:
        """Its in2out entry must be written again (a new timeout or partner).
        Only an entry in the switch and not on its way out is: False otherwise."""
        state = self._state.get(sid)
        if state not in (InstallState.INSTALLED, InstallState.REWRITING):
            return False
        self._set(sid, InstallState.REWRITING)
        self._rewrite[sid] = None
        return True

    def take_rewrites(self) -> list[S]:
        """The sessions of the next MODIFY write (now in flight). One whose
        previous MODIFY is still out waits for it: two in flight could land in
        either order."""
        taken = [sid for sid in self._rewrite if sid not in self._rewriting]
        for sid in taken:
            del self._rewrite[sid]
        self._rewriting.update(taken)
        return [self._session[sid] for sid in taken]

    def rewritten(self, sid: int) -> list[Held]:
        """A MODIFY is done: INSTALLED again, and its held packets, unless
        another rewrite was asked for meanwhile (they wait for that one) or the
        session went idle or away."""
        self._rewriting.discard(sid)
        state = self._state.get(sid)
        if state is InstallState.REWRITING and sid not in self._rewrite:
            self._set(sid, InstallState.INSTALLED)
            return self._held.pop(sid, [])
        if state is InstallState.EXPIRING:
            return self._held.pop(sid, [])
        return []

    def rewriting(self, sid: int) -> bool:
        return self._state.get(sid) is InstallState.REWRITING

    def idle(self, sid: int) -> bool:
        """The switch reported its entry idle: its DELETE is queued. Only an
        entry in the switch, and once: False otherwise."""
        if self._state.get(sid) not in (InstallState.INSTALLED, InstallState.REWRITING):
            return False
        self._rewrite.pop(sid, None)
        self._set(sid, InstallState.EXPIRING)
        self._expiring.append(sid)
        return True

    def take_expiring(self) -> list[S]:
        """EXPIRING -> DELETING: the sessions of the next DELETE write."""
        taken, self._expiring = self._expiring, []
        for sid in taken:
            self._set(sid, InstallState.DELETING)
        return [self._session[sid] for sid in taken]

    def deleted(self, sid: int) -> bool:
        """Its DELETE is done. True: a packet revived it, and it is QUEUED again
        (the NAT keeps it); False: it is gone from here (the NAT forgets it)."""
        self._expect(sid, InstallState.DELETING)
        if sid in self._revived:
            self._revived.discard(sid)
            self._set(sid, InstallState.QUEUED)
            self._batch.append(sid)
            return True
        self.forget(sid)
        return False

    def adopt(self, sid: int, session: S) -> None:
        """Entries found in the switch (recovery after a reconnect): INSTALLED,
        whatever was queued for it before the connection went."""
        self._expect(sid, None, *IN_SWITCH)
        self.forget(sid)
        self._session[sid] = session
        self._set(sid, InstallState.INSTALLED)

    def drop_held(self) -> int:
        """The connection went: the held packets are lost. How many."""
        lost = self.held_packets()
        self._held.clear()
        self._revived.clear()
        return lost

    def lose_all(self) -> list[Held]:
        """The switch lost every entry (a new pipeline): every session to none;
        the packets that were held."""
        held = [p for sid in list(self._state) for p in self.forget(sid)]
        return held

    def forget(self, sid: int) -> list[Held]:
        """Any state -> none (the session is gone, or the switch lost its
        entries): its held packets."""
        self._set(sid, None)
        if sid in self._batch:
            self._batch.remove(sid)
        if sid in self._expiring:
            self._expiring.remove(sid)
        self._rewrite.pop(sid, None)
        self._rewriting.discard(sid)
        self._revived.discard(sid)
        return self._held.pop(sid, [])
