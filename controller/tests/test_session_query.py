"""`sessions [list|delete|flush]` filters: the line both sockets read, and the
CLI that writes it (the same words reach swpath's C parser, test_sp_cmd.c)."""

from __future__ import annotations

import pytest
from quicknat.addr import parse_ipv4 as ip
from quicknat.cli import main
from quicknat.controller.status import SessionQuery


def test_parse_and_command_round_trip() -> None:
    line = "sessions delete proto udp src 10.0.0.2 dst 8.8.8.8 port 53"
    query = SessionQuery.parse(line.split()[1:])
    assert query == SessionQuery("delete", 0, 17, ip("10.0.0.2"), ip("8.8.8.8"), 53)
    assert query.command() == line
    assert SessionQuery.parse(["limit", "5"]) == SessionQuery("list", 5)
    assert SessionQuery.parse([]).command() == "sessions list"
    assert SessionQuery.parse(["flush"]) == SessionQuery("flush")


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["delete"], "delete needs a filter"),
        (["delete", "limit", "3"], "at 'limit 3'"),
        (["port", "0"], "at 'port 0'"),
        (["src", "10.0.0"], "at 'src 10.0.0'"),
        (["proto"], "proto: missing value"),
        (["bogus", "1"], "at 'bogus 1'"),
    ],
)
def test_bad_lines_say_why(words: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SessionQuery.parse(words)


def test_matches_the_inside_host_the_peer_and_any_port() -> None:
    q = SessionQuery(src=ip("10.0.0.2"), port=53)
    assert q.matches(17, ip("10.0.0.2"), ip("8.8.8.8"), (4000, 2000, 53))
    assert q.matches(6, ip("10.0.0.2"), ip("1.1.1.1"), (53, 2000, 80))
    assert not q.matches(17, ip("10.0.0.3"), ip("8.8.8.8"), (4000, 2000, 53))
    assert not q.matches(17, ip("10.0.0.2"), ip("8.8.8.8"), (4000, 2000, 54))
    assert not SessionQuery(proto=6).matches(17, 1, 2, (1, 2, 3))
    assert not SessionQuery(dst=ip("8.8.8.8")).matches(17, 1, ip("8.8.4.4"), (1, 2, 3))


def test_cli_refuses_an_unfiltered_delete_before_connecting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["sessions", "delete", "--socket", "/nonexistent.sock"]) == 2
    assert "delete needs a filter" in capsys.readouterr().err
    assert main(["sessions", "--proto", "47", "--socket", "/nonexistent.sock"]) == 2
    assert "sessions are tcp, udp or icmp" in capsys.readouterr().err
