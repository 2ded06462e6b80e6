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
from quicknat.p4.constants import PuntReason
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from stub_controller import DELETE, Run, decoded, frame, kinds
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
        HeldSession(udp.in2out, udp.external, udp.out2in, 1_700_000_000_000, 300),
        HeldSession(icmp.in2out, icmp.external, icmp.out2in, 0, 300),
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


def test_a_reconnection_rewrites_an_entry_whose_modify_went_with_it() -> None:
    """The SYN/ACK made the session established and its MODIFY was out when
    the connection went: whether it landed is unknown. The recovery reads
    the entry back; held at the transitory timeout, it is MODIFYed to the
    established one (RFC 7857 sec. 2.2); held at that, nothing is written."""

    async def scenario() -> None:
        run = Run("swx")
        mode = run.controller.mode
        mode.writer.online()
        run.serving = asyncio.ensure_future(run.controller._serve(run.stop))
        run.packet_in(payload=frame("10.0.0.10", TCP(sport=40000, dport=443, flags="S")))
        await run.settle()
        (install,) = run.switch.writes
        (s,) = mode.nat.sessions()
        synack = Ether() / IP(src="198.51.100.9", dst="203.0.113.1")
        synack /= TCP(sport=443, dport=s.external.port, flags="SA")
        run.packet_in(PuntReason.TCP_SEGMENT, bytes(synack), port=2)
        await run.settle()
        modify = run.switch.writes[-1]
        assert kinds(modify) == [p4r.Update.MODIFY]
        p4info = run.pipeline.p4info
        in2out, out2in = (u.entity for u in install)
        for entry, rewritten in ((in2out, True), (modify[0].entity, False)):
            run.switch.writes.clear()
            mode.recover(held_entries(p4info, [entry], [out2in]))
            mode.writer.flush()
            await run.settle()
            assert mode.writer.in_switch(s)
            if rewritten:
                (again,) = run.switch.writes
                assert kinds(again) == [p4r.Update.MODIFY]
                timeout = again[0].entity.table_entry.idle_timeout_ns
                assert timeout == modify[0].entity.table_entry.idle_timeout_ns
            else:
                assert run.switch.writes == []
        await run.close()

    asyncio.run(scenario())
