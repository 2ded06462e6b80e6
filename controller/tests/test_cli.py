"""The quicknat command's messages a new user meets: help, bad arguments, a
socket nobody listens on, a closed pipe, the session table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from quicknat import cli
from quicknat.cli import main

GOLDEN = Path(__file__).resolve().parent / "golden"
MINIMAL = str(GOLDEN / "good" / "minimal.toml")


def test_help_says_what_the_command_is_and_every_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "quicknat: check a NAT configuration" in out
    assert "``" not in out
    with pytest.raises(SystemExit):
        main(["controller", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # help is wrapped
    assert "(default: 127.0.0.1:9559)" in out and "(default: 5000)" in out
    with pytest.raises(SystemExit):
        main(["sessions", "--help"])
    assert "controller or quicknat-swpath" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--protocol", "sctp"], "argument --protocol: 'sctp': must be tcp, udp, icmp or a number"),
        (["--protocol", "300"], "argument --protocol: '300': must be tcp, udp, icmp or a number"),
        (["--sport", "99999"], "argument --sport: '99999': must be a port number 0-65535"),
        (["--dport", "-1"], "argument --dport: '-1': must be a port number 0-65535"),
    ],
)
def test_lookup_names_the_bad_option(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["lookup", MINIMAL, "--src", "10.0.0.7", "--dst", "192.0.2.1", *args])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_lookup_takes_a_protocol_number(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["lookup", MINIMAL, "--src", "10.0.0.7", "--dst", "192.0.2.1", "--protocol", "17"]
    assert main(args) == 0
    assert capsys.readouterr().out.startswith("rule 1:")


def test_one_pool_is_not_pools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", MINIMAL]) == 0
    out = capsys.readouterr().out
    assert " 1 pool," in out and "pools" not in out


def test_no_socket_hints_at_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "--socket", str(tmp_path / "none.sock")]) == 1
    err = capsys.readouterr().err
    assert "cannot reach" in err and "No such file or directory" in err
    assert "--socket" in err and "quicknat-swpath" in err


def test_session_table_names_protocols(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"id": 1, "protocol": p, "origin": "snat", "internal": "10.0.0.7:1", "age_s": 1,
         "external": "203.0.113.1:2", "remote": "192.0.2.1:53"}
        for p in (6, 17, 1, 47)
    ]  # fmt: skip
    monkeypatch.setattr("quicknat.controller.status.query", lambda path, command: rows)
    assert main(["sessions"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines[1:5]] == ["tcp", "udp", "icmp", "47"]


def test_session_table_says_where_each_session_lives(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """swpath's rows (offload mode: the switch holds it too, or not) and the
    controller's (its entries in the switch, or an install under way)."""
    base = {"protocol": 17, "origin": "snat", "internal": "10.0.0.7:1", "age_s": 1,
            "external": "203.0.113.1:2", "remote": "192.0.2.1:53"}  # fmt: skip
    rows = [
        {**base, "id": 1, "offloaded": True},
        {**base, "id": 2, "offloaded": False},
        {**base, "id": 3, "installed": True, "install": "installed"},
        {**base, "id": 4, "installed": False, "install": "pending"},
    ]
    monkeypatch.setattr("quicknat.controller.status.query", lambda path, command: rows)
    assert main(["sessions"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-1] == "where"
    assert [line.split()[-1] for line in lines[1:5]] == ["both", "software", "switch", "pending"]


def test_a_closed_pipe_ends_quietly() -> None:
    """`quicknat check --json FILE | head -1`: no BrokenPipeError traceback."""
    code = (
        "import sys; from quicknat.cli import main; "
        f"sys.exit(main(['check', '--json', {MINIMAL!r}]))"
    )
    proc = subprocess.run(
        f'{sys.executable} -c "{code}" | head -c 1',
        shell=True,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.stdout == "{"
    assert proc.stderr == ""


def test_version() -> None:
    assert cli._version() != ""


STATS = {
    "sessions": 3,
    "connected": True,
    "counters": {"rx": 120, "tx": 118, "drop_no_rule": 0},
    "pools": [{"name": "public", "ports": 64512, "in_use": {"tcp": 2, "udp": 1, "icmp": 0}}],
    "lcores": [{"worker": 0, "lcore": 1, "sessions": 3, "counters": {"rx": 120}}],
}


def test_stats_prints_a_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("quicknat.controller.status.query", lambda path, command: STATS)
    assert main(["stats"]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert lines[:2] == ["sessions 3", "connected yes"]
    assert "counters (2 non-zero, 1 at 0: --json shows them):" in lines
    assert "rx 120" in lines and "tx 118" in lines
    assert not [line for line in lines if "drop_no_rule" in line]
    pools = lines.index("pools:")
    assert lines[pools + 1 : pools + 3] == [
        "name ports in_use.tcp in_use.udp in_use.icmp",
        "public 64512 2 1 0",
    ]
    assert lines[-2:] == ["worker lcore sessions", "0 1 3"]  # its counters: --json


def test_stats_json_is_the_answer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("quicknat.controller.status.query", lambda path, command: STATS)
    assert main(["stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == STATS


@pytest.mark.parametrize("missing", ["startup", "routes"])
def test_reload_names_an_older_swpath(
    missing: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A quicknat-swpath older than the CLI (still running across an
    upgrade) lacks the commands reload asks: reload says so and what to do,
    and applies nothing, instead of a parser's "Expecting value"."""
    import json as json_

    from quicknat.config import load_config
    from quicknat.config.commands import RESTART_ONLY, config_commands

    config = Path(__file__).parent / "golden" / "good" / "minimal.toml"
    started = [
        line for line in config_commands(load_config(config)) if line.split()[0] in RESTART_ONLY
    ]
    # before `startup` (stop 47) it answered a line, unknown command
    answers = {} if missing == "startup" else {"startup": started, "rules": []}
    sent: list[str] = []

    def line_command(path: Path, line: str) -> list[str]:
        sent.append(line)
        if line not in answers:
            raise ValueError(f"unknown command '{line}' (interface, route, ...)")
        return answers[line]

    def query(path: Path, command: str) -> object:
        if command in ("stats", "neighbors"):  # stats: swpath's has no "connected"
            return {"counters": {}} if command == "stats" else []
        raise json_.JSONDecodeError("Expecting value", "error: unknown command", 0)

    monkeypatch.setattr("quicknat.controller.status.line_command", line_command)
    monkeypatch.setattr("quicknat.controller.status.query", query)
    code = main(["reload", "--swpath", "--socket", "/tmp/sp.sock", "--config", str(config)])
    assert code == 1
    err = capsys.readouterr().err
    assert f"does not know `{missing}`: it is older than this quicknat; restart it" in err, err
    assert [line for line in sent if line.startswith(("rule ", "route ", "neighbor "))] == []


def test_routes_prints_swpaths_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`quicknat routes` asks swpath's socket and lays its rows out as a
    table; an on-link route's next hop prints as -."""
    rows = [
        {"prefix": "0.0.0.0/0", "interface": "out0", "via": "198.51.100.254",
         "source": None, "connected": False},
        {"prefix": "10.0.0.0/24", "interface": "in0", "via": None,
         "source": None, "connected": True},
    ]  # fmt: skip
    asked: list[tuple[str, str]] = []

    def query(path: Path, command: str) -> object:
        asked.append((str(path), command))
        return rows

    monkeypatch.setattr("quicknat.controller.status.query", query)
    assert main(["routes", "--socket", "/tmp/sp.sock"]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert asked == [("/tmp/sp.sock", "routes")]
    assert lines == [
        "2 routes:",
        "prefix interface via source connected",
        "0.0.0.0/0 out0 198.51.100.254 - no",
        "10.0.0.0/24 in0 - - yes",
    ]


def test_neighbors_prints_swpaths_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`quicknat neighbors` asks swpath's socket (the controller has no ARP
    table) and lays the rows out as a table; unresolved MACs print as -."""
    rows = [
        {
            "address": "198.51.100.254",
            "interface": "out0",
            "mac": "02:00:00:00:00:fe",
            "state": "reachable",
            "confirmed_s": 1.5,
            "probes": 0,
        },
        {
            "address": "198.51.100.7",
            "interface": "out0",
            "mac": None,
            "state": "incomplete",
            "confirmed_s": None,
            "probes": 0,
        },
    ]
    asked: list[tuple[str, str]] = []

    def query(path: Path, command: str) -> object:
        asked.append((str(path), command))
        return rows

    monkeypatch.setattr("quicknat.controller.status.query", query)
    assert main(["neighbors", "--socket", "/tmp/sp.sock"]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert asked == [("/tmp/sp.sock", "neighbors")]
    assert lines == [
        "2 neighbors:",
        "address interface mac state confirmed_s probes",
        "198.51.100.254 out0 02:00:00:00:00:fe reachable 1.5 0",
        "198.51.100.7 out0 - incomplete - 0",
    ]
