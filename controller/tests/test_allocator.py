"""Port allocation: RFC 4787 REQ-2/3/4, RFC 6056, RFC 6888 REQ-4/5/8."""

from __future__ import annotations

import itertools
import random

from quicknat.addr import Prefix, parse_ipv4
from quicknat.config.model import Pool
from quicknat.nat.allocator import (
    Endpoint,
    PoolAllocator,
    PortPolicy,
)

TCP, UDP = 6, 17
HOST_A, HOST_B = parse_ipv4("10.0.0.1"), parse_ipv4("10.0.0.2")


def allocator(
    prefix: str = "203.0.113.0/30", ports: tuple[int, int] = (1024, 65535), **policy: object
) -> PoolAllocator:
    pool = Pool("p", (Prefix.parse(prefix),), *ports)
    return PoolAllocator(pool, PortPolicy(**policy), random.Random(7))  # type: ignore[arg-type]


def test_hosts_spread_over_pool_addresses() -> None:
    a = allocator()
    hosts = [parse_ipv4(f"10.0.0.{i}") for i in range(1, 9)]
    addresses = [a.allocate(TCP, Endpoint(h, 5000), 0).address for h in hosts]
    assert sorted(addresses.count(x) for x in set(addresses)) == [2, 2, 2, 2]


def test_ports_are_random_not_sequential() -> None:
    a = allocator("203.0.113.1")
    ports = [a.allocate(TCP, Endpoint(HOST_A, 10000 + i), 0).port for i in range(50)]
    steps = {b - a for a, b in itertools.pairwise(ports)}
    assert len(steps) > 40  # RFC 6056: not guessable from the previous one


def test_release_unbinds_host_when_it_holds_nothing() -> None:
    a = allocator()
    e = a.allocate(TCP, Endpoint(HOST_A, 1), 0)
    assert a.ports_held(HOST_A) == 1
    a.release(TCP, HOST_A, e, 1)
    assert a.ports_held(HOST_A) == 0


def test_reserve_rebuilds_state_and_refuses_conflicts() -> None:
    a = allocator("203.0.113.1")
    ext = Endpoint(parse_ipv4("203.0.113.1"), 4000)
    assert a.reserve(TCP, HOST_A, ext)
    assert not a.reserve(TCP, HOST_B, ext)  # already taken
    assert not a.reserve(TCP, HOST_B, Endpoint(parse_ipv4("198.51.100.1"), 4000))  # not ours
    assert all(a.allocate(TCP, Endpoint(HOST_B, i), 0).port != 4000 for i in range(1, 500))
