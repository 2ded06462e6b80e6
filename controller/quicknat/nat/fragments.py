"""Virtual reassembly of IPv4 fragments for the P4 path (RFC 4787 REQ-14;
IN-IP-8 of docs/nat-behavior.md), as swpath's frag.h and VPP's ip4-sv-reass:
no datagram is put back together. The switch cannot remember a datagram's
ports, so it sends every fragment that needs NAT to the controller
(FRAGMENT packet-ins); the first fragment's ports are kept here per
(source, destination, protocol, IP ID), and each later fragment is translated
with them. Fragments that come before their first are held until it arrives
or the datagram times out.

The same bounds as swpath, so that an orphan-fragment flood is bounded in
memory on either path: 8 fragments held per datagram, 256 in all, 16
datagrams waiting for their first per source, 2 s per datagram, 8 runs of
bytes seen per datagram. No I/O: the controller hands frames in and sends
what comes out.

Overlaps (IN-IP-9 of docs/nat-behavior.md), as swpath's frag.h and Linux
since 4.19: the NAT decides on the first fragment's header, so a fragment
over bytes already seen could change what the receiver reassembles after
the NAT let it through (RFC 1858 sec. 3.2, RFC 3128; RFC 5722 forbids
overlaps for IPv6). Each datagram keeps the runs of bytes it has seen and
the end its last fragment set. A fragment wholly inside them (a duplicate,
whatever its content) is dropped and the datagram goes on: only the first
copy leaves, which is what the NAT checked, and a duplicate the network
made costs nothing. A fragment that overlaps them partly, or whose end
contradicts the datagram's (the teardrop pair), kills the datagram: its held
fragments are dropped, and so is every later fragment of it until its time
is up. All are counted `fragment.overlap`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import NamedTuple

HOLD_PER_DATAGRAM = 8
HELD_MAX = 256
WAITING_PER_SOURCE = 16
TIMEOUT_S = 2.0
DATAGRAMS_MAX = 1024
RANGES_MAX = 8


class Span(NamedTuple):
    """Where a fragment's data lies in its datagram's IP payload: bytes
    [start, end), and whether it is the last fragment (MF clear)."""

    start: int
    end: int
    last: bool


class DatagramKey(NamedTuple):
    src: int
    dst: int
    protocol: int
    ident: int


class Outcome(enum.Enum):
    """What became of a later fragment whose ports are not known."""

    HELD = "held until its first fragment"
    OVER_LIMIT = "over the holding limits"
    OVERLAP = "over bytes its datagram had, or of a datagram that overlapped"


class _Seen(enum.Enum):
    NEW = enum.auto()
    DUPLICATE = enum.auto()
    OVERLAP = enum.auto()
    FULL = enum.auto()


@dataclass
class _Datagram:
    expires: float
    ports: tuple[int, int] | None = None
    held: list[bytes] = field(default_factory=list)
    runs: list[tuple[int, int]] = field(default_factory=list)  # bytes seen
    last_end: int | None = None  # where its last fragment (MF clear) ended
    max_end: int = 0
    dead: bool = False  # overlapped: its fragments are dropped

    def bad_end(self, span: Span) -> bool:
        """A last fragment ending before bytes seen or elsewhere than an
        earlier last one, or any fragment past the last one's end (Linux
        ip_frag_queue's checks)."""
        if span.last:
            return (self.last_end is not None and span.end != self.last_end) or (
                span.end < self.max_end
            )
        return self.last_end is not None and span.end > self.last_end

    def record(self, span: Span) -> _Seen:
        """Records span among the runs seen, merged with those it touches."""
        if self.bad_end(span):
            return _Seen.OVERLAP
        start, end = span.start, span.end
        if end <= start:
            return _Seen.DUPLICATE  # carries nothing
        for run_start, run_end in self.runs:
            if run_start <= start and end <= run_end:
                return _Seen.DUPLICATE
            if start < run_end and run_start < end:
                return _Seen.OVERLAP
        touching = [r for r in self.runs if r[1] == start or r[0] == end]
        if not touching and len(self.runs) >= RANGES_MAX:
            return _Seen.FULL
        for run in touching:
            self.runs.remove(run)
            start, end = min(start, run[0]), max(end, run[1])
        self.runs.append((start, end))
        self.max_end = max(self.max_end, span.end)
        if span.last:
            self.last_end = span.end
        return _Seen.NEW


class Reassembly:
    def __init__(self) -> None:
        self._datagrams: dict[DatagramKey, _Datagram] = {}
        self._waiting: dict[int, int] = {}  # source -> datagrams without their first
        self._waiting_keys: set[DatagramKey] = set()  # ... and which they are
        self.held = 0
        self.timed_out = 0  # held fragments dropped when their datagram expired
        self.overlapped = 0  # held fragments dropped when their datagram overlapped

    def first(
        self, key: DatagramKey, span: Span, ports: tuple[int, int], now: float
    ) -> list[bytes] | Outcome:
        """A first fragment's ports; the fragments of its datagram held so far,
        in arrival order, to translate after it. Outcome when it is dropped:
        a second first fragment is a duplicate or an overlap."""
        self.expire(now)
        datagram = self._datagrams.get(key)
        if datagram is None:
            if len(self._datagrams) >= DATAGRAMS_MAX:
                return []  # translated all the same; its later fragments are not
            datagram = self._datagrams[key] = _Datagram(now + TIMEOUT_S)
        refused = self._admit(datagram, span)
        if refused is not None:
            return refused
        if datagram.ports is None and key in self._waiting_keys:
            self._unwait(key)
        datagram.ports = ports
        # kept in expiry order: every datagram expires TIMEOUT_S after it was
        # last set, so the one set now goes last
        datagram.expires = now + TIMEOUT_S
        self._datagrams[key] = self._datagrams.pop(key)
        released, datagram.held = datagram.held, []
        self.held -= len(released)
        return released

    def later(
        self, key: DatagramKey, span: Span, frame: bytes, now: float
    ) -> tuple[int, int] | Outcome:
        """A later fragment: its datagram's ports, or what was done with it."""
        self.expire(now)
        datagram = self._datagrams.get(key)
        if datagram is None:
            if (
                self._waiting.get(key.src, 0) >= WAITING_PER_SOURCE
                or len(self._datagrams) >= DATAGRAMS_MAX
            ):
                return Outcome.OVER_LIMIT
            datagram = self._datagrams[key] = _Datagram(now + TIMEOUT_S)
            self._waiting[key.src] = self._waiting.get(key.src, 0) + 1
            self._waiting_keys.add(key)
        if (
            datagram.ports is None
            and not datagram.dead
            and (len(datagram.held) >= HOLD_PER_DATAGRAM or self.held >= HELD_MAX)
        ):
            return Outcome.OVER_LIMIT
        refused = self._admit(datagram, span)
        if refused is not None:
            return refused
        if datagram.ports is not None:
            return datagram.ports
        datagram.held.append(frame)
        self.held += 1
        return Outcome.HELD

    def _admit(self, datagram: _Datagram, span: Span) -> Outcome | None:
        """None when the fragment goes on; else why it is dropped. An overlap
        kills the datagram: its held fragments are dropped (counted in
        `overlapped`), and so will every later one be."""
        if datagram.dead:
            return Outcome.OVERLAP
        seen = datagram.record(span)
        if seen is _Seen.NEW:
            return None
        if seen is _Seen.FULL:
            return Outcome.OVER_LIMIT
        if seen is _Seen.OVERLAP:
            datagram.dead = True
            self.overlapped += len(datagram.held)
            self.held -= len(datagram.held)
            datagram.held = []
        return Outcome.OVERLAP

    def expire(self, now: float) -> None:
        """Forgets datagrams past their time, oldest first (the dict is in
        expiry order), and counts the held fragments that go with them."""
        while self._datagrams:
            key, datagram = next(iter(self._datagrams.items()))
            if datagram.expires > now:
                return
            del self._datagrams[key]
            if key in self._waiting_keys:
                self._unwait(key)
            self.timed_out += len(datagram.held)
            self.held -= len(datagram.held)

    def _unwait(self, key: DatagramKey) -> None:
        self._waiting_keys.discard(key)
        left = self._waiting[key.src] - 1
        if left:
            self._waiting[key.src] = left
        else:
            del self._waiting[key.src]
