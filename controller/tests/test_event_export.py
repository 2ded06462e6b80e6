"""NAT events to collectors: RFC 5424 syslog and IPFIX over UDP, received on
loopback as a collector would (swpath sends the same bytes: sp_e2e.py)."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest
from quicknat.addr import parse_ipv4 as ip
from quicknat.config.command_table import COMMANDS
from quicknat.config.model import SYSLOG_ENTERPRISE_EXAMPLE, EventLog, Logging
from quicknat.events import EventLogger
from quicknat.ipfix import BIB, QUOTA, SESSION, parse_ipfix
from quicknat.nat.allocator import Endpoint
from quicknat.nat.session import Mapping, Origin, Session

RFC5424 = re.compile(
    r"^<(?P<pri>\d+)>1 (?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (?P<host>\S+) "
    r"(?P<app>\S+) (?P<procid>\d+) (?P<msgid>\S+) \[nat@(?P<pen>\d+) (?P<sd>[^\]]*)\] (?P<msg>.*)$"
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


def test_the_event_logger_sends_both_to_the_collectors(
    collectors: tuple[socket.socket, socket.socket],
) -> None:
    syslog, ipfix = collectors
    config = Logging(
        EventLog.NONE, None, syslog.getsockname(), ipfix.getsockname(), 7, ipfix_sessions=True
    )  # no line log: the collectors alone
    logger = EventLogger(config)
    mapping = Mapping(17, Endpoint(ip("10.0.0.1"), 4000), Endpoint(ip("203.0.113.1"), 2000), "p")
    logger("created", mapping, 0.0)
    logger.quota("sessions_per_host", ip("10.0.0.7"), 4096, 0.0)
    line = syslog.recv(2048).decode()
    m = RFC5424.match(line)
    assert m is not None, line
    assert m["pri"] == "30" and m["app"] == "quicknat-controller" and m["msgid"] == "MAPPING"
    assert m["pen"] == "32473"  # RFC 5612's example number: none was configured
    assert (
        m["sd"] == 'event="created" proto="udp" inside="10.0.0.1:4000" outside="203.0.113.1:2000"'
    )
    assert m["msg"] == "mapping created udp 10.0.0.1:4000 203.0.113.1:2000"
    quota = RFC5424.match(syslog.recv(2048).decode())
    assert quota is not None and quota["pri"] == "28" and quota["msgid"] == "QUOTA"
    assert 'limit="sessions_per_host" host="10.0.0.7" value="4096"' in quota["sd"]
    session = Session(
        1, 1, Origin.SNAT, 17, mapping.internal, mapping.external, ip("8.8.8.8"), 53, 0.0
    )
    logger.session("created", session, 0.0)
    ipfix.settimeout(0.2)
    with pytest.raises(TimeoutError):  # the records wait for the flush interval
        ipfix.recv(2048)
    logger.flush()
    templates: dict[int, list[tuple[int, int]]] = {}
    message = parse_ipfix(ipfix.recv(2048), templates)
    assert (message.sequence, message.domain) == (0, 7)
    assert [(r["template"], r["230"], r["463"]) for r in message.records] == [
        (BIB.template_id, 8, 0),
        (QUOTA.template_id, 13, 0),
        (SESSION.template_id, 4, 0),
    ]
    assert (message.records[2]["12"], message.records[2]["11"]) == (ip("8.8.8.8"), 53)
    assert logger.exporter is not None and logger.exporter.failed == 0
    logger.close()


def test_the_sd_id_names_the_operators_enterprise_number(
    collectors: tuple[socket.socket, socket.socket],
) -> None:
    """RFC 5424 sec. 7.2.2: a private SD-ID is name@<its owner's Private
    Enterprise Number>; `[logging] syslog_enterprise` sets it."""
    syslog, _ = collectors
    config = Logging(EventLog.NONE, None, syslog.getsockname(), syslog_enterprise=54321)
    logger = EventLogger(config)
    mapping = Mapping(6, Endpoint(ip("10.0.0.1"), 4000), Endpoint(ip("203.0.113.1"), 2000), "p")
    logger("deleted", mapping, 0.0)
    m = RFC5424.match(syslog.recv(2048).decode())
    assert m is not None and m["pen"] == "54321" and 'event="deleted" proto="tcp"' in m["sd"]
    logger.close()


def test_both_cores_default_to_the_same_enterprise_number() -> None:
    """swpath's default (swpath/spec/commands.toml, as generated into both
    languages) is the controller's, so a `logging` line that leaves the
    number out means the same on both paths."""
    field = next(f for f in COMMANDS["logging"].fields if f.key == "syslog_enterprise")
    assert field.default == Logging().syslog_enterprise == SYSLOG_ENTERPRISE_EXAMPLE == 32473
