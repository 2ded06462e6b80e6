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


def test_parity_kept_by_default_without_spilling() -> None:
    a = allocator("203.0.113.1")  # RFC 4787 REQ-4 is the default
    for port in range(5000, 5200):
        assert a.allocate(UDP, Endpoint(HOST_A, port), 0).port % 2 == port % 2
    small = allocator("203.0.113.1", (2000, 2009))
    evens = {small.allocate(UDP, Endpoint(HOST_A, 6000 + 2 * i), 0).port for i in range(5)}
    assert evens == {2000, 2002, 2004, 2006, 2008}
    with pytest.raises(AllocationError) as info:  # odd ports are free, but not for it
        small.allocate(UDP, Endpoint(HOST_A, 7000), 0)
    assert info.value.reason is AllocationFailure.POOL_EXHAUSTED
    assert small.allocate(UDP, Endpoint(HOST_A, 7001), 0).port % 2 == 1


def test_parity_can_be_turned_off() -> None:
    a = allocator("203.0.113.1", (2000, 2001), preserve_parity=False)
    got = {a.allocate(UDP, Endpoint(HOST_A, port), 0).port for port in (6000, 6002)}
    assert got == {2000, 2001}


def test_port_preserved_when_free_else_random_with_parity() -> None:
    b = allocator("203.0.113.1", preserve_port=True, reuse_delay=120.0)
    first = b.allocate(UDP, Endpoint(HOST_A, 5060), 0)
    assert first.port == 5060
    second = b.allocate(UDP, Endpoint(HOST_B, 5060), 0)
    assert second.port != 5060 and second.port % 2 == 0  # taken: never shared (REQ-3)
    b.release(UDP, HOST_A, first, now=10)
    assert b.allocate(UDP, Endpoint(HOST_A, 5060), 20).port != 5060  # resting
    assert b.allocate(UDP, Endpoint(HOST_B, 5060), 131).port == 5060  # rested
    assert b.allocate(TCP, Endpoint(HOST_A, 5060), 0).port == 5060  # its own port space
    assert b.allocate(UDP, Endpoint(HOST_B, 53), 0).port >= 1024  # 53 is not in the range


def test_well_known_ports_stay_apart_when_the_range_has_them() -> None:
    a = allocator("203.0.113.1", (1, 65535), preserve_port=True)
    assert a.allocate(UDP, Endpoint(HOST_A, 53), 0).port == 53
    assert 1 <= a.allocate(UDP, Endpoint(HOST_B, 53), 0).port <= 1023
    low = [a.allocate(TCP, Endpoint(HOST_A, port), 0).port for port in range(1, 400)]
    assert all(1 <= port <= 1023 for port in low)
    high = [a.allocate(TCP, Endpoint(HOST_A, port), 0).port for port in range(1024, 1424)]
    assert all(port >= 1024 for port in high)
    # With the default range an internal well-known port gets an ordinary one.
    assert allocator("203.0.113.1").allocate(UDP, Endpoint(HOST_A, 53), 0).port >= 1024


def test_a_full_port_class_does_not_spill_into_the_other() -> None:
    a = allocator("203.0.113.1", (1000, 1029), preserve_parity=False)
    low = {a.allocate(UDP, Endpoint(HOST_A, 100 + i), 0).port for i in range(24)}
    assert low == set(range(1000, 1024))
    with pytest.raises(AllocationError):
        a.allocate(UDP, Endpoint(HOST_A, 200), 0)
    high = {a.allocate(UDP, Endpoint(HOST_A, 5000 + i), 0).port for i in range(6)}
    assert high == set(range(1024, 1030))
    with pytest.raises(AllocationError):
        a.allocate(UDP, Endpoint(HOST_A, 6000), 0)
    # A pool of well-known ports only has nothing for an ordinary port.
    with pytest.raises(AllocationError):
        allocator("203.0.113.1", (100, 200)).allocate(UDP, Endpoint(HOST_A, 5000), 0)


def test_port_quota_per_host() -> None:
    a = allocator(ports_per_host=3)
    for port in range(3):
        a.allocate(TCP, Endpoint(HOST_A, port + 1), 0)
    with pytest.raises(AllocationError) as info:
        a.allocate(UDP, Endpoint(HOST_A, 9), 0)
    assert info.value.reason is AllocationFailure.QUOTA_EXCEEDED
    a.allocate(TCP, Endpoint(HOST_B, 1), 0)  # other hosts are unaffected


def test_released_ports_rest_before_reuse_while_others_are_free() -> None:
    a = allocator("203.0.113.1", (2000, 2003), reuse_delay=120.0, preserve_parity=False)
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
