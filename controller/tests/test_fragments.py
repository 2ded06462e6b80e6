"""Virtual reassembly for the P4 path (nat/fragments.py; swpath: frag.h,
sp_e2e.py::test_fragments_translated): ports kept per datagram, fragments
held until their first, and every bound."""

from __future__ import annotations

from quicknat.nat.fragments import (
    HELD_MAX,
    HOLD_PER_DATAGRAM,
    TIMEOUT_S,
    WAITING_PER_SOURCE,
    DatagramKey,
    Outcome,
    Reassembly,
)

KEY = DatagramKey(0x0A00000A, 0x08080808, 17, 7)


def test_in_order_later_fragments_get_the_first_ones_ports() -> None:
    r = Reassembly()
    assert r.first(KEY, (5000, 53), 0.0) == []
    assert r.later(KEY, b"second", 0.1) == (5000, 53)
    assert r.later(KEY, b"third", 0.2) == (5000, 53)
    # another datagram of the same flow is another IP ID
    assert r.later(KEY._replace(ident=8), b"x", 0.3) is Outcome.HELD


def test_out_of_order_fragments_are_held_then_released_in_order() -> None:
    r = Reassembly()
    assert r.later(KEY, b"third", 0.0) is Outcome.HELD
    assert r.later(KEY, b"second", 0.1) is Outcome.HELD
    assert r.held == 2
    assert r.first(KEY, (5000, 53), 0.2) == [b"third", b"second"]
    assert r.held == 0
    assert r.later(KEY, b"dup", 0.3) == (5000, 53)
    # a duplicate first fragment releases nothing twice
    assert r.first(KEY, (5000, 53), 0.4) == []


def test_held_fragments_time_out_and_are_counted() -> None:
    r = Reassembly()
    r.later(KEY, b"orphan", 0.0)
    r.later(KEY, b"orphan2", 0.0)
    r.expire(TIMEOUT_S - 0.01)
    assert r.held == 2 and r.timed_out == 0
    r.expire(TIMEOUT_S)
    assert (r.held, r.timed_out) == (0, 2)
    # the datagram is gone: its first opens it afresh, with nothing held
    assert r.first(KEY, (5000, 53), TIMEOUT_S + 1) == []
    # and ports are forgotten too, TIMEOUT_S after the first
    r.expire(2 * TIMEOUT_S + 1)
    assert r.later(KEY, b"late", 2 * TIMEOUT_S + 1) is Outcome.HELD


def test_limits_per_datagram_per_source_and_in_all() -> None:
    r = Reassembly()
    for i in range(HOLD_PER_DATAGRAM):
        assert r.later(KEY, bytes([i]), 0.0) is Outcome.HELD
    assert r.later(KEY, b"one more", 0.0) is Outcome.OVER_LIMIT
    # one source: WAITING_PER_SOURCE datagrams waiting for their first
    for ident in range(1, WAITING_PER_SOURCE):
        assert r.later(KEY._replace(ident=100 + ident), b"x", 0.0) is Outcome.HELD
    assert r.later(KEY._replace(ident=999), b"x", 0.0) is Outcome.OVER_LIMIT
    # another source still may, until everything held reaches HELD_MAX
    sources = 0
    while r.held < HELD_MAX:
        sources += 1
        key = DatagramKey(0x0A000100 + sources, KEY.dst, 17, 1)
        for i in range(HOLD_PER_DATAGRAM):
            if r.held < HELD_MAX:
                assert r.later(key, bytes([i]), 0.0) is Outcome.HELD
    other = DatagramKey(0x0B000001, KEY.dst, 17, 1)
    assert r.later(other, b"x", 0.0) is Outcome.OVER_LIMIT
    # a first fragment releases its held ones and frees room
    assert len(r.first(KEY, (1, 2), 0.1)) == HOLD_PER_DATAGRAM
    assert r.later(other, b"x", 0.1) is Outcome.HELD
