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
datagrams waiting for their first per source, 2 s per datagram. No I/O: the
controller hands frames in and sends what comes out.
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


class DatagramKey(NamedTuple):
    src: int
    dst: int
    protocol: int
    ident: int


class Outcome(enum.Enum):
    """What became of a later fragment whose ports are not known."""

    HELD = "held until its first fragment"
    OVER_LIMIT = "over the holding limits"


@dataclass
class _Datagram:
    expires: float
    ports: tuple[int, int] | None = None
    held: list[bytes] = field(default_factory=list)


class Reassembly:
    def __init__(self) -> None:
        self._datagrams: dict[DatagramKey, _Datagram] = {}
        self._waiting: dict[int, int] = {}  # source -> datagrams without their first
        self.held = 0
        self.timed_out = 0  # held fragments dropped when their datagram expired

    def first(self, key: DatagramKey, ports: tuple[int, int], now: float) -> list[bytes]:
        """A first fragment's ports; the fragments of its datagram held so far,
        in arrival order, to translate after it."""
        self.expire(now)
        datagram = self._datagrams.get(key)
        if datagram is None:
            if len(self._datagrams) >= DATAGRAMS_MAX:
                return []  # translated all the same; its later fragments are not
            datagram = self._datagrams[key] = _Datagram(now + TIMEOUT_S)
        elif datagram.ports is None:
            self._unwait(key.src)
        datagram.ports = ports
        # kept in expiry order: every datagram expires TIMEOUT_S after it was
        # last set, so the one set now goes last
        datagram.expires = now + TIMEOUT_S
        self._datagrams[key] = self._datagrams.pop(key)
        released, datagram.held = datagram.held, []
        self.held -= len(released)
        return released

    def later(self, key: DatagramKey, frame: bytes, now: float) -> tuple[int, int] | Outcome:
        """A later fragment: its datagram's ports, or what was done with it."""
        self.expire(now)
        datagram = self._datagrams.get(key)
        if datagram is not None and datagram.ports is not None:
            return datagram.ports
        if datagram is None:
            if (
                self._waiting.get(key.src, 0) >= WAITING_PER_SOURCE
                or len(self._datagrams) >= DATAGRAMS_MAX
            ):
                return Outcome.OVER_LIMIT
            datagram = self._datagrams[key] = _Datagram(now + TIMEOUT_S)
            self._waiting[key.src] = self._waiting.get(key.src, 0) + 1
        if len(datagram.held) >= HOLD_PER_DATAGRAM or self.held >= HELD_MAX:
            return Outcome.OVER_LIMIT
        datagram.held.append(frame)
        self.held += 1
        return Outcome.HELD

    def expire(self, now: float) -> None:
        """Forgets datagrams past their time, oldest first (the dict is in
        expiry order), and counts the held fragments that go with them."""
        while self._datagrams:
            key, datagram = next(iter(self._datagrams.items()))
            if datagram.expires > now:
                return
            del self._datagrams[key]
            if datagram.ports is None:
                self._unwait(key.src)
            self.timed_out += len(datagram.held)
            self.held -= len(datagram.held)

    def _unwait(self, source: int) -> None:
        left = self._waiting[source] - 1
        if left:
            self._waiting[source] = left
        else:
            del self._waiting[source]
