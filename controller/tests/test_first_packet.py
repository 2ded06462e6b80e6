"""A new flow's first packets in controller mode (punts.py,
_route_before_install): translated by the controller and routed by the switch
at once, not after the session's write; the exceptions that wait for the
write (TTL 1, over the smallest MTU: the switch's error must quote the packet
as it arrived); an operator's delete of a session whose write is out.
Through real switches: PTF's scenarios."""

from __future__ import annotations

import asyncio

from quicknat.controller.status import SessionQuery
from quicknat.p4.constants import PacketOutMode, PuntReason
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from stub_controller import DELETE, INSERT, Run, frame, kinds

MODIFY = 2  # p4r.Update.MODIFY

POOL = "203.0.113.1"  # snat_pool_one_port's address


def modes(run: Run) -> list[PacketOutMode]:
    """Each packet-out's mode, in the order sent."""
    field = run.pipeline.p4info.packet_metadata("packet_out")["mode"].id
    return [
        PacketOutMode(int.from_bytes(m.value, "big"))
        for sent in run.switch.sent_metadata
        for m in sent
        if m.metadata_id == field
    ]


async def started(run: Run) -> None:
    """The miss loop running, the switch holding every write until released."""
    run.controller.mode.writer.online()
    run.serving = asyncio.ensure_future(run.controller._serve(run.stop))
    run.switch.hold = asyncio.Event()


async def release(run: Run) -> None:
    hold, run.switch.hold = run.switch.hold, None
    assert hold is not None
    hold.set()
    await run.settle()


def test_first_packets_leave_translated_in_order_while_the_write_is_out() -> None:
    async def scenario() -> None:
        run = Run()
        await started(run)
        run.packet_in()
        run.packet_in()  # the flow's second packet, punted before its entries
        await run.settle()
        assert [IP(f[14:]).src for f in run.switch.injected] == [POOL, POOL]
        assert modes(run) == [PacketOutMode.ROUTE, PacketOutMode.ROUTE]
        (install,) = run.switch.writes  # one session, written once
        assert kinds(install) == [INSERT, INSERT]
        assert run.counters()["packet_in.install_in_flight"] == 1
        await release(run)
        assert len(run.switch.injected) == 2  # nothing sent again after the write
        assert run.counters()["sessions_installed"] == 1
        await run.close()

    asyncio.run(scenario())


def test_ttl_one_and_over_the_mtu_wait_for_the_install_untranslated() -> None:
    """Each goes back through the pipeline as it arrived once its session's
    entries are in (INJECT), so the switch's own error quotes it."""
    mac = {"src": "02:00:00:00:01:10", "dst": "02:00:00:00:00:01"}
    ttl_one = bytes(
        Ether(**mac) / IP(src="10.0.0.10", dst="198.51.100.9", ttl=1) / UDP(sport=5000, dport=53)
    )
    big = bytes(  # 1,528 bytes of IPv4 over links of 1,500
        Ether(**mac)
        / IP(src="10.0.0.20", dst="198.51.100.9")
        / UDP(sport=5000, dport=53)
        / (b"x" * 1500)
    )
    for payload in (ttl_one, big):

        async def scenario(payload: bytes = payload) -> None:
            run = Run()
            await started(run)
            run.packet_in(payload=payload)
            await run.settle()
            assert run.switch.injected == []  # waits for its write
            await release(run)
            assert run.switch.injected == [payload]
            assert modes(run) == [PacketOutMode.INJECT]
            await run.close()

        asyncio.run(scenario())


def test_an_operator_flush_deletes_a_session_whose_insert_is_out() -> None:
    """Its first packet left before the write; `sessions flush` waits for
    the INSERT's answer, then deletes the entries and counts the session."""

    async def scenario() -> None:
        run = Run()
        await started(run)
        run.packet_in()
        await run.settle()
        flush = asyncio.ensure_future(
            run.controller.mode.delete_sessions(SessionQuery.parse(["flush"]))
        )
        await asyncio.sleep(0.01)
        assert not flush.done()  # waiting for the INSERT
        await release(run)
        assert await asyncio.wait_for(flush, 2) == 1
        await run.settle()
        assert [kinds(w) for w in run.switch.writes] == [[INSERT, INSERT], [DELETE, DELETE]]
        assert run.counters()["sessions_deleted"] == 1
        await run.close()

    asyncio.run(scenario())


def test_a_phase_change_during_the_insert_is_written_after_it() -> None:
    """The SYN leaves before its write, so the SYN/ACK can come back while
    the INSERT (with the transitory timeout) is still out. The session is
    established then (RFC 7857 sec. 2.2); once the INSERT is answered its
    entry is MODIFYed to the established timeout, not left transitory."""

    async def scenario() -> None:
        run = Run("swx")
        await started(run)
        run.packet_in(payload=frame("10.0.0.10", TCP(sport=40000, dport=443, flags="S")))
        await run.settle()
        (install,) = run.switch.writes
        transitory = install[0].entity.table_entry.idle_timeout_ns
        (session,) = run.controller.mode.nat.sessions()
        synack = bytes(
            Ether(src="02:00:00:00:02:fe", dst="02:00:00:00:00:02")
            / IP(src="198.51.100.9", dst=POOL)
            / TCP(sport=443, dport=session.external.port, flags="SA")
        )
        run.packet_in(PuntReason.TCP_SEGMENT, synack, port=2)
        await run.settle()
        assert len(run.switch.writes) == 1  # the INSERT still out
        await release(run)
        modify = run.switch.writes[-1]
        assert kinds(modify) == [MODIFY]
        assert modify[0].entity.table_entry.idle_timeout_ns > transitory
        await run.close()

    asyncio.run(scenario())
