"""The configuration's entries in the switch at a sync (switch_config.py):
on a switch that kept its tables only their difference is written, deletes
first; on a new pipeline everything is inserted."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import configs
from finsy.proto import p4r
from quicknat.config import parse_config
from quicknat.controller.program import Pipeline
from quicknat.controller.switch_config import SwitchConfig
from quicknat.controller.target import bmv2, swx
from quicknat.p4rt.client import UpdateError

P4INFO = Pipeline.load().p4info
PNA_P4INFO = Pipeline.of_target("swx").p4info
INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE


class Switch:
    """Holds table entries as a read gives them back; records writes."""

    def __init__(self, held: list[p4r.TableEntry]) -> None:
        self.held = held
        self.writes: list[list[p4r.Update]] = []

    async def write(self, updates: Sequence[p4r.Update]) -> list[UpdateError]:
        self.writes.append(list(updates))
        return []

    async def read(self, entities: Sequence[p4r.Entity]) -> list[p4r.Entity]:
        tables = {e.table_entry.table_id for e in entities}
        assert P4INFO.table("nat_in2out").id not in tables, "a sync reads no session"
        return [p4r.Entity(table_entry=e) for e in self.held if e.table_id in tables]


def config_entries(text: str, pna: bool = False) -> SwitchConfig:
    p4info = PNA_P4INFO if pna else P4INFO
    return SwitchConfig.of(p4info, parse_config(text), 5000, (swx if pna else bmv2)(p4info))


def test_a_kept_switch_gets_the_difference_deletes_first() -> None:
    before = config_entries(configs.text("switch", "snat_pool"))
    moved = configs.text("switch", "snat_pool").replace("198.51.100.254", "198.51.100.253")
    after = config_entries(moved.replace("02:00:00:00:02:fe", "02:00:00:00:02:fd"))
    switch = Switch(before.table_entries())
    asyncio.run(after.write(switch, fresh=False))
    tables = [
        [(u.type, P4INFO.table_by_id[u.entity.table_entry.table_id].name) for u in w]
        for w in switch.writes
        if w and w[0].entity.HasField("table_entry")
    ]
    # the old next hop's /32 route goes before the new one's comes; the
    # default route's next hop changes in place
    assert [kind for kind, _ in tables[0]] == [DELETE]
    assert sorted(kind for kind, _ in tables[1]) == sorted([MODIFY, INSERT])
    assert {name.rsplit(".", 1)[-1] for w in tables for _, name in w} == {"routing_v4"}


def test_a_new_pipeline_gets_every_entry_inserted() -> None:
    wanted = config_entries(configs.text("switch", "snat_pool"))
    switch = Switch([])
    asyncio.run(wanted.write(switch, fresh=True))
    inserted = switch.writes[0]
    assert [u.type for u in inserted] == [INSERT] * len(wanted.table_entries())


def test_a_target_without_clones_gets_no_clone_session() -> None:
    """BMv2 copies TCP state changes through the CPU clone session; the SWX
    build cannot clone (it punts them, TCP_SEGMENT), so it gets none."""
    text = configs.text("switch", "snat_pool")
    for pna, clones in ((False, 1), (True, 0)):
        switch = Switch([])
        asyncio.run(config_entries(text, pna).write(switch, fresh=True))
        pre = [
            u
            for w in switch.writes
            for u in w
            if u.entity.HasField("packet_replication_engine_entry")
        ]
        assert len(pre) == clones
        meters = [u for w in switch.writes for u in w if u.entity.HasField("meter_entry")]
        assert meters, "both targets meter their punts"
