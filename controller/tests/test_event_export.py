"""NAT events to collectors: RFC 5424 syslog and IPFIX over UDP, received on
loopback as a collector would (swpath sends the same bytes: sp_e2e.py)."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest
from quicknat.addr import parse_ipv4 as ip
from quicknat.config.model import EventLog, Logging
from quicknat.event_export import (
    MAPPING_TEMPLATE,
    QUOTA_TEMPLATE,
    NatEvent,
    ipfix_message,
    parse_ipfix,
)
from quicknat.events import EventLogger
from quicknat.nat.allocator import Endpoint
from quicknat.nat.session import Mapping

RFC5424 = re.compile(
    r"^<(?P<pri>\d+)>1 (?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (?P<host>\S+) "
    r"(?P<app>\S+) (?P<procid>\d+) (?P<msgid>\S+) \[nat@32473 (?P<sd>[^\]]*)\] (?P<msg>.*)$"
)


@pytest.fixture
def collectors() -> Iterator[tuple[socket.socket, socket.socket]]:
    syslog = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ipfix = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for s in (syslog, ipfix):
        s.bind(("127.0.0.1", 0))
        s.settimeout(2)
    yield syslog, ipfix
    syslog.close()
    ipfix.close()


def test_ipfix_round_trip_with_templates_in_every_message() -> None:
    events = [
        NatEvent("created", 1_700_000_000_123, 17, ip("10.0.0.1"), 4000, ip("203.0.113.1"), 2000),
        NatEvent("quota", 1_700_000_000_456, inside=ip("10.0.0.7"), limit="x", value=4096),
        NatEvent("deleted", 1_700_000_001_000, 6, ip("10.0.0.1"), 4001, ip("203.0.113.1"), 2002),
    ]
    sequence, domain, records = parse_ipfix(ipfix_message(events, 41, 1, 1_700_000_002))
    assert (sequence, domain) == (41, 1)
    assert [(r["template"], r["230"]) for r in records] == [
        (MAPPING_TEMPLATE, 8),
        (MAPPING_TEMPLATE, 9),
        (QUOTA_TEMPLATE, 13),
    ]
    created = records[0]
    assert created["323"] == 1_700_000_000_123 and created["4"] == 17
    assert (created["8"], created["7"]) == (ip("10.0.0.1"), 4000)
    assert (created["225"], created["227"]) == (ip("203.0.113.1"), 2000)
    quota = records[2]
    assert (quota["466"], quota["8"], quota["473"]) == (3, ip("10.0.0.7"), 4096)
    with pytest.raises(ValueError):
        parse_ipfix(b"\x00\x09" + bytes(14))


def test_the_event_logger_sends_both_to_the_collectors(
    collectors: tuple[socket.socket, socket.socket],
) -> None:
    syslog, ipfix = collectors
    config = Logging(
        EventLog.NONE, None, syslog.getsockname(), ipfix.getsockname()
    )  # no line log: the collectors alone
    logger = EventLogger(config)
    mapping = Mapping(17, Endpoint(ip("10.0.0.1"), 4000), Endpoint(ip("203.0.113.1"), 2000), "p")
    logger("created", mapping, 0.0)
    logger.quota("sessions_per_host", ip("10.0.0.7"), 4096, 0.0)
    line = syslog.recv(2048).decode()
    m = RFC5424.match(line)
    assert m is not None, line
    assert m["pri"] == "30" and m["app"] == "quicknat-controller" and m["msgid"] == "MAPPING"
    assert (
        m["sd"] == 'event="created" proto="udp" inside="10.0.0.1:4000" outside="203.0.113.1:2000"'
    )
    assert m["msg"] == "mapping created udp 10.0.0.1:4000 203.0.113.1:2000"
    quota = RFC5424.match(syslog.recv(2048).decode())
    assert quota is not None and quota["pri"] == "28" and quota["msgid"] == "QUOTA"
    assert 'limit="sessions_per_host" host="10.0.0.7" value="4096"' in quota["sd"]
    first, second = parse_ipfix(ipfix.recv(2048)), parse_ipfix(ipfix.recv(2048))
    assert (first[0], second[0]) == (0, 1), "sequence: data records sent before"
    assert first[2][0]["230"] == 8 and second[2][0]["230"] == 13
    assert logger.exporter is not None and logger.exporter.failed == 0
