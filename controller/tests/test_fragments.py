"""Virtual reassembly for the P4 path (nat/fragments.py; swpath: frag.h,
sp_e2e.py::test_fragments_translated): ports kept per datagram, fragments
held until their first, every bound, and the overlaps of IN-IP-9 (the
controller's handling of them: test_fragment_overlaps.py)."""

from __future__ import annotations

from quicknat.nat.fragments import (
    HELD_MAX,
    HOLD_PER_DATAGRAM,
    RANGES_MAX,
    TIMEOUT_S,
    WAITING_PER_SOURCE,
    DatagramKey,
    Outcome,
    Reassembly,
    Span,
)

KEY = DatagramKey(0x0A00000A, 0x08080808, 17, 7)
FIRST = Span(0, 8, False)


def piece(i: int, last: bool = False) -> Span:
    """The i-th 8 bytes of a datagram (the first fragment is piece 0)."""
    return Span(8 * i, 8 * i + 8, last)


def test_in_order_later_fragments_get_the_first_ones_ports() -> None:
    r = Reassembly()
    assert r.first(KEY, FIRST, (5000, 53), 0.0) == []
    assert r.later(KEY, piece(1), b"second", 0.1) == (5000, 53)
    assert r.later(KEY, piece(2), b"third", 0.2) == (5000, 53)
    # another datagram of the same flow is another IP ID
    assert r.later(KEY._replace(ident=8), piece(1), b"x", 0.3) is Outcome.HELD


def test_out_of_order_fragments_are_held_then_released_in_order() -> None:
    r = Reassembly()
    assert r.later(KEY, piece(2), b"third", 0.0) is Outcome.HELD
    assert r.later(KEY, piece(1), b"second", 0.1) is Outcome.HELD
    assert r.held == 2
    assert r.first(KEY, FIRST, (5000, 53), 0.2) == [b"third", b"second"]
    assert r.held == 0
    assert r.later(KEY, piece(3, last=True), b"fourth", 0.3) == (5000, 53)
    # a duplicate first fragment releases nothing twice: it is dropped
    assert r.first(KEY, FIRST, (5000, 53), 0.4) is Outcome.OVERLAP


def test_held_fragments_time_out_and_are_counted() -> None:
    r = Reassembly()
    r.later(KEY, piece(1), b"orphan", 0.0)
    r.later(KEY, piece(2), b"orphan2", 0.0)
    r.expire(TIMEOUT_S - 0.01)
    assert r.held == 2 and r.timed_out == 0
    r.expire(TIMEOUT_S)
    assert (r.held, r.timed_out) == (0, 2)
    # the datagram is gone: its first opens it afresh, with nothing held
    assert r.first(KEY, FIRST, (5000, 53), TIMEOUT_S + 1) == []
    # and ports are forgotten too, TIMEOUT_S after the first
    r.expire(2 * TIMEOUT_S + 1)
    assert r.later(KEY, piece(1), b"late", 2 * TIMEOUT_S + 1) is Outcome.HELD


def test_limits_per_datagram_per_source_and_in_all() -> None:
    r = Reassembly()
    for i in range(HOLD_PER_DATAGRAM):
        assert r.later(KEY, piece(i + 1), bytes([i]), 0.0) is Outcome.HELD
    assert r.later(KEY, piece(99), b"one more", 0.0) is Outcome.OVER_LIMIT
    # one source: WAITING_PER_SOURCE datagrams waiting for their first
    for ident in range(1, WAITING_PER_SOURCE):
        assert r.later(KEY._replace(ident=100 + ident), piece(1), b"x", 0.0) is Outcome.HELD
    assert r.later(KEY._replace(ident=999), piece(1), b"x", 0.0) is Outcome.OVER_LIMIT
    # another source still may, until everything held reaches HELD_MAX
    sources = 0
    while r.held < HELD_MAX:
        sources += 1
        key = DatagramKey(0x0A000100 + sources, KEY.dst, 17, 1)
        for i in range(HOLD_PER_DATAGRAM):
            if r.held < HELD_MAX:
                assert r.later(key, piece(i + 1), bytes([i]), 0.0) is Outcome.HELD
    other = DatagramKey(0x0B000001, KEY.dst, 17, 1)
    assert r.later(other, piece(1), b"x", 0.0) is Outcome.OVER_LIMIT
    # a first fragment releases its held ones and frees room
    released = r.first(KEY, FIRST, (1, 2), 0.1)
    assert isinstance(released, list) and len(released) == HOLD_PER_DATAGRAM
    assert r.later(other, piece(1), b"x", 0.1) is Outcome.HELD


def test_duplicates_are_dropped_and_the_datagram_goes_on() -> None:
    """A fragment wholly inside bytes already seen (the same bytes twice, a
    smaller piece of them), whatever its content: dropped, the datagram
    kept, as Linux does."""
    r = Reassembly()
    assert r.first(KEY, Span(0, 24, False), (5000, 53), 0.0) == []
    assert r.first(KEY, Span(0, 24, False), (5001, 53), 0.0) is Outcome.OVERLAP
    assert r.later(KEY, Span(8, 16, False), b"inside", 0.0) is Outcome.OVERLAP
    assert r.later(KEY, Span(24, 40, True), b"tail", 0.0) == (5000, 53)
    # across two fragments' boundary, inside the run they make
    assert r.later(KEY, Span(16, 32, False), b"across", 0.0) is Outcome.OVERLAP
    assert r.overlapped == 0


def test_a_partial_overlap_kills_the_datagram() -> None:
    """RFC 1858 sec. 3.2: a fragment over part of the first (a longer first
    fragment: another header) is dropped, and so is the rest of its
    datagram, until the datagram's time is up; another datagram is not
    touched."""
    r = Reassembly()
    assert r.first(KEY, Span(0, 24, False), (5000, 53), 0.0) == []
    assert r.first(KEY, Span(0, 32, False), (5001, 53), 0.0) is Outcome.OVERLAP
    assert r.later(KEY, Span(24, 48, True), b"tail", 0.1) is Outcome.OVERLAP
    assert r.later(KEY, Span(48, 56, True), b"more", 0.1) is Outcome.OVERLAP
    other = KEY._replace(ident=8)
    assert r.first(other, Span(0, 24, False), (5000, 53), 0.1) == []
    # a new datagram of the same key once the dead one timed out
    r.expire(TIMEOUT_S + 0.1)
    assert r.first(KEY, Span(0, 24, False), (5000, 53), TIMEOUT_S + 0.1) == []


def test_teardrop_and_contradicting_ends_kill_the_datagram() -> None:
    r = Reassembly()
    assert r.first(KEY, Span(0, 24, False), (5000, 53), 0.0) == []
    assert r.later(KEY, Span(8, 16, True), b"teardrop", 0.0) is Outcome.OVERLAP
    assert r.later(KEY, Span(24, 32, True), b"tail", 0.0) is Outcome.OVERLAP
    # a fragment past the end a last fragment set, while both are held
    other = KEY._replace(ident=9)
    assert r.later(other, Span(40, 48, True), b"last", 0.0) is Outcome.HELD
    assert r.later(other, Span(48, 56, False), b"past", 0.0) is Outcome.OVERLAP
    assert (r.held, r.overlapped) == (0, 1)  # the held one went with it
    assert r.first(other, Span(0, 40, False), (5000, 53), 0.0) is Outcome.OVERLAP
    # and two last fragments with different ends
    third = KEY._replace(ident=10)
    assert r.later(third, Span(40, 48, True), b"last", 0.0) is Outcome.HELD
    assert r.later(third, Span(40, 56, True), b"other last", 0.0) is Outcome.OVERLAP


def test_runs_of_bytes_are_bounded() -> None:
    """Runs that do not touch take a place each; past RANGES_MAX the
    fragment is over the limits (and nothing recorded is lost); one that
    fills a gap merges two runs."""
    r = Reassembly()
    assert r.first(KEY, FIRST, (5000, 53), 0.0) == []
    for i in range(1, RANGES_MAX):
        assert r.later(KEY, piece(2 * i), b"x", 0.0) == (5000, 53)
    assert r.later(KEY, piece(2 * RANGES_MAX), b"x", 0.0) is Outcome.OVER_LIMIT
    assert r.later(KEY, piece(1), b"gap", 0.0) == (5000, 53)
    assert r.later(KEY, piece(2 * RANGES_MAX), b"x", 0.0) == (5000, 53)
    assert r.later(KEY, piece(2), b"again", 0.0) is Outcome.OVERLAP
