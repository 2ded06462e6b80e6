"""Run-time configuration (controller/reconfigure.py, Controller.reconfigure):
rules added and deleted, reloads, what is refused, and the switch's part."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from quicknat.config import parse_config
from quicknat.config.commands import (
    RESTART_ONLY,
    config_commands,
    neighbor_commands,
    restart_only_changes,
    route_commands,
    rule_command,
    runtime_commands,
)
from quicknat.controller import reconfigure as rc
from quicknat.controller.program import Pipeline, static_entries
from quicknat.controller.service import Controller, ControllerOptions
from quicknat.controller.status import SessionQuery, _answer
from stub_controller import CONFIG, DELETE, INSERT, Run, StubSwitch, frame, kinds
from test_offload_manager import OFFLOAD_CONFIG

DNAT = "id 50 type dnat prefix 203.0.113.50/32 port 80 protocol tcp to 10.0.0.10 to_port 8080"


def test_rule_words_are_swpath_s() -> None:
    rule = rc.rule_from_words(DNAT.split())
    assert rule == {
        "id": 50,
        "type": "dnat",
        "prefix": "203.0.113.50/32",
        "port": 80,
        "protocol": "tcp",
        "to": "10.0.0.10",
        "to_port": 8080,
    }
    snat = rc.rule_from_words(
        [
            "id",
            "7",
            "type",
            "snat",
            "prefix",
            "10.9.0.0/16",
            "protocol",
            "any",
            "to",
            "203.0.113.9/32",
        ]
    )
    assert snat["to"] == "203.0.113.9"
    with pytest.raises(rc.ReconfigureError, match="needs an id"):
        rc.rule_from_words(["type", "snat", "prefix", "10.0.0.0/8", "pool", "public"])
    with pytest.raises(rc.ReconfigureError, match="unknown word 'via'"):
        rc.rule_from_words(["id", "1", "via", "1.2.3.4"])
    with pytest.raises(rc.ReconfigureError, match="missing value"):
        rc.rule_from_words(["id", "1", "type"])


def test_rules_are_validated_as_a_file_would_be() -> None:
    config = parse_config(CONFIG)
    added = rc.with_rule(config, rc.rule_from_words(DNAT.split()))
    assert [r.id for r in added.rules] == [1, 50]
    with pytest.raises(rc.ReconfigureError, match="pool 'nope'"):
        rc.with_rule(
            config,
            rc.rule_from_words(
                ["id", "9", "type", "snat", "prefix", "10.9.0.0/16", "pool", "nope"]
            ),
        )
    with pytest.raises(rc.ReconfigureError, match="id 1: already used"):
        rc.with_rule(
            config,
            rc.rule_from_words(
                ["id", "1", "type", "snat", "prefix", "10.9.0.0/16", "pool", "public"]
            ),
        )
    assert [r.id for r in rc.without_rule(added, 50).rules] == [1]
    with pytest.raises(rc.ReconfigureError, match="no rule 51"):
        rc.without_rule(added, 51)


def test_interfaces_pools_and_logging_need_a_restart() -> None:
    config = parse_config(CONFIG)
    rc.check_runtime_change(config, dataclasses.replace(config, rules=()))
    fewer = dataclasses.replace(config, interfaces=config.interfaces[:1])
    with pytest.raises(rc.ReconfigureError, match="interfaces changed"):
        rc.check_runtime_change(config, fewer)
    with pytest.raises(rc.ReconfigureError, match="pools changed"):
        rc.check_runtime_change(config, dataclasses.replace(config, pools=()))


def test_entry_diff_inserts_modifies_deletes() -> None:
    p4info = Pipeline.load().p4info
    config = parse_config(CONFIG)
    old = static_entries(p4info, config)
    assert not rc.entry_diff(old, old)
    new = static_entries(p4info, rc.with_rule(config, rc.rule_from_words(DNAT.split())))
    diff = rc.entry_diff(old, new)
    assert diff.inserts and not diff.deletes
    back = rc.entry_diff(new, old)
    assert back.deletes and not back.inserts
    assert {e.table_id for e in diff.inserts} == {e.table_id for e in back.deletes}


def test_a_rule_added_and_deleted_at_run_time() -> None:
    """The switch gets the difference of the static entries; new flows the new
    rule; an established session of a deleted rule stays unless flushed."""

    async def scenario() -> None:
        run = Run()
        await run.first_flow()
        run.controller.connected.set()
        lines = await run.controller.line_command(f"rule add {DNAT}")
        assert lines[0].startswith("2 rules; static entries: ")
        assert kinds(run.switch.writes[-1])[-1] == INSERT
        assert run.controller.mode.nat.qns.lookup_kind  # the core has it:
        assert [r.id for r in run.controller.config.rules] == [1, 50]
        assert await run.controller.line_command("rules") == [
            "rule add id 1 type snat prefix 10.0.0.0/24 protocol any pool public",
            "rule add id 50 type dnat prefix 203.0.113.50/32 port 80 protocol tcp "
            "to 10.0.0.10/32 to_port 8080",
        ]
        with pytest.raises(rc.ReconfigureError, match="already used"):
            await run.controller.line_command(f"rule add {DNAT}")
        # the SNAT rule goes; the established session stays (no flush)
        await run.controller.line_command("rule del 1")
        assert DELETE in kinds(run.switch.writes[-1])
        assert len(list(run.controller.mode.nat.sessions())) == 1
        # a new flow from inside now has no rule
        run.frame = frame("10.0.0.11")
        run.packet_in()
        await run.settle()
        assert run.counters()["refused.no_rule"] == 1
        assert run.counters()["reconfigured"] == 2
        await run.close()

    asyncio.run(scenario())


def test_flush_deletes_the_sessions_of_removed_rules(tmp_path: Path) -> None:
    async def scenario() -> None:
        run = Run()
        await run.first_flow()
        run.controller.connected.set()
        path = tmp_path / "nat.toml"
        path.write_text(CONFIG.replace('prefix = "10.0.0.0/24"', 'prefix = "10.0.0.0/25"'))
        lines = await run.controller.line_command(f"reload flush config {path}")
        assert lines[0].endswith("1 sessions deleted"), lines
        await run.settle()
        assert list(run.controller.mode.nat.sessions()) == []
        assert run.counters()["sessions_deleted"] == 1
        assert await run.controller.delete_sessions(SessionQuery("flush")) == 0
        path.write_text(CONFIG.replace('ports = "2000-2000"', 'ports = "2000-2001"'))
        with pytest.raises(rc.ReconfigureError, match="pools changed"):
            await run.controller.line_command(f"reload config {path}")
        await run.close()

    asyncio.run(scenario())


def test_reload_without_a_file_is_refused() -> None:
    controller = Controller(parse_config(CONFIG), ControllerOptions(), Pipeline.load())
    with pytest.raises(rc.ReconfigureError, match="not started from a file"):
        asyncio.run(controller.line_command("reload"))


def test_the_switch_refuses_swpath_s_sub_interfaces() -> None:
    """vlan and slow_path describe a slow-path instance's link (swpath); a
    switch port is untagged, and one port cannot carry two port_zone entries."""
    config = parse_config(
        (Path(__file__).parent / "golden" / "good" / "slow_path_instance.toml").read_text()
    )
    pipeline = Pipeline.load()
    with pytest.raises(ValueError, match="interface inside: 'vlan' and 'slow_path' are swpath's"):
        static_entries(pipeline.p4info, config)


def test_runtime_commands_turn_running_rules_into_the_wanted_ones() -> None:
    """What quicknat reload sends swpath, and the controller each instance."""
    config = parse_config(CONFIG)
    (kept,) = [rule_command(r) for r in config.rules]
    running = {1: kept, 7: "rule add id 7 type snat prefix 10.9.0.0/16 protocol any pool public"}
    wanted = rc.with_rule(config, rc.rule_from_words(DNAT.split()))
    commands = runtime_commands(running, wanted, flush=True)
    rules = [c for c in commands if c.startswith(("rule ", "sessions "))]
    assert rules == [
        "rule del 7",
        "sessions delete rule 7",
        "rule add id 50 type dnat prefix 203.0.113.50/32 port 80 protocol tcp "
        "to 10.0.0.10/32 to_port 8080",
    ]
    assert [c.split()[0] for c in commands[3:]] == ["timeouts", "filtering", "limits", "icmp"]
    assert "sessions delete rule 7" not in runtime_commands(running, wanted, flush=False)


def test_neighbor_commands_turn_configured_neighbours_into_the_file_s() -> None:
    """What quicknat reload sends swpath for [[neighbor]]: before, a changed
    MAC in the file stayed unapplied until a restart, and reload said
    nothing of it. Learned and unresolved rows are not the file's."""
    config = parse_config(CONFIG)  # 198.51.100.254 02:00:00:00:02:fe on out0

    def row(address: str, mac: str | None, state: str, interface: str = "out0") -> dict[str, Any]:
        return {"address": address, "interface": interface, "mac": mac, "state": state}

    same = row("198.51.100.254", "02:00:00:00:02:FE", "configured")  # as swpath writes it
    assert neighbor_commands([same], config) == []
    moved = row("198.51.100.254", "02:00:00:00:02:01", "configured")
    gone = row("10.0.0.9", "02:00:00:00:00:09", "configured", "in0")
    learned = row("10.0.0.7", "02:00:00:00:00:07", "reachable", "in0")
    unresolved = row("10.0.0.8", None, "incomplete", "in0")
    assert neighbor_commands([moved, gone, learned, unresolved], config) == [
        "neighbor del 10.0.0.9 dev in0",
        "neighbor 198.51.100.254 mac 02:00:00:00:02:fe dev out0",
    ]
    # a next hop only learned so far becomes the file's
    assert neighbor_commands([row("198.51.100.254", "02:00:00:00:02:01", "stale")], config) == [
        "neighbor 198.51.100.254 mac 02:00:00:00:02:fe dev out0"
    ]


def test_route_commands_turn_the_running_routes_into_the_file_s() -> None:
    """What quicknat reload sends swpath for [[route]]: before, a route
    change needed a restart. The interfaces' connected networks are not
    the file's; the same route again is not sent."""
    config = parse_config(CONFIG)  # 0.0.0.0/0 on out0 via 198.51.100.254

    def row(prefix: str, via: str | None, connected: bool = False) -> dict[str, Any]:
        return {"prefix": prefix, "interface": "out0", "via": via, "connected": connected}

    same = row("0.0.0.0/0", "198.51.100.254")
    connected = row("198.51.100.0/24", None, connected=True)
    assert route_commands([same, connected], config) == []
    moved = row("0.0.0.0/0", "198.51.100.253")
    extra = row("192.0.2.0/24", "198.51.100.254")
    assert route_commands([moved, extra, connected], config) == [
        "route del 192.0.2.0/24",
        "route 0.0.0.0/0 dev out0 via 198.51.100.254",
    ]
    assert route_commands([connected], config) == ["route 0.0.0.0/0 dev out0 via 198.51.100.254"]


def test_restart_only_changes_are_what_swpath_takes_only_at_a_restart() -> None:
    """quicknat reload refuses a file whose interfaces, pools or logging
    differ from the lines swpath started with (its `startup`): before, it
    applied the rest and said nothing of them."""
    config = parse_config(CONFIG)
    running = [line for line in config_commands(config) if line.split()[0] in RESTART_ONLY]
    assert {line.split()[0] for line in running} == {"interface", "pool", "logging"}
    assert restart_only_changes(running, config) == []
    # rules, settings, neighbours and routes are run time's
    edited = rc.with_rule(config, rc.rule_from_words(DNAT.split()))
    assert restart_only_changes(running, dataclasses.replace(edited, neighbors=())) == []
    assert restart_only_changes(running, dataclasses.replace(config, routes=())) == []
    pool = dataclasses.replace(config.pools[0], port_min=2000, port_max=3000)
    assert restart_only_changes(running, dataclasses.replace(config, pools=(pool,))) == ["pools"]
    mtu = dataclasses.replace(config.interfaces[0], mtu=1400)
    both = dataclasses.replace(config, interfaces=(mtu, *config.interfaces[1:]), pools=(pool,))
    assert restart_only_changes(running, both) == ["interfaces", "pools"]


class StubInstance:
    """A slow-path instance's control socket: records the lines it gets and
    answers each `ok`, or `error: ...` for one containing `refuse`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[str] = []

    async def start(self) -> asyncio.AbstractServer:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            for line in (await reader.read()).decode().splitlines():
                self.lines.append(line)
                refused = "refuse" in line or "203.0.113.66" in line
                writer.write(b"error: refused\n" if refused else b"ok\n")
            writer.close()

        return await asyncio.start_unix_server(serve, str(self.path))


async def offload_controller(
    tmp_path: Path,
) -> tuple[Controller, StubInstance, asyncio.AbstractServer]:
    """An offload-mode controller whose one instance is a StubInstance
    serving its control socket in tmp_path."""
    control = tmp_path / "sp0.sock"
    text = OFFLOAD_CONFIG.replace("/run/sp0.sock", str(control))
    instance = StubInstance(control)
    server = await instance.start()
    return Controller(parse_config(text), ControllerOptions(), Pipeline.load()), instance, server


def test_offload_mode_changes_every_instance_then_the_switch(tmp_path: Path) -> None:
    """A rule added at run time in offload mode: the instance gets its
    commands first, then the switch steers the new DNAT address to it
    (slow_path_out2in); a change the instance refuses leaves the switch and
    the configuration as they were, and says which instance refused."""

    async def scenario() -> None:
        controller, instance, server = await offload_controller(tmp_path)
        switch = StubSwitch()
        controller.client = switch  # type: ignore[assignment]
        controller.connected.set()
        await controller.line_command(f"rule add {DNAT}")
        assert instance.lines[0] == (
            "rule add id 50 type dnat prefix 203.0.113.50/32 port 80 protocol tcp "
            "to 10.0.0.10/32 to_port 8080"
        )
        (write,) = switch.writes
        steering = controller.p4info.table("slow_path_out2in").id
        assert INSERT in kinds(write)
        assert any(u.entity.table_entry.table_id == steering for u in write)
        # refused by the instance: nothing else changes
        refused = DNAT.replace("50", "66")
        with pytest.raises(rc.ReconfigureError, match="slow path sp0: error: refused"):
            await controller.line_command(f"rule add {refused}")
        assert len(switch.writes) == 1
        assert [r.id for r in controller.config.rules] == [1, 2, 50]
        server.close()
        await server.wait_closed()
        # an instance that cannot be reached is named too
        with pytest.raises(rc.ReconfigureError, match="slow path sp0: "):
            await controller.line_command("rule del 50")
        assert [r.id for r in controller.config.rules] == [1, 2, 50]

    asyncio.run(scenario())


def test_counters_asks_no_instance_where_stats_asks_each(tmp_path: Path) -> None:
    """In offload mode `stats` asks every instance for its counters; the
    socket's `counters` answers the controller's own without a word to any
    instance, so a poller does not load the instances (or the controller)
    with what it measures (status.py)."""

    async def scenario() -> None:
        controller, instance, server = await offload_controller(tmp_path)
        controller.stats["sessions_installed"] += 3
        answer = await _answer(controller, "counters")
        assert isinstance(answer, dict)
        assert answer["counters"]["sessions_installed"] == 3
        assert set(answer) == {"counters"}
        assert instance.lines == []
        full = await _answer(controller, "stats")
        assert isinstance(full, dict) and "instances" in full
        assert instance.lines == ["stats"]
        server.close()
        await server.wait_closed()

    asyncio.run(scenario())
