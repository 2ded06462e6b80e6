"""An idle timeout racing a packet of the same flow, in the controller's miss
loop. The switch is a stub here because the race needs a DELETE held in flight
at will; expiry through a real switch is PTF's (test_lifecycle, test_rfc)."""

from __future__ import annotations

import asyncio
import socket

from quicknat.controller.install_state import InstallState
from quicknat.controller.status import SessionQuery
from quicknat.ipfix import parse_ipfix
from quicknat.p4.constants import PuntReason
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from stub_controller import DELETE, INSERT, Run, frame, kinds


def test_packet_during_the_expiry_delete_revives_the_session_after_it() -> None:
    async def scenario() -> None:
        run = Run()
        install = await run.first_flow()
        (session,) = run.controller.mode.nat.sessions()
        external = session.external

        run.switch.hold = asyncio.Event()
        run.idle_timeout(install[0].entity.table_entry)  # the in2out entry aged
        await run.settle()
        assert kinds(run.switch.writes[-1]) == [DELETE, DELETE]
        run.packet_in()  # the flow again, while the DELETE is out
        await run.settle()
        assert len(run.switch.writes) == 2, "an INSERT went out before the DELETE returned"

        hold, run.switch.hold = run.switch.hold, None
        hold.set()
        await run.settle()
        assert kinds(run.switch.writes[-1]) == [INSERT, INSERT]
        assert len(run.switch.injected) == 2  # the reviving packet, translated
        assert list(run.controller.mode.nat.sessions()) == [session]
        assert run.controller.mode.writer.state(session) is InstallState.INSTALLED
        assert session.external == external
        assert run.counters().get("sessions_revived") == 1
        assert run.counters().get("sessions_expired", 0) == 0
        assert run.controller.stats_dict()["installed"] == 1
        # pool use, in swpath's form (sp_live checks swpath's): one UDP port of one
        assert run.controller.stats_dict()["pools"] == [
            {"name": "public", "ports": 1, "in_use": {"tcp": 0, "udp": 1, "icmp": 0}}
        ]
        await run.close()

    asyncio.run(scenario())


def test_rst_during_the_expiry_delete_is_routed_and_does_not_revive() -> None:
    """RFC 7857 sec. 2.2: a RST does not refresh. One that meets its session's
    DELETE in flight is translated and sent as any RST of a session, and the
    session still goes; a RST after that opens no session."""

    async def scenario() -> None:
        run = Run()
        run.frame = frame("10.0.0.10", TCP(sport=40000, dport=443, flags="S"))
        install = await run.first_flow()
        (session,) = run.controller.mode.nat.sessions()
        rst = frame("10.0.0.10", TCP(sport=40000, dport=443, flags="R"))

        run.switch.hold = asyncio.Event()
        run.idle_timeout(install[0].entity.table_entry)
        await run.settle()
        run.packet_in(PuntReason.TCP_RST, rst)  # while the DELETE is out
        await run.settle()
        assert len(run.switch.injected) == 2
        out = Ether(run.switch.injected[-1])
        assert (out[IP].src, out[TCP].sport) == ("203.0.113.1", session.external.port)
        assert out[TCP].flags == "R"

        hold, run.switch.hold = run.switch.hold, None
        hold.set()
        await run.settle()
        assert len(run.switch.writes) == 2, "the RST revived the session"
        assert list(run.controller.mode.nat.sessions()) == []
        assert run.counters().get("sessions_expired") == 1
        assert run.counters().get("sessions_revived", 0) == 0

        run.packet_in(PuntReason.TCP_RST, rst)  # no session now: none opens
        await run.settle()
        assert list(run.controller.mode.nat.sessions()) == [] and len(run.switch.writes) == 2
        assert run.counters().get("refused.rst_no_session") == 1
        await run.close()

    asyncio.run(scenario())


def test_idle_session_is_forgotten_and_its_port_reused() -> None:
    async def scenario() -> None:
        run = Run()
        install = await run.first_flow()
        run.idle_timeout(install[0].entity.table_entry)
        await run.settle()
        assert kinds(run.switch.writes[-1]) == [DELETE, DELETE]
        assert list(run.controller.mode.nat.sessions()) == []
        assert run.counters().get("sessions_expired") == 1
        assert run.controller.stats_dict()["installed"] == 0
        # The pool has one port: a new flow can have it only if it came back.
        run.frame = frame("10.0.0.11")
        run.packet_in()
        await run.settle()
        assert kinds(run.switch.writes[-1]) == [INSERT, INSERT]
        (session,) = run.controller.mode.nat.sessions()
        assert session.external.port == 2000
        await run.close()

    asyncio.run(scenario())


def test_an_operator_delete_removes_the_entries_and_the_session() -> None:
    """`quicknat sessions delete`: the selected session's entries go, then the
    session (its port rests, as after an expiry); a packet during the DELETE
    does not revive it, and the flow's next packet opens a new session."""

    async def scenario() -> None:
        run = Run()
        await run.first_flow()
        run.switch.hold = asyncio.Event()
        query = SessionQuery.parse(["delete", "src", "10.0.0.99"])
        assert await run.controller.delete_sessions(query) == 0
        query = SessionQuery.parse(["delete", "src", "10.0.0.10", "port", "53"])
        assert await run.controller.delete_sessions(query) == 1
        await run.settle()
        assert kinds(run.switch.writes[-1]) == [DELETE, DELETE]
        run.packet_in()  # the flow again, while the DELETE is out
        await run.settle()
        hold, run.switch.hold = run.switch.hold, None
        hold.set()
        await run.settle()
        assert list(run.controller.mode.nat.sessions()) == []
        assert run.counters().get("sessions_deleted") == 1
        assert run.counters().get("sessions_revived", 0) == 0
        assert run.controller.stats_dict()["installed"] == 0
        # the flow's next packet opens a new session (the pool's one port,
        # resting, is the longest-rested there is: MAP-8)
        run.packet_in()
        await run.settle()
        assert kinds(run.switch.writes[-1]) == [INSERT, INSERT]
        (session,) = run.controller.mode.nat.sessions()
        assert session.id != 1
        await run.close()

    asyncio.run(scenario())


def test_every_counter_exists_from_start_at_zero() -> None:
    """A monitoring system's rate needs the counter before its first event."""
    counters = Run().controller.stats_dict()["counters"]
    assert isinstance(counters, dict)
    for name in (
        "packet_in",
        "refused.session_limit",
        "refused.hairpin.filtered",
        "icmp_gen.sent.prohibited",
        "fragment.over_limit",
        "fragment.translated",
        "sessions_expired",
        "tcp_segment.routed",
        "ipv4_options.source_route",
    ):
        assert counters[name] == 0, name


def test_controller_mode_exports_the_flow_s_events_and_flushes_on_stop() -> None:
    """Controller mode wires the NAT core's session and mapping events to the
    IPFIX exporter ([logging] ipfix_sessions) and sends what waits when it
    stops (the flush task runs meanwhile)."""
    collector = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    collector.bind(("127.0.0.1", 0))
    collector.settimeout(2)
    host, port = collector.getsockname()

    async def scenario() -> None:
        run = Run(extra=f'[logging]\nipfix_collector = "{host}:{port}"\nipfix_sessions = true\n')
        mode = run.controller.mode
        mode.start()
        await run.first_flow()
        await mode.stop()
        message = parse_ipfix(collector.recv(2048), {})
        assert sorted(r["230"] for r in message.records) == [4, 8]  # session, BIB create
        assert message.domain == 1
        await run.close()

    try:
        asyncio.run(scenario())
    finally:
        collector.close()
