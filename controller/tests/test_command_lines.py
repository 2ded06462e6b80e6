"""The lines the controller writes to swpath, against the language's one
description (swpath/spec/commands.toml): every kind of line is in
golden/commands/every_kind.cmds, which swpath's C parser reads and writes back
as the very line (swpath/tests/test_sp_cmd.c, test_golden_files); every
command of the language is among them; and the writer refuses what the
parser would (command_render.py), so no line can reach swpath with a word it
lacks. Regenerate the golden file after an intended change with
``UPDATE_GOLDEN=1 make test`` and review the diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from quicknat.addr import parse_ipv4
from quicknat.config import parse_config
from quicknat.config.command_render import render
from quicknat.config.command_table import COMMANDS
from quicknat.config.commands import (
    adopt_command,
    config_commands,
    neighbor_commands,
    route_commands,
    rule_command,
    runtime_commands,
    session_command,
    slow_path_commands,
)
from quicknat.rules import Protocol

GOLDEN = Path(__file__).parent / "golden" / "commands"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


def every_kind() -> list[str]:
    """One line, at least, of every kind the controller writes: a
    configuration (golden/good/full.toml's, with file logging, collectors and
    two slow-path instances) for a standalone swpath and for each instance, a
    reload that changes a rule, the offload manager's session lines, and the
    queries of the status socket and the stream."""
    path = GOLDEN / "every_kind.toml"
    config = parse_config(path.read_text(), "commands/every_kind.toml")
    lines = config_commands(config)
    lines += slow_path_commands(config, "sp0")
    lines += slow_path_commands(config, "sp1")
    running = {rule.id: rule_command(rule) for rule in config.rules}
    wanted = parse_config(
        path.read_text().replace("port = 3074", "port = 3075"), "commands/every_kind.toml"
    )
    lines += ["# a reload that changes rule 2, with --flush"]
    lines += runtime_commands(running, wanted, flush=True)
    lines += ["# its neighbours, to swpath alone: one no longer in the file, one changed"]
    gateway = {"address": "198.51.100.254", "interface": "out0", "state": "configured"}
    gone = {"address": "10.0.0.99", "interface": "in0", "state": "configured"}
    lines += neighbor_commands(
        [gateway | {"mac": "02:00:00:00:00:99"}, gone | {"mac": "02:00:00:00:10:99"}], wanted
    )
    lines += ["# its routes, to swpath alone: one no longer in the file, one changed"]
    lines += route_commands(
        [
            {"prefix": "0.0.0.0/0", "interface": "out0", "via": "198.51.100.253"},
            {"prefix": "192.0.2.0/24", "interface": "out0", "via": "198.51.100.254"},
        ],
        wanted,
    )
    inside, remote = (parse_ipv4("10.0.0.15"), 40000), (parse_ipv4("198.51.100.10"), 443)
    external = (parse_ipv4("203.0.113.1"), 40000)
    lines += ["# the offload manager"]
    lines += [session_command(a, 12, Protocol.TCP, inside, remote) for a in ("offload", "idle")]
    lines += [session_command("onload", 7, Protocol.ICMP, (inside[0], 9), (remote[0], 9))]
    lines += [adopt_command(Protocol.TCP, (inside, external, remote), "snat", "established")]
    lines += [adopt_command(Protocol.UDP, (inside, external, remote), "dnat")]
    # learn mode's start-up lines (issue 34): the controller's lease policy
    # for [offload] install = "learn" writes them
    lines += ["# learn mode"]
    lines += [render("offload learn", True), render("offload learn", False)]
    lines += [render("offload lease", "tcp_established", **{"class": 5, "seconds": 43200})]
    lines += [render("offload lease", "udp", **{"class": 1, "seconds": 30})]
    lines += [render("offload fresh")]  # the controller, having pushed a program
    lines += ["# the status socket and the stream"]
    lines += [render("rules"), render("stats"), render("neighbors"), render("startup")]
    lines += [render("routes")]
    lines += [render("subscribe sessions")]
    lines += [render("sessions", limit=100, proto=Protocol.UDP, src=inside[0], port=53)]
    lines += [render("sessions", "flush"), render("sessions", "delete", dst=remote[0])]
    return lines


def test_every_kind_of_line_is_the_golden_file() -> None:
    actual = "\n".join(every_kind()) + "\n"
    expected = GOLDEN / "every_kind.cmds"
    if UPDATE:
        expected.write_text(actual)
    assert actual == expected.read_text()


def test_every_command_of_the_language_is_written() -> None:
    verbs = {" ".join(line.split()[:2]) for line in every_kind() if not line.startswith("#")}
    verbs |= {line.split()[0] for line in every_kind() if not line.startswith("#")}
    assert set(COMMANDS) - verbs == set()


@pytest.mark.parametrize(
    ("verb", "args", "fields", "why"),
    [
        ("rule move", (), {}, "no command"),
        ("pool", ("p",), {"adresses": ["203.0.113.0/29"]}, "no keyword 'adresses'"),
        ("interface", ("in0",), {"zone": "inside", "port": 512}, "port 512: must be 0..511"),
        ("interface", ("in0",), {"zone": "middle", "port": 1}, "must be one of inside, outside"),
        ("interface", ("in0",), {"port": 1}, "missing zone"),
        ("interface", ("x" * 32,), {"zone": "inside", "port": 1}, "at most 31 bytes"),
        ("interface", ("in0",), {"zone": "inside", "port": True}, "not a number"),
        ("rule add", (), {"id": 1, "type": "snat", "prefix": "10.0.0.0/24"}, "exactly one of"),
        ("route", ("10.0.0.1/24",), {"dev": "in0"}, "host bits"),
        ("neighbor", ("10.0.0.300",), {"mac": "02:00:00:00:00:01", "dev": "in0"}, "not a ipv4"),
        ("interface", ("in0",), {"zone": "inside", "port": 1, "mac": "03:00:00:00:00:01"}, "mac"),
        ("peer", (), {"vid": 15, "ports": (1, 2)}, "vid 15: must be 16..4093"),
        ("peer", (), {"vid": 16, "ports": (2, 1)}, "LOW-HIGH"),
        ("logging", (), {"events": "file", "file": "/var/log/a b"}, "one word"),
        ("session offload", (12, Protocol.ANY, (1, 1), (2, 2)), {}, "protocol any"),
        ("session idle", (12, Protocol.TCP, (1, 70000), (2, 2)), {}, "over 65535"),
        ("rule del", (), {}, "missing id"),
    ],
)
def test_the_writer_refuses_what_swpath_refuses(
    verb: str, args: tuple[object, ...], fields: dict[str, object], why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        render(verb, *args, **fields)


def test_defaults_are_written_as_swpath_writes_them_back() -> None:
    """A keyword the parser defaults is written all the same, and one whose
    absence is a value (mtu 0: the default) is left out at that value."""
    assert render("rule add", id=1, type="snat", prefix="10.0.0.0/24", pool="p") == (
        "rule add id 1 type snat prefix 10.0.0.0/24 protocol any pool p"
    )
    assert render("pool", "p", addresses=["203.0.113.0/29"]) == (
        "pool p ports 1024-65535 preserve_parity true preserve_port false addresses 203.0.113.0/29"
    )
    assert render("interface", "in0", zone="inside", port=1, mtu=0, slow_path=False) == (
        "interface in0 zone inside port 1"
    )
    assert render("peer", vid=16, ports=(1024, 2047), self=True, default=False) == (
        "peer vid 16 ports 1024-2047 self"
    )
