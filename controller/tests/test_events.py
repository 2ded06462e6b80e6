"""Mapping event logging (RFC 6888 REQ-12): the [logging] section and the lines."""

from __future__ import annotations

from pathlib import Path

import configs
from quicknat.addr import parse_ipv4 as ip
from quicknat.config import parse_config
from quicknat.config.model import EventLog
from quicknat.events import EventLogger, event_line
from quicknat.nat.allocator import Endpoint
from quicknat.nat.session import Mapping

BASE = configs.text("zones")
MAPPING = Mapping(17, Endpoint(ip("10.0.0.7"), 5000), Endpoint(ip("203.0.113.1"), 2001), "p")


def test_events_are_off_by_default() -> None:
    assert parse_config(BASE).logging.events is EventLog.NONE


def test_a_line_names_protocol_and_both_endpoints_but_no_destination() -> None:
    line = event_line("created", MAPPING, 0)
    assert line == "1970-01-01T00:00:00Z mapping created udp 10.0.0.7:5000 203.0.113.1:2001"


def test_file_events_are_appended(tmp_path: Path) -> None:
    log = tmp_path / "events.log"
    config = parse_config(BASE + f'[logging]\nevents = "file"\nfile = "{log}"\n')
    logger = EventLogger(config.logging)
    logger("created", MAPPING, 0)
    logger("deleted", MAPPING, 1)
    lines = log.read_text().splitlines()
    assert [line.split()[2] for line in lines] == ["created", "deleted"]
    assert all("10.0.0.7:5000 203.0.113.1:2001" in line for line in lines)
    logger.close()


def test_two_loggers_keep_to_their_own_files_and_close_them(tmp_path: Path) -> None:
    """Each EventLogger writes its own file only (the logging module's
    registry would share one logger between them), and close() releases it:
    nothing more is written, and a late event is not an error."""
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    loggers = [
        EventLogger(parse_config(BASE + f'[logging]\nevents = "file"\nfile = "{f}"\n').logging)
        for f in (first, second)
    ]
    loggers[0]("created", MAPPING, 0)
    loggers[1]("deleted", MAPPING, 1)
    assert [line.split()[2] for line in first.read_text().splitlines()] == ["created"]
    assert [line.split()[2] for line in second.read_text().splitlines()] == ["deleted"]
    loggers[0].close()
    loggers[0]("deleted", MAPPING, 2)
    loggers[0].quota("sessions_per_host", ip("10.0.0.7"), 10, 2)
    assert len(first.read_text().splitlines()) == 1
    loggers[1].close()
