"""The switch's NAT tables read back (quicknat/controller/recovery.py): the
one reading both modes recover from, as sessions and stray halves."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from finsy.proto import p4r
from quicknat.addr import parse_ipv4
from quicknat.controller.program import NatEntries, Pipeline
from quicknat.controller.recovery import HeldSession, held_entries
from quicknat.nat.allocator import Endpoint
from quicknat.nat.session import Session
from stub_controller import DELETE, Run, decoded, kinds
from test_writer import session

P4INFO = Pipeline.load().p4info
ENTRIES = NatEntries(P4INFO)


def entities(s: Session, created_ms: int = 0) -> tuple[p4r.Entity, p4r.Entity]:
    """The session's two entries, as a Read returns them."""
    in2out, out2in = (decoded(u).entity for u in ENTRIES.inserts(s, 300, created_ms))
    return in2out, out2in


def test_a_session_is_its_two_entries_and_a_lone_entry_is_a_half() -> None:
    udp = session(1)
    icmp = replace(session(2), protocol=1, remote_port=0)  # the identifier both ways
    lone_in, _ = entities(session(3, 5003))
    _, lone_out = entities(session(4, 5004))
    udp_in, udp_out = entities(udp, created_ms=1_700_000_000_000)
    icmp_in, icmp_out = entities(icmp)
    held = held_entries(P4INFO, [udp_in, icmp_in, lone_in], [icmp_out, lone_out, udp_out])
    assert held.sessions == (
        HeldSession(udp.in2out, udp.external, udp.out2in, 1_700_000_000_000),
        HeldSession(icmp.in2out, icmp.external, icmp.out2in, 0),
    )
    assert held.halves == (
        ("nat_in2out", session(3, 5003).in2out),
        ("nat_out2in", session(4, 5004).out2in),
    )


def test_controller_mode_adopts_what_it_allows_and_sweeps_the_rest() -> None:
    """A controller restarted against a switch that kept its sessions: the
    one it allows is adopted with its mapping and age, nothing is written
    for it; one no rule allows any more, and a stray half, are swept."""

    async def scenario() -> None:
        before = Run()
        install = await before.first_flow()
        await before.close()
        (old,) = before.controller.mode.nat.sessions()
        in2out, out2in = (u.entity for u in install)
        in2out.table_entry.metadata = (1_700_000_000_000).to_bytes(8, "big")
        unruled = replace(session(7), internal=Endpoint(parse_ipv4("10.9.0.7"), 7))
        gone_in, gone_out = entities(unruled)
        _, stray = entities(session(8, 5008))

        after = Run()
        mode = after.controller.mode
        held = held_entries(P4INFO, [in2out, gone_in], [out2in, gone_out, stray])
        mode.recover(held)
        (adopted,) = mode.nat.sessions()
        assert adopted.external == old.external and mode.writer.in_switch(adopted)
        assert after.controller.now() - adopted.created > 365 * 86400  # as its entry says
        assert after.counters()["sessions_recovered"] == 1
        mode.writer.online()
        await mode.writer.settle()
        (sweep,) = after.switch.writes
        assert kinds(sweep) == [DELETE, DELETE, DELETE]
        assert after.counters()["stale_entries_deleted"] == 3

    asyncio.run(scenario())
