"""The IPFIX encoder (quicknat/ipfix.py): RFC 8158's templates with
natInstanceID, the observation domain, several records per message within
MESSAGE_MAX, and templates again after TEMPLATE_REFRESH_S. tshark reads the
same bytes in test_ipfix_tshark.py."""

from __future__ import annotations

import pytest
from quicknat.addr import parse_ipv4 as ip
from quicknat.ipfix import (
    ADDRESSES_EXHAUSTED,
    BIB,
    HEADER,
    MESSAGE_MAX,
    PORTS_EXHAUSTED,
    QUOTA,
    SESSION,
    TEMPLATE_REFRESH_S,
    TEMPLATE_SET_BYTES,
    Encoder,
    Message,
    NatEvent,
    parse_ipfix,
)

T0 = 1_700_000_000.0


def session(kind: str, time_ms: int) -> NatEvent:
    return NatEvent(
        kind, time_ms, 17, ip("10.0.0.1"), 4000, ip("203.0.113.1"), 2000, "", 0,
        ip("198.51.100.9"), 53,
    )  # fmt: skip


def every_kind() -> list[NatEvent]:
    inside, outside = ip("10.0.0.1"), ip("203.0.113.1")
    return [
        NatEvent("created", 1_700_000_000_123, 17, inside, 4000, outside, 2000),
        session("session-created", 1_700_000_000_124),
        NatEvent("quota", 1_700_000_000_456, inside=inside, limit="x", value=4096),
        NatEvent("ports-exhausted", 1_700_000_000_500, 6, outside=outside),
        NatEvent("addresses-exhausted", 1_700_000_000_501, 6, value=2),
        session("session-deleted", 1_700_000_001_000),
        NatEvent("deleted", 1_700_000_001_001, 17, inside, 4000, outside, 2000),
    ]


def decode(messages: list[bytes]) -> list[Message]:
    templates: dict[int, list[tuple[int, int]]] = {}
    return [parse_ipfix(m, templates) for m in messages]


def test_each_event_in_its_rfc_8158_template_with_the_instance() -> None:
    encoder = Encoder(domain=9, instance=3)
    for event in every_kind():
        assert encoder.add(event, T0) is None
    message = encoder.flush(T0)
    assert message is not None and encoder.flush(T0) is None
    (got,) = decode([message])
    assert (got.export_s, got.sequence, got.domain) == (int(T0), 0, 9)
    assert encoder.sequence == 7, "sequence: data records sent (RFC 7011 sec. 3.1)"
    # one data set per template, in template order
    by_event = {r["230"]: r for r in got.records}
    assert [(r["template"], r["230"]) for r in got.records] == [
        (BIB.template_id, 8),
        (BIB.template_id, 9),
        (QUOTA.template_id, 13),
        (SESSION.template_id, 4),
        (SESSION.template_id, 5),
        (ADDRESSES_EXHAUSTED.template_id, 3),
        (PORTS_EXHAUSTED.template_id, 12),
    ]
    assert all(r["463"] == 3 for r in got.records), "natInstanceID in every record"
    created = by_event[8]
    assert created["323"] == 1_700_000_000_123 and created["4"] == 17
    assert (created["8"], created["7"], created["225"], created["227"]) == (
        ip("10.0.0.1"),
        4000,
        ip("203.0.113.1"),
        2000,
    )
    session = by_event[4]
    assert (session["8"], session["7"], session["225"], session["227"]) == (
        ip("10.0.0.1"),
        4000,
        ip("203.0.113.1"),
        2000,
    )
    assert (session["12"], session["11"], session["4"]) == (ip("198.51.100.9"), 53, 17)
    assert (by_event[13]["466"], by_event[13]["8"], by_event[13]["473"]) == (
        3,
        ip("10.0.0.1"),
        4096,
    )
    assert (by_event[12]["225"], by_event[12]["4"]) == (ip("203.0.113.1"), 6)
    assert (by_event[3]["283"], by_event[3]["4"]) == (2, 6)


def test_records_fill_messages_up_to_the_limit() -> None:
    encoder = Encoder(domain=1, instance=0)
    event = every_kind()[1]  # a session record
    size = SESSION.record.size
    messages = [m for m in (encoder.add(event, T0 + i / 1000) for i in range(200)) if m]
    last = encoder.flush(T0 + 1)
    assert last is not None
    messages.append(last)
    assert all(len(m) <= MESSAGE_MAX for m in messages)
    # full messages: the first carries the templates as well
    assert len(messages[0]) > MESSAGE_MAX - size and len(messages[1]) > MESSAGE_MAX - size
    decoded = decode(messages)
    counts = [len(m.records) for m in decoded]
    assert sum(counts) == 200 and len(messages) == 5
    first_room = (MESSAGE_MAX - HEADER.size - TEMPLATE_SET_BYTES - 4) // size
    assert counts[0] == first_room and counts[1] == (MESSAGE_MAX - HEADER.size - 4) // size
    assert [m.sequence for m in decoded] == [sum(counts[:i]) for i in range(len(counts))]


def test_templates_only_first_then_after_the_refresh_interval() -> None:
    encoder = Encoder(domain=1, instance=0)
    sent = []
    for now in (T0, T0 + 1, T0 + TEMPLATE_REFRESH_S - 1, T0 + TEMPLATE_REFRESH_S):
        encoder.add(every_kind()[0], now)
        message = encoder.flush(now)
        assert message is not None
        sent.append(message)
    with_templates = [m[HEADER.size : HEADER.size + 2] == b"\x00\x02" for m in sent]
    assert with_templates == [True, False, False, True]
    # a collector that missed the first message cannot read the next ...
    with pytest.raises(ValueError, match="before its template"):
        parse_ipfix(sent[1], {})
    # ... and can again after the refresh
    assert parse_ipfix(sent[3], {}).records[0]["230"] == 8


def test_what_is_not_an_ipfix_message_is_refused() -> None:
    with pytest.raises(ValueError, match="not an IPFIX message"):
        parse_ipfix(b"\x00\x09" + bytes(14), {})
    with pytest.raises(ValueError, match="no IPFIX template"):
        Encoder(1, 0).add(NatEvent("bogus", 0), T0)
