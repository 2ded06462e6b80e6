"""quicknat-swx through a P4Runtime client nobody here wrote: finsy (PyPI)
connects, pushes the PNA build, reads the P4Info back, writes table entries
and reads them and a counter back, and is told what the target does not do.
The switch runs on net_null ports (no packets), as root."""

from __future__ import annotations

import asyncio
from pathlib import Path

import finsy
import pytest
from conftest import Switch, requires_switch
from lab.swx import telemetry
from quicknat.p4rt.client import P4RuntimeClient

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
BUILD = REPO / "p4src" / "build" / "pna"
P4INFO, SPEC = BUILD / "quicknat.p4info.txtpb", BUILD / "quicknat.spec"

pytestmark = requires_switch


def entry(i: int) -> finsy.P4TableEntry:
    return finsy.P4TableEntry(
        "nat_in2out",
        match=finsy.P4TableMatch(
            ipv4_src=0x0A000000 + i, ipv4_dst=0xC6336401, ip_proto=17, l4_sport=1000, l4_dport=53
        ),
        action=finsy.P4TableAction("rewrite_src", addr=0xCB007101, port=2000 + i),
        idle_timeout_ns=60 * 10**9,
    )


def test_finsy_pushes_the_program_writes_and_reads_it_back(switch: Switch) -> None:
    async def scenario() -> None:
        options = finsy.SwitchOptions(p4info=P4INFO, p4blob=SPEC, device_id=1)
        async with finsy.Switch("swx", switch.address, options) as sw:
            # the P4Info the switch holds is the one pushed
            assert sw.p4info.tables["nat_in2out"].size == 65536
            await sw.write([+entry(i) for i in range(3)])
            await sw.write(
                [
                    +finsy.P4TableEntry(
                        "routing_v4",
                        match=finsy.P4TableMatch(ipv4_dst="198.51.100.0/24"),
                        action=finsy.P4TableAction(
                            "set_next_hop", port=2, smac=0x020000000002, dmac=0x0200000000FE
                        ),
                    )
                ]
            )
            got = [e async for e in sw.read(finsy.P4TableEntry("nat_in2out"))]
            assert sorted(e.match["ipv4_src"] for e in got) == [0x0A000000 + i for i in range(3)]
            assert {e.action.args["port"] for e in got} == {2000, 2001, 2002}
            assert all(e.idle_timeout_ns == 60 * 10**9 for e in got)
            routes = [e async for e in sw.read(finsy.P4TableEntry("routing_v4"))]
            assert routes[0].match["ipv4_dst"] == (0xC6336400, 24)
            # counters read back, every index of the array
            drops = [e async for e in sw.read(finsy.P4CounterEntry("drop_counter"))]
            assert len(drops) == sw.p4info.counters["drop_counter"].size
            # a duplicate is refused as P4Runtime says (ALREADY_EXISTS), the
            # switch keeps going
            with pytest.raises(finsy.P4ClientError) as refused:
                await sw.write([+entry(0)])
            assert "ALREADY_EXISTS" in str(refused.value)
            # in a batch, only the update that failed is said to, by its
            # index (P4Runtime sec. 12.3); the others took
            with pytest.raises(finsy.P4ClientError) as mixed:
                await sw.write([+entry(3), +entry(1), +entry(4)])
            assert list(mixed.value.details) == [1]
            assert mixed.value.details[1].canonical_code == finsy.GRPCStatusCode.ALREADY_EXISTS
            got = [e async for e in sw.read(finsy.P4TableEntry("nat_in2out"))]
            assert sorted(e.match["ipv4_src"] - 0x0A000000 for e in got) == [0, 1, 2, 3, 4]
            await sw.write([-entry(3), -entry(4)])
            # what this target has not: a packet replication engine
            with pytest.raises(finsy.P4ClientError) as unimplemented:
                await sw.write([+finsy.P4CloneSessionEntry(session_id=5, replicas=[(0, 1)])])
            assert "UNIMPLEMENTED" in str(unimplemented.value)
            # nor a table the data plane fills (a learner): refused, named
            learned = finsy.P4TableEntry(
                "nat_in2out_learned",
                match=finsy.P4TableMatch(
                    ipv4_src=0x0A000001, ipv4_dst=0x08080808, ip_proto=17, l4_sport=1, l4_dport=2
                ),
                action=finsy.P4TableAction("learned_in2out", addr=0xC6336401, port=3),
            )
            with pytest.raises(finsy.P4ClientError) as learner:
                await sw.write([+learned])
            assert "UNIMPLEMENTED" in str(learner.value)
            assert "learned by the data plane" in str(learner.value)
            await sw.write([-entry(i) for i in range(3)])
            assert [e async for e in sw.read(finsy.P4TableEntry("nat_in2out"))] == []

    asyncio.run(scenario())


def test_telemetry_lists_every_table_of_the_running_program(switch: Switch) -> None:
    """/quicknat_swx/tables: each table of the program pushed (written and
    learned), by its pipeline name (the spec's: control path and P4 name),
    with its counts, and the fast path's; /quicknat_swx/ports: the CPU port,
    each port with a device, and the drops on the way out. (A help text of
    128 bytes or more made DPDK refuse the tables command, which then
    answered null.)"""

    async def push() -> None:
        options = finsy.SwitchOptions(p4info=P4INFO, p4blob=SPEC, device_id=1)
        async with finsy.Switch("swx", switch.address, options):
            pass

    asyncio.run(push())
    tables = telemetry(switch.prefix, "/quicknat_swx/tables")
    assert isinstance(tables, dict), tables
    for name in ("core_nat_nat_in2out", "core_nat_nat_out2in", "core_routing_routing_v4"):
        assert tables[name] == {"hits": 0, "misses": 0}, (name, tables)
    for name in ("core_nat_nat_in2out_learned", "core_nat_nat_out2in_learned"):
        assert set(tables[name]) == {"hits", "misses", "learned", "learn_failed", "rearmed"}
    assert tables["fastpath"] == {"sent": 0, "handed_on": 0}, tables
    ports = telemetry(switch.prefix, "/quicknat_swx/ports")
    assert isinstance(ports, dict) and set(ports) == {"0", "1", "2", "dropped"}, ports
    assert set(ports["1"]) == {"rx_packets", "tx_packets", "tx_dropped", "truncated"}, ports
    assert set(ports["dropped"]) == {"by_program", "no_device"}, ports


def test_a_closed_clients_election_id_is_free_at_once(switch: Switch) -> None:
    """The controller's client closes its stream and waits for the switch to
    end it, so a client with the same election id can be primary right
    after: the switch refuses a duplicate id while the first is connected
    (P4Runtime sec. 5.2), and a close that did not wait lost that race now
    and then on a busy machine (a PTF scenario's write, in CI; two of two
    runs of 300 reconnects beside two busy loops on 2 vCPUs)."""

    async def reconnects() -> None:
        for _ in range(100):
            client = P4RuntimeClient(switch.address, 1, 100)
            await client.connect(timeout=5)
            assert client.primary
            await client.close()

    asyncio.run(reconnects())
