"""External address and port allocation from a pool (no I/O, no clock: `now` is passed in).

Behaviour, with the requirement each line serves:
- Paired pooling (RFC 4787 REQ-2): an internal address keeps one external address
  for as long as it holds any port; a new internal address takes the pool address
  with the fewest bound hosts.
- Ports are per protocol (TCP, UDP, ICMP identifiers) and never given to two
  internal endpoints at once (RFC 4787 REQ-3).
- Port classes kept apart (RFC 4787 REQ-3): an internal port below 1024 gets one
  of the pool's ports below 1024 if its range has any (else an ordinary one); an
  internal port from 1024 up never gets one below 1024.
- Random port choice (RFC 6056 algorithm 1, as RFC 7857 sec. 3 asks) within the
  class, by default with the internal port's parity (REQ-4, pool preserve_parity),
  optionally the internal port itself when free (pool preserve_port).
- ICMP query identifiers are allocated like ports, by the same rules (RFC 5508
  maps them as ports), so both data paths keep one policy.
- Per-host port quota (RFC 6888 REQ-4); exhaustion fails the new flow and never
  touches existing mappings (RFC 6888 REQ-5).
- A released port is not reused for `reuse_delay` seconds while other ports are
  free (RFC 6888 REQ-8); when nothing else is left the oldest released port is.
"""

from __future__ import annotations

import enum
import heapq
import random
from collections import OrderedDict
from dataclasses import dataclass

from quicknat.config.model import WELL_KNOWN_PORT_MAX, Pool


class AllocationFailure(enum.Enum):
    POOL_EXHAUSTED = "pool exhausted"
    QUOTA_EXCEEDED = "per-host port quota exceeded"


class AllocationError(Exception):
    def __init__(self, reason: AllocationFailure, address: int = 0) -> None:
        super().__init__(reason.value)
        self.reason = reason
        self.address = address  # POOL_EXHAUSTED: the pool address out of ports


@dataclass(frozen=True, slots=True)
class Endpoint:
    address: int
    port: int  # the ICMP query identifier for ICMP


@dataclass(frozen=True, slots=True)
class PortPolicy:
    preserve_port: bool = False
    """Use the internal port when it is free and one this internal port may get."""
    preserve_parity: bool = True
    """An even internal port gets an even external port, odd gets odd (RFC 4787 REQ-4)."""
    reuse_delay: float = 120.0
    """Seconds a released port rests before it is handed out again (RFC 6888 REQ-8)."""
    ports_per_host: int = 0
    """Quota per internal address over all protocols; 0 = none."""


class _PortSpace:
    """Used and resting ports of one (external address, protocol)."""

    __slots__ = ("resting", "used")

    def __init__(self) -> None:
        self.used: set[int] = set()
        self.resting: OrderedDict[int, float] = OrderedDict()  # port -> released at

    def wake(self, now: float, delay: float) -> None:
        while self.resting:
            port, released = next(iter(self.resting.items()))
            if now - released < delay:
                break
            del self.resting[port]

    def available(self, port: int) -> bool:
        return port not in self.used and port not in self.resting


class PoolAllocator:
    def __init__(self, pool: Pool, policy: PortPolicy, rng: random.Random) -> None:
        self.pool = pool
        self.policy = policy
        self._rng = rng
        self._addresses = [
            prefix.address + offset for prefix in pool.addresses for offset in range(prefix.size)
        ]
        self._spaces: dict[tuple[int, int], _PortSpace] = {}
        self._hosts_on: dict[int, int] = dict.fromkeys(self._addresses, 0)
        # Min-heap of (hosts bound, address) with lazy deletion: an item whose
        # count is no longer the address's count is stale and skipped, so picking
        # the least-loaded address is O(log n) instead of a scan of the pool.
        self._load_heap: list[tuple[int, int]] = [(0, a) for a in self._addresses]
        self._binding: dict[int, int] = {}  # internal address -> external address
        self._held: dict[int, int] = {}  # internal address -> ports held (all protocols)

    @property
    def address_count(self) -> int:
        return len(self._addresses)

    @property
    def port_count(self) -> int:
        return self.pool.port_max - self.pool.port_min + 1

    def usage(self) -> tuple[int, dict[int, int]]:
        """(ports per protocol: addresses x range, {protocol: ports in use})."""
        used: dict[int, int] = {6: 0, 17: 0, 1: 0}
        for (_, protocol), space in self._spaces.items():
            used[protocol] = used.get(protocol, 0) + len(space.used)
        return len(self._addresses) * self.port_count, used

    def ports_held(self, internal_address: int) -> int:
        return self._held.get(internal_address, 0)

    def _space(self, address: int, protocol: int) -> _PortSpace:
        space = self._spaces.get((address, protocol))
        if space is None:
            space = self._spaces[(address, protocol)] = _PortSpace()
        return space

    def external_address(self, internal_address: int) -> int:
        """The paired external address of a host (binding it if it has none)."""
        bound = self._binding.get(internal_address)
        if bound is not None:
            return bound
        heap = self._load_heap
        while heap[0][0] != self._hosts_on[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0][1]

    def _set_load(self, address: int, delta: int) -> None:
        self._hosts_on[address] += delta
        if len(self._load_heap) > 4 * len(self._addresses) + 64:  # too many stale items
            self._load_heap = [(load, a) for a, load in self._hosts_on.items()]
            heapq.heapify(self._load_heap)
        else:
            heapq.heappush(self._load_heap, (self._hosts_on[address], address))

    def allocate(self, protocol: int, internal: Endpoint, now: float) -> Endpoint:
        quota = self.policy.ports_per_host
        if quota and self.ports_held(internal.address) >= quota:
            raise AllocationError(AllocationFailure.QUOTA_EXCEEDED)
        address = self.external_address(internal.address)
        space = self._space(address, protocol)
        space.wake(now, self.policy.reuse_delay)
        port = self._choose_port(space, internal.port)
        if port is None:
            raise AllocationError(AllocationFailure.POOL_EXHAUSTED, address)
        self._take(protocol, internal.address, Endpoint(address, port))
        return Endpoint(address, port)

    def _candidates(self, internal_port: int) -> range:
        """The ports this internal port may get: its class, well-known (1-1023) or
        not, and with preserve_parity its parity (RFC 4787 REQ-3, REQ-4)."""
        low, high = self.pool.port_min, self.pool.port_max
        if internal_port > WELL_KNOWN_PORT_MAX:
            low = max(low, WELL_KNOWN_PORT_MAX + 1)
        elif low <= WELL_KNOWN_PORT_MAX:
            high = min(high, WELL_KNOWN_PORT_MAX)
        # else: a pool without well-known ports gives a well-known internal port
        # an ordinary one (the default range, 1024-65535).
        if not self.policy.preserve_parity:
            return range(low, high + 1)
        return range(low + (internal_port - low) % 2, high + 1, 2)

    def _choose_port(self, space: _PortSpace, internal_port: int) -> int | None:
        candidates = self._candidates(internal_port)
        preserve = self.policy.preserve_port and internal_port in candidates
        if preserve and space.available(internal_port):
            return internal_port
        count = len(candidates)
        if count == 0:
            return None
        # RFC 6056 algorithm 1: a random start, then the next free port.
        start = self._rng.randrange(count)
        for i in range(count):
            port = candidates[(start + i) % count]
            if space.available(port):
                return port
        # Everything free is resting: reuse the longest-rested port that fits.
        for port in space.resting:
            if port in candidates:
                del space.resting[port]
                return port
        return None

    def _take(self, protocol: int, internal_address: int, external: Endpoint) -> None:
        self._space(external.address, protocol).used.add(external.port)
        if internal_address not in self._binding:
            self._binding[internal_address] = external.address
            self._set_load(external.address, +1)
        self._held[internal_address] = self._held.get(internal_address, 0) + 1

    def reserve(self, protocol: int, internal_address: int, external: Endpoint) -> bool:
        """Mark a mapping found on the switch after a restart as taken.
        False if it conflicts with what is already allocated."""
        if external.address not in self._hosts_on:
            return False
        bound = self._binding.get(internal_address)
        space = self._space(external.address, protocol)
        if (bound is not None and bound != external.address) or external.port in space.used:
            return False
        space.resting.pop(external.port, None)
        self._take(protocol, internal_address, external)
        return True

    def release(self, protocol: int, internal_address: int, external: Endpoint, now: float) -> None:
        space = self._space(external.address, protocol)
        space.used.discard(external.port)
        space.resting[external.port] = now
        held = self._held[internal_address] - 1
        if held:
            self._held[internal_address] = held
        else:
            del self._held[internal_address]
            del self._binding[internal_address]
            self._set_load(external.address, -1)
