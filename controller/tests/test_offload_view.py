"""Offload mode's one view of its instances' sessions and counters
(modes/offload_view.py, offload_mode.py's session_rows, delete_sessions and
stats_view, offload_io.py's ask_all): the lines each instance gets, the rows
merged with their instance and place, deletions summed, counters added up,
and an instance that does not answer named."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from quicknat.addr import parse_ipv4
from quicknat.config.model import SlowPath
from quicknat.controller.modes.offload_io import OffloadIO
from quicknat.controller.modes.offload_view import (
    InstanceError,
    Reply,
    deleted_total,
    instance_line,
    merged_rows,
    stats_view,
)
from quicknat.controller.stats import Stats
from quicknat.controller.status import SessionQuery, _answer
from test_offload_manager import Rig, event


def row(sid: int, host: int, port: int = 5000, offloaded: bool = False) -> dict[str, Any]:
    """A row as swpath lists it (control/format.c), for event(sid, host)'s session."""
    return {
        "id": sid,
        "protocol": 17,
        "origin": "snat",
        "rule": 1,
        "internal": f"10.0.0.{host}:{port}",
        "external": f"203.0.113.1:{20000 + host}",
        "remote": "198.51.100.10:53",
        "offloaded": offloaded,
        "worker": 0,
    }


def test_each_instance_gets_the_query_in_swpaths_words() -> None:
    query = SessionQuery.parse(["delete", "proto", "udp", "src", "10.0.0.10", "port", "53"])
    assert instance_line(query) == "sessions delete proto udp src 10.0.0.10 port 53"
    assert instance_line(SessionQuery()) == "sessions"
    assert instance_line(SessionQuery("list", limit=5, dst=parse_ipv4("8.8.8.8"), rule=2)) == (
        "sessions limit 5 dst 8.8.8.8 rule 2"
    )
    assert instance_line(SessionQuery("flush")) == "sessions flush"


def test_rows_are_merged_in_instance_order_with_their_place() -> None:
    replies = [
        Reply("sp0", [row(1, 10), row(2, 11)]),
        Reply("sp1", [row(1, 20)]),  # ids are each instance's own
    ]
    rows = merged_rows(replies, lambda instance, r: (instance, r["id"]) == (1, 1))
    assert [(r["instance"], r["id"], r["where"]) for r in rows] == [
        ("sp0", 1, "software"),
        ("sp0", 2, "software"),
        ("sp1", 1, "switch"),
    ]
    assert rows[2]["internal"] == "10.0.0.20:5000", "the instance's fields stay"


def test_an_instance_that_does_not_answer_is_named() -> None:
    replies = [
        Reply("sp0", [row(1, 10)]),
        Reply("sp1", error="/run/sp1.sock: [Errno 111] Connection refused"),
    ]
    with pytest.raises(InstanceError, match=r"slow path sp1: /run/sp1.sock: .*refused"):
        merged_rows(replies, lambda i, r: False)
    refused = [Reply("sp0", {"error": "sessions: worker 1 did not answer in 2000 ms"})]
    with pytest.raises(InstanceError, match="slow path sp0: sessions: worker 1"):
        merged_rows(refused, lambda i, r: False)
    with pytest.raises(InstanceError, match="not a session list"):
        merged_rows([Reply("sp0", {"sessions": 3})], lambda i, r: False)


def test_deletions_are_summed_and_a_missing_instance_said() -> None:
    assert deleted_total([Reply("sp0", {"deleted": 2}), Reply("sp1", {"deleted": 3})]) == 5
    with pytest.raises(InstanceError, match=r"slow path sp1: down \(2 deleted by the others\)"):
        deleted_total([Reply("sp0", {"deleted": 2}), Reply("sp1", error="down")])


def swpath_stats(sessions: int, deleted: int, tcp_in_use: int) -> dict[str, Any]:
    return {
        "sessions": sessions,
        "installed": sessions,
        "mappings": sessions,
        "neighbors": sessions + 2,
        "rules": 2,
        "workers": 1,
        "counters": {"sessions_deleted": deleted, "new_flows": sessions},
        "pools": [{"name": "p", "ports": 1000, "in_use": {"tcp": tcp_in_use, "udp": 0}}],
    }


def test_stats_are_each_instances_own_beside_their_sum() -> None:
    sp0, sp1 = swpath_stats(3, 1, 2), swpath_stats(4, 0, 5)
    view = stats_view([Reply("sp0", sp0), Reply("sp1", sp1), Reply("sp2", error="down")])
    assert view["instances"] == {
        "sp0": sp0,
        "sp1": sp1,
        "sp2": {"error": "slow path sp2: down"},
    }
    assert view["instances_total"] == {
        "answered": 2,
        "sessions": 7,
        "installed": 7,
        "mappings": 7,
        "neighbors": 11,
        "workers": 2,
        "counters": {"sessions_deleted": 1, "new_flows": 7},
        "pools": [{"name": "p", "ports": 2000, "in_use": {"tcp": 7, "udp": 0}}],
    }


class Instances:
    """Stands in for offload_io's ask_all: records each line, answers each
    instance from `answers` (a function of the line)."""

    def __init__(self, rig: Rig, answers: Any) -> None:
        self.lines: list[str] = []
        self.answers = answers
        rig.m.io.ask_all = self.ask_all  # type: ignore[method-assign]

    async def ask_all(self, line: str) -> list[Reply]:
        self.lines.append(line)
        return list(self.answers(line))


def test_the_mode_lists_every_instances_sessions_and_where_they_live() -> None:
    rig = Rig(instances=2)
    rig.m.on_event(0, event("opened", 1, host=10))
    rig.m.on_event(1, event("opened", 1, host=20))
    rig.flush()  # both installed
    Instances(
        rig,
        lambda line: [
            # sp0's session 1 now another flow (the instance's id reused):
            # not the one the switch holds; its session 2 not offloaded yet
            Reply("sp0", [row(1, 12), row(2, 11)]),
            Reply("sp1", [row(1, 20, offloaded=True)]),
        ],
    )
    rows = asyncio.run(rig.m.session_rows(SessionQuery()))
    assert [(r["instance"], r["id"], r["where"]) for r in rows] == [
        ("sp0", 1, "software"),
        ("sp0", 2, "software"),
        ("sp1", 1, "switch"),
    ]


def test_a_learning_switch_holds_the_sessions_whose_lease_runs() -> None:
    """install = "learn": the controller installs nothing, so a row's place is
    the instance's word for it: `switch_lease_s` (control/format.c), the
    time left of the lease the switch learned from the session's last tag.
    A row without one (never tagged, or the lease over) is software."""
    rig = Rig(instances=2, learn=True)
    Instances(
        rig,
        lambda line: [
            Reply(
                "sp0", [row(1, 10) | {"switch_lease_s": 3.2}, row(2, 11) | {"switch_lease_s": 0.0}]
            ),
            Reply("sp1", [row(1, 20)]),
        ],
    )
    rows = asyncio.run(rig.m.session_rows(SessionQuery()))
    assert [(r["instance"], r["id"], r["where"]) for r in rows] == [
        ("sp0", 1, "switch"),
        ("sp0", 2, "software"),
        ("sp1", 1, "software"),
    ]


def test_the_mode_routes_deletes_to_the_instances_and_sums_them() -> None:
    rig = Rig(instances=2)
    asked = Instances(
        rig, lambda line: [Reply("sp0", {"deleted": 0}), Reply("sp1", {"deleted": 1})]
    )
    query = SessionQuery.parse(["delete", "src", "10.0.0.20"])
    assert asyncio.run(rig.m.delete_sessions(query)) == 1
    assert asked.lines == ["sessions delete src 10.0.0.20"]
    # the instance's `closed` event, not the controller, takes the entries away
    assert rig.switch.writes == []


def test_the_mode_adds_each_instances_stats_and_their_sum() -> None:
    rig = Rig(instances=2)
    asked = Instances(
        rig, lambda line: [Reply("sp0", swpath_stats(1, 0, 1)), Reply("sp1", swpath_stats(2, 0, 0))]
    )
    view = asyncio.run(rig.m.stats_view())
    assert asked.lines == ["stats"]
    assert view["instances_total"]["sessions"] == 3  # type: ignore[index]
    assert list(view["instances"]) == ["sp0", "sp1"]  # type: ignore[arg-type]


class Source:
    """The socket's side of the controller (status.StatusSource), failing
    as offload mode does when an instance does not answer."""

    async def session_rows(self, query: SessionQuery) -> list[dict[str, object]]:
        raise InstanceError("slow path sp1: down")

    async def delete_sessions(self, query: SessionQuery) -> int:
        raise InstanceError("slow path sp1: down (2 deleted by the others)")

    async def stats_answer(self) -> dict[str, object]:
        return {}

    def counters_answer(self) -> dict[str, object]:
        return {}

    async def line_command(self, line: str) -> list[str]:
        return []


def test_the_socket_answers_an_instances_failure_as_an_error() -> None:
    source = Source()
    assert asyncio.run(_answer(source, "sessions")) == {"error": "sessions: slow path sp1: down"}
    assert asyncio.run(_answer(source, "sessions flush")) == {
        "error": "sessions: slow path sp1: down (2 deleted by the others)"
    }


def test_ask_all_asks_every_instance_at_once(tmp_path: Path) -> None:
    """Each instance's socket gets the line and answers one JSON document,
    as swpath does; a socket nobody serves, or an answer that is not JSON,
    is that instance's error."""

    async def scenario() -> None:
        got: list[str] = []

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            got.append((await reader.read()).decode())
            writer.write(json.dumps([row(1, 10)]).encode() + b"\n")
            writer.close()

        async def not_swpath(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read()
            writer.write(b"error: unknown command\n")
            writer.close()

        servers = [
            await asyncio.start_unix_server(serve, str(tmp_path / "sp0.sock")),
            await asyncio.start_unix_server(not_swpath, str(tmp_path / "sp2.sock")),
        ]
        instances = tuple(
            SlowPath(name=f"sp{i}", port=9 + i, control=str(tmp_path / f"sp{i}.sock"))
            for i in range(3)
        )
        io = OffloadIO(None, instances, Stats())  # type: ignore[arg-type]
        sp0, sp1, sp2 = await io.ask_all("sessions src 10.0.0.10")
        assert got == ["sessions src 10.0.0.10\n"]
        assert sp0 == Reply("sp0", [row(1, 10)])
        assert sp1.name == "sp1" and sp1.answer is None
        assert sp1.error is not None and sp1.error.startswith(f"{tmp_path / 'sp1.sock'}: ")
        assert sp2.error is not None and "not a JSON answer: b'error: unknown" in sp2.error
        for server in servers:
            server.close()
            await server.wait_closed()

    asyncio.run(scenario())
