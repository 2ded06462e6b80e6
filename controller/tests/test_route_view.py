"""`quicknat routes` on the P4 path (route_view.py): the routing_v4 entries
the controller writes for a configuration read back as swpath's rows, on
both programs' P4Info; an entry the configuration does not explain shows
what the switch holds."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import configs
import pytest
from finsy.proto import p4r
from quicknat.config import parse_config
from quicknat.controller.program import Pipeline, format_mac, mac_value
from quicknat.controller.route_view import TABLE, route_rows
from quicknat.controller.switch_config import SwitchConfig
from quicknat.controller.target import bmv2, swx
from quicknat.p4rt.client import P4RuntimeError
from quicknat.p4rt.entities import table_entry
from quicknat.p4rt.p4info import P4Info
from stub_controller import Run

EXTRA = """
[[route]]
prefix = "8.8.8.0/24"
via = "198.51.100.253"
interface = "out0"

[[neighbor]]
address = "198.51.100.253"
mac = "02:00:00:00:02:fd"
interface = "out0"

[[neighbor]]
address = "10.0.0.10"
mac = "02:00:00:00:01:10"
interface = "in0"
"""


def row(prefix: str, interface: str, via: str | None, mac: str) -> dict[str, object]:
    return {
        "prefix": prefix,
        "interface": interface,
        "via": via,
        "source": None,
        "connected": False,
        "mac": mac,
    }


@pytest.mark.parametrize("target", ["bmv2", "swx"])
def test_the_configuration_s_routes_read_back(target: str) -> None:
    p4info = Pipeline.of_target(target).p4info
    config = parse_config(configs.text("switch", "snat_pool") + EXTRA)
    written = SwitchConfig.of(p4info, config, 5000, (bmv2 if target == "bmv2" else swx)(p4info))
    table_id = p4info.table(TABLE).id
    entries = [e for e in written.table_entries() if e.table_id == table_id]
    assert route_rows(p4info, config, entries) == [
        row("0.0.0.0/0", "out0", "198.51.100.254", "02:00:00:00:02:fe"),
        row("8.8.8.0/24", "out0", "198.51.100.253", "02:00:00:00:02:fd"),
        row("10.0.0.10/32", "in0", None, "02:00:00:00:01:10"),
        row("198.51.100.253/32", "out0", None, "02:00:00:00:02:fd"),
        row("198.51.100.254/32", "out0", None, "02:00:00:00:02:fe"),
    ]


def entry(p4info: P4Info, prefix: tuple[int, int], port: int, dmac: int) -> p4r.TableEntry:
    return table_entry(
        p4info,
        TABLE,
        {"ipv4_dst": prefix},
        "set_next_hop",
        {"port": port, "smac": 0x020000000002, "dmac": dmac},
    )


def test_an_entry_the_configuration_does_not_explain() -> None:
    p4info = Pipeline.load().p4info
    config = configs.parsed("switch")
    rows = route_rows(
        p4info,
        config,
        [
            entry(p4info, (0xC0000200, 24), 9, 0x020000000009),  # no such port
            entry(p4info, (0x0A000000, 8), 2, 0x02000000AAAA),  # no such neighbour
        ],
    )
    assert rows == [
        row("10.0.0.0/8", "out0", None, "02:00:00:00:aa:aa"),
        row("192.0.2.0/24", "port 9", None, "02:00:00:00:00:09"),
    ]


def test_format_mac_is_mac_value_s_inverse() -> None:
    assert format_mac(0x0200000002FE) == "02:00:00:00:02:fe"
    assert format_mac(mac_value("aa:bb:cc:dd:ee:0f")) == "aa:bb:cc:dd:ee:0f"


def test_the_controller_answers_from_the_switch_or_says_why_not() -> None:
    """`routes` on the controller's socket: what the switch holds, read back;
    not connected, or the read refused, a one-line reason (the CLI prints
    it), never a dropped connection."""
    run = Run()
    p4info = run.pipeline.p4info
    held = entry(p4info, (0x08080800, 24), 2, 0x0200000002FE)
    reads: list[p4r.Entity | P4RuntimeError] = [p4r.Entity(table_entry=held)]

    async def read(entities: Sequence[p4r.Entity]) -> list[p4r.Entity]:
        (asked,) = entities
        assert asked.table_entry.table_id == p4info.table(TABLE).id
        if isinstance(reads[0], P4RuntimeError):
            raise reads[0]
        return [e for e in reads if isinstance(e, p4r.Entity)]

    run.switch.read = read  # type: ignore[attr-defined]
    controller = run.controller
    answer = asyncio.run(controller.routes_answer())
    assert answer == {"error": "routes: not connected to the switch at 127.0.0.1:9559"}
    controller.connected.set()
    assert asyncio.run(controller.routes_answer()) == [
        row("8.8.8.0/24", "out0", "198.51.100.254", "02:00:00:00:02:fe")
    ]
    reads[0] = P4RuntimeError("Read: device is not configured")
    assert asyncio.run(controller.routes_answer()) == {
        "error": "routes: the switch at 127.0.0.1:9559: Read: device is not configured"
    }
