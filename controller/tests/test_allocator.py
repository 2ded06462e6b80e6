"""Port allocation: RFC 4787 REQ-2/3/4, RFC 6056, RFC 6888 REQ-4/5/8."""

from __future__ import annotations

import itertools
import random

import pytest
from quicknat.addr import Prefix, parse_ipv4
from quicknat.config.model import Pool
from quicknat.nat.allocator import (
    AllocationError,
    AllocationFailure,
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


def test_paired_pooling_one_external_address_per_host() -> None:
    a = allocator()
    got = {
        a.allocate(proto, Endpoint(HOST_A, port), 0).address
        for proto in (TCP, UDP)
        for port in range(1000, 1050)
    }
    assert len(got) == 1


def test_hosts_spread_over_pool_addresses() -> None:
    a = allocator()
    hosts = [parse_ipv4(f"10.0.0.{i}") for i in range(1, 9)]
    addresses = [a.allocate(TCP, Endpoint(h, 5000), 0).address for h in hosts]
    assert sorted(addresses.count(x) for x in set(addresses)) == [2, 2, 2, 2]


def test_no_external_endpoint_is_handed_out_twice() -> None:
    a = allocator("203.0.113.1", (2000, 2099))
    got = {a.allocate(TCP, Endpoint(HOST_A, 10000 + i), 0) for i in range(100)}
    assert len(got) == 100 and all(2000 <= e.port <= 2099 for e in got)
    with pytest.raises(AllocationError) as info:
        a.allocate(TCP, Endpoint(HOST_A, 20000), 0)
    assert info.value.reason is AllocationFailure.POOL_EXHAUSTED
    # Another protocol has its own port space.
    a.allocate(UDP, Endpoint(HOST_A, 20000), 0)


def test_ports_are_random_not_sequential() -> None:
    a = allocator("203.0.113.1")
    ports = [a.allocate(TCP, Endpoint(HOST_A, 10000 + i), 0).port for i in range(50)]
    steps = {b - a for a, b in itertools.pairwise(ports)}
    assert len(steps) > 40  # RFC 6056: not guessable from the previous one


def test_parity_and_port_preservation() -> None:
    a = allocator("203.0.113.1", preserve_parity=True)
    for port in range(5000, 5100):
        assert a.allocate(UDP, Endpoint(HOST_A, port), 0).port % 2 == port % 2
    b = allocator("203.0.113.1", preserve_port=True)
    assert b.allocate(UDP, Endpoint(HOST_A, 5060), 0).port == 5060
    assert b.allocate(UDP, Endpoint(HOST_B, 5060), 0).port != 5060  # taken: not overloaded
    assert b.allocate(UDP, Endpoint(HOST_B, 53), 0).port >= 1024  # outside the range


def test_port_quota_per_host() -> None:
    a = allocator(ports_per_host=3)
    for port in range(3):
        a.allocate(TCP, Endpoint(HOST_A, port + 1), 0)
    with pytest.raises(AllocationError) as info:
        a.allocate(UDP, Endpoint(HOST_A, 9), 0)
    assert info.value.reason is AllocationFailure.QUOTA_EXCEEDED
    a.allocate(TCP, Endpoint(HOST_B, 1), 0)  # other hosts are unaffected


def test_released_ports_rest_before_reuse_while_others_are_free() -> None:
    a = allocator("203.0.113.1", (2000, 2003), reuse_delay=120.0)
    first = [a.allocate(TCP, Endpoint(HOST_A, 1 + i), 0) for i in range(3)]
    a.release(TCP, HOST_A, first[0], now=10)
    fourth = a.allocate(TCP, Endpoint(HOST_A, 9), now=20)
    assert fourth.port not in {e.port for e in first}  # the free port, not the resting one
    # Nothing else free: the resting port is reused rather than failing the flow.
    assert a.allocate(TCP, Endpoint(HOST_A, 10), now=30) == first[0]


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
