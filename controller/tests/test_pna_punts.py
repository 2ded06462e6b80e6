"""The punts of a target that can neither copy a packet nor walk IPv4 options
(the PNA build on quicknat-swx, target.swx): TCP segments that change a
session's state come up instead of being copied (TCP_SEGMENT), datagrams
with options come up whole (IPV4_OPTIONS); the controller does what BMv2's
pipeline does with them and routes them (packet-out ROUTE). The switch is a
stub, as in test_controller_expiry.py; the same through quicknat-swx is PTF's
(`make ptf TARGET=swx`)."""

from __future__ import annotations

import asyncio

from quicknat.p4.constants import PacketOutMode, PuntReason
from quicknat.p4rt.p4info import decode
from scapy.layers.inet import IP, TCP, UDP, IPOption_LSRR, IPOption_RR
from scapy.layers.l2 import Ether
from stub_controller import INSERT, Run, frame, kinds

MODIFY = 2  # p4r.Update.MODIFY
EXTERNAL = "203.0.113.1"  # the pool's one address (snat_pool_one_port)


def mode_of(run: Run, i: int = -1) -> int:
    names = {f.id: f.name for f in run.pipeline.p4info.packet_metadata("packet_out").values()}
    return {names[m.metadata_id]: decode(m.value) for m in run.switch.sent_metadata[i]}["mode"]


def with_options(options: list[object] | bytes, l4: UDP | TCP | None = None) -> bytes:
    return bytes(
        Ether(src="02:00:00:00:01:10", dst="02:00:00:00:00:01")
        / IP(src="10.0.0.10", dst="198.51.100.9", options=options)
        / (l4 if l4 is not None else UDP(sport=5000, dport=53))
    )


def test_the_swx_build_writes_no_clone_and_the_packets_come_up_whole() -> None:
    run = Run("swx")
    assert not run.controller.target.clone_sessions
    assert run.controller.target.name == "swx"


def test_a_datagram_with_options_opens_its_flow_and_is_routed_translated() -> None:
    """IN-IP-4: options other than a source route are carried unchanged; the
    datagram opens its session (installed for the flow's other packets) and
    leaves with the external address and port."""

    async def scenario() -> None:
        run = Run("swx")
        run.controller.mode.writer.online()
        run.serving = asyncio.ensure_future(run.controller._serve(run.stop))
        sent = with_options([IPOption_RR(routers=["0.0.0.0"])])
        run.packet_in(PuntReason.IPV4_OPTIONS, sent)
        await run.settle()
        (install,) = run.switch.writes
        assert kinds(install) == [INSERT, INSERT]
        (out,) = [Ether(p) for p in run.switch.injected]
        assert mode_of(run) == PacketOutMode.ROUTE
        assert (out[IP].src, out[UDP].sport) == (EXTERNAL, 2000)
        assert bytes(out)[34:42] == sent[34:42]  # the record route option, as it came
        # the checksums, as a receiver would compute them
        recomputed = Ether(bytes(out))
        del recomputed[IP].chksum, recomputed[UDP].chksum
        recomputed = Ether(bytes(recomputed))
        assert (out[IP].chksum, out[UDP].chksum) == (recomputed[IP].chksum, recomputed[UDP].chksum)
        assert run.counters().get("ipv4_options.translated") == 1
        await run.close()

    asyncio.run(scenario())


def test_a_source_route_and_a_malformed_option_list_are_dropped_and_counted() -> None:
    async def scenario() -> None:
        run = Run("swx")
        run.controller.mode.writer.online()
        run.serving = asyncio.ensure_future(run.controller._serve(run.stop))
        lsrr = with_options([IPOption_LSRR(routers=["192.0.2.1"])])
        run.packet_in(PuntReason.IPV4_OPTIONS, lsrr)
        # an option of length 1 (below the 2 RFC 791 allows), then padding
        run.packet_in(PuntReason.IPV4_OPTIONS, with_options(b"\x07\x01\x00\x00"))
        await run.settle()
        assert run.switch.writes == [] and run.switch.injected == []
        assert list(run.controller.mode.nat.sessions()) == []
        assert run.counters().get("ipv4_options.source_route") == 1
        assert run.counters().get("ipv4_options.malformed") == 1
        await run.close()

    asyncio.run(scenario())


def test_tcp_segments_are_tracked_translated_and_routed() -> None:
    """RFC 7857 sec. 2.2: the SYN/ACK from outside moves the session to
    established (its ageing entry is rewritten with the established timeout);
    the segment itself leaves translated toward the inside host."""

    async def scenario() -> None:
        run = Run("swx")
        run.frame = frame("10.0.0.10", TCP(sport=40000, dport=443, flags="S"))
        install = await run.first_flow()
        transitory = install[0].entity.table_entry.idle_timeout_ns
        (session,) = run.controller.mode.nat.sessions()
        synack = bytes(
            Ether(src="02:00:00:00:02:fe", dst="02:00:00:00:00:02")
            / IP(src="198.51.100.9", dst=EXTERNAL)
            / TCP(sport=443, dport=session.external.port, flags="SA")
        )
        run.packet_in(PuntReason.TCP_SEGMENT, synack, port=2)
        run.packet_in(
            PuntReason.TCP_SEGMENT, frame("10.0.0.10", TCP(sport=40000, dport=443, flags="A"))
        )
        await run.settle()
        out = Ether(run.switch.injected[1])
        assert mode_of(run, 1) == PacketOutMode.ROUTE
        assert (out[IP].dst, out[TCP].dport, out[TCP].flags) == ("10.0.0.10", 40000, "SA")
        assert run.counters().get("tcp_segment.routed") == 2
        modify = run.switch.writes[-1]
        assert kinds(modify) == [MODIFY]
        assert modify[0].entity.table_entry.idle_timeout_ns > transitory
        await run.close()

    asyncio.run(scenario())


def test_a_tcp_segment_of_no_session_is_dropped_and_counted() -> None:
    async def scenario() -> None:
        run = Run("swx")
        run.controller.mode.writer.online()
        run.serving = asyncio.ensure_future(run.controller._serve(run.stop))
        run.packet_in(PuntReason.TCP_SEGMENT, frame("10.0.0.10", TCP(flags="F")))
        await run.settle()
        assert run.switch.injected == [] and run.switch.writes == []
        assert run.counters().get("tcp_segment.no_session") == 1
        await run.close()

    asyncio.run(scenario())
