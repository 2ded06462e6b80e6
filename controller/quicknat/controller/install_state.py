"""Where each session's switch entries stand: one explicit state per session.

The controller writes a session's two entries (in2out, out2in) after the NAT
core opens it, rewrites its in2out entry when its TCP state or hairpin partner
changes, and deletes both when the switch reports it idle. Each of those writes
is asynchronous and may race a packet of the same flow, so every session is in
exactly one of these states, changed only by the transitions below (no I/O
here; writer.py does the writes and reports their outcome):

    (none) --queue--> QUEUED --take_batch--> INSTALLING --installed--> INSTALLED
                                                        \\-stale-----> REWRITING
                                                        \\-failed----> (none)
    INSTALLED --want_rewrite--> REWRITING --take_rewrites, rewritten--> INSTALLED
    INSTALLED, REWRITING --idle--> EXPIRING --take_expiring--> DELETING
        (take_expiring waits for a MODIFY of its entry still out)
    DELETING --deleted--> (none), or QUEUED when a packet revived it meanwhile

A session in INSTALLED, REWRITING or EXPIRING has entries in the switch; a
packet punted for it can be sent back through the pipeline at once, unless its
entry is being rewritten (REWRITING): then it is held, as in QUEUED and
INSTALLING, until the write is done. A DELETE in flight is never overtaken: a
packet that revives a DELETING session is held and the session is queued again
only when the DELETE is done (else the DELETE would remove the new entries).

A session's state is a slot on the session itself (`Session.install`), not a
table beside it: bench-bmv2 holds the controller to 1 KiB per session, and two
dictionary entries per session cost ~100 bytes of it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

Held = tuple[bytes, int]  # a punted packet and the port it came in on


class Tracked(Protocol):
    """What the state machine needs of a session."""

    id: int
    install: Any  # InstallState | None


S = TypeVar("S", bound=Tracked)


class InstallState(enum.Enum):
    QUEUED = "queued"  # waiting for the next INSERT write
    INSTALLING = "installing"  # its INSERT is in flight
    INSTALLED = "installed"  # both entries in the switch
    REWRITING = "rewriting"  # installed; a MODIFY of its in2out entry queued or in flight
    EXPIRING = "expiring"  # the switch reported it idle; its DELETE is queued
    DELETING = "deleting"  # its DELETE is in flight

    # Members are singletons compared by identity, so identity's hash is
    # theirs: Enum's own hashes the name in Python, a fifth of a microsecond
    # each, and counting states looks several up per session and write.
    __hash__ = object.__hash__


IN_SWITCH = frozenset({InstallState.INSTALLED, InstallState.REWRITING, InstallState.EXPIRING})


class TransitionError(RuntimeError):
    """A transition the state machine does not have: a controller bug."""


class Installs(Generic[S]):
    """The install state of every session the controller writes, the packets
    waiting for a write, and the queues the writer takes work from (writer.py)."""

    def __init__(self) -> None:
        self._held: dict[int, list[Held]] = {}  # by session id, while held
        self._batch: list[S] = []  # QUEUED, in order
        self._expiring: list[S] = []  # EXPIRING, in order
        self._rewrite: dict[int, S] = {}  # REWRITING, MODIFY not yet sent (ordered)
        self._rewriting: set[int] = set()  # REWRITING or EXPIRING, MODIFY in flight
        self._revived: set[int] = set()  # DELETING, with a packet waiting
        self._count = dict.fromkeys(InstallState, 0)  # sessions per state
        self._tracked = 0  # sessions in any state

    # -- queries -------------------------------------------------------------------

    @staticmethod
    def state(session: S) -> InstallState | None:
        state: InstallState | None = session.install
        return state

    def in_switch(self, session: S) -> bool:
        """Whether the session's entries are in the switch."""
        return session.install in IN_SWITCH

    def count(self, *states: InstallState) -> int:
        """Sessions in these states (kept as they change: O(1))."""
        return sum(self._count[s] for s in states)

    def installed_count(self) -> int:
        """Sessions with entries in the switch."""
        return self.count(*IN_SWITCH)

    def in_use(self) -> int:
        """Sessions whose entries hold a place in the switch's tables, or will
        once written: every state but DELETING (their places are being freed).
        Asked per new flow, so kept as a running figure."""
        return self._tracked - self._count[InstallState.DELETING]

    def held_packets(self) -> int:
        return sum(len(p) for p in self._held.values())

    def queued(self) -> int:
        return len(self._batch)

    def has_work(self) -> bool:
        return bool(self._batch or self._expiring or self._rewrite)

    def queued_sessions(self) -> list[S]:
        return list(self._batch)

    # -- transitions -----------------------------------------------------------------

    def _set(self, session: S, state: InstallState | None) -> None:
        before = session.install
        if before is not None:
            self._count[before] -= 1
            self._tracked -= 1
        if state is not None:
            self._count[state] += 1
            self._tracked += 1
        session.install = state

    @staticmethod
    def _expect(session: S, *allowed: InstallState | None) -> InstallState | None:
        state: InstallState | None = session.install
        if state not in allowed:
            names = ", ".join(a.value if a else "none" for a in allowed)
            now = state.value if state else "none"
            raise TransitionError(f"session {session.id}: {now}, expected {names}")
        return state

    def queue(self, session: S, packet: Held | None = None) -> bool:
        """A session to install, with its first packet. True when it joins the
        batch; False when it waits for its DELETE to finish (revived)."""
        state = self._expect(session, None, InstallState.DELETING)
        held = self._held.setdefault(session.id, [])
        if packet is not None:
            held.append(packet)
        if state is InstallState.DELETING:
            self._revived.add(session.id)
            return False
        self._set(session, InstallState.QUEUED)
        self._batch.append(session)
        return True

    def hold(self, session: S, packet: Held) -> None:
        """A packet of a session whose entries are not (yet, or not rightly) in
        the switch: sent when its write is done."""
        self._expect(session, InstallState.QUEUED, InstallState.INSTALLING, InstallState.REWRITING)
        self._held.setdefault(session.id, []).append(packet)

    def take_batch(self, limit: int, blocked: Callable[[S], bool] | None = None) -> list[S]:
        """QUEUED -> INSTALLING: the sessions of the next INSERT write, in
        order; those `blocked` names stay QUEUED, in their places (an entry
        of theirs is being deleted: the writer's DELETE-first rule)."""
        taken: list[S] = []
        if blocked is None:
            taken, self._batch = self._batch[:limit], self._batch[limit:]
        else:
            kept: list[S] = []
            for session in self._batch:
                (kept if len(taken) >= limit or blocked(session) else taken).append(session)
            self._batch = kept
        for session in taken:
            self._set(session, InstallState.INSTALLING)
        return taken

    def installed(self, session: S, stale: bool = False) -> list[Held]:
        """INSTALLING -> INSTALLED: its held packets, to send. A stale entry (a
        hairpin partner came or went during the write) is rewritten first; its
        packets wait for that."""
        self._expect(session, InstallState.INSTALLING)
        if stale:
            self._set(session, InstallState.REWRITING)
            self._rewrite[session.id] = session
            return []
        self._set(session, InstallState.INSTALLED)
        return self._held.pop(session.id, [])

    def failed(self, session: S) -> list[Held]:
        """INSTALLING -> none: the write refused it; its held packets."""
        self._expect(session, InstallState.INSTALLING)
        return self.forget(session)

    def want_rewrite(self, session: S) -> bool:
        """Its in2out entry must be written again (a new timeout or partner).
        Only an entry in the switch and not on its way out is: False otherwise."""
        if session.install not in (InstallState.INSTALLED, InstallState.REWRITING):
            return False
        self._set(session, InstallState.REWRITING)
        self._rewrite[session.id] = session
        return True

    def take_rewrites(self) -> list[S]:
        """The sessions of the next MODIFY write (now in flight). One whose
        previous MODIFY is still out waits for it: two in flight could land in
        either order."""
        taken = [s for sid, s in self._rewrite.items() if sid not in self._rewriting]
        for session in taken:
            del self._rewrite[session.id]
            self._rewriting.add(session.id)
        return taken

    def rewritten(self, session: S) -> list[Held]:
        """A MODIFY is done: INSTALLED again, and its held packets, unless
        another rewrite was asked for meanwhile (they wait for that one) or the
        session went idle or away."""
        self._rewriting.discard(session.id)
        state = session.install
        if state is InstallState.REWRITING and session.id not in self._rewrite:
            self._set(session, InstallState.INSTALLED)
            return self._held.pop(session.id, [])
        if state is InstallState.EXPIRING:
            return self._held.pop(session.id, [])
        return []

    def idle(self, session: S) -> bool:
        """The switch reported its entry idle: its DELETE is queued. Only an
        entry in the switch, and once: False otherwise."""
        if session.install not in (InstallState.INSTALLED, InstallState.REWRITING):
            return False
        self._rewrite.pop(session.id, None)
        self._set(session, InstallState.EXPIRING)
        self._expiring.append(session)
        return True

    def take_expiring(self) -> list[S]:
        """EXPIRING -> DELETING: the sessions of the next DELETE write. One
        whose MODIFY is still out stays EXPIRING until it is answered (taken
        by the flush after it): the switch may apply two writes out at once
        in either order (P4Runtime spec sec. 12.2), and a MODIFY that landed
        after the DELETE, and after the INSERT of a session a packet revived,
        would put its old timeout back."""
        if not self._rewriting:
            taken, self._expiring = self._expiring, []
        else:
            taken = [s for s in self._expiring if s.id not in self._rewriting]
            self._expiring = [s for s in self._expiring if s.id in self._rewriting]
        for session in taken:
            self._set(session, InstallState.DELETING)
        return taken

    def deleted(self, session: S) -> bool:
        """Its DELETE is done. True: a packet revived it, and it is QUEUED again
        (the NAT keeps it); False: it is gone from here (the NAT forgets it)."""
        self._expect(session, InstallState.DELETING)
        if session.id in self._revived:
            self._revived.discard(session.id)
            self._set(session, InstallState.QUEUED)
            self._batch.append(session)
            return True
        self.forget(session)
        return False

    def adopt(self, session: S) -> None:
        """Entries found in the switch (recovery after a reconnect): INSTALLED,
        whatever was queued for it before the connection went."""
        self._expect(session, None, *IN_SWITCH)
        self.forget(session)
        self._set(session, InstallState.INSTALLED)

    def drop_held(self) -> int:
        """The connection went: the held packets are lost. How many."""
        lost = self.held_packets()
        self._held.clear()
        self._revived.clear()
        return lost

    def lose_all(self, sessions: Iterable[S]) -> list[Held]:
        """The switch lost every entry (a new pipeline): every session to none;
        the packets that were held."""
        return [p for session in sessions for p in self.forget(session)]

    def forget(self, session: S) -> list[Held]:
        """Any state -> none (the session is gone, or the switch lost its
        entries): its held packets."""
        state = session.install
        self._set(session, None)
        # a session is in a queue exactly while in its state: no scan of the
        # queues for the others (an expiry forgets a session per DELETE)
        if state is InstallState.QUEUED:
            self._batch.remove(session)
        elif state is InstallState.EXPIRING:
            self._expiring.remove(session)
        self._rewrite.pop(session.id, None)
        self._rewriting.discard(session.id)
        self._revived.discard(session.id)
        return self._held.pop(session.id, [])
