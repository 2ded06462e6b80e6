"""What the controller does with each packet the switch sends it (a punt):
one handler per punt reason (program.PuntReason), from a table the mode
chose once (modes/).

In both modes, copies of packets the switch dropped (TIME_EXCEEDED,
FRAG_NEEDED) are answered with the NAT's own ICMP error (`Punts`). In
controller mode the NAT core decides the rest (`NatPunts`): a new flow's
first packet opens its session and waits in the writer for its entries; a
packet that raced its install goes back through the pipeline at once
(packet-out INJECT). ICMP errors, fragments and inside RSTs, which the
switch's tables cannot translate, are translated here and routed by the
switch (packet-out ROUTE); so are, on a target that cannot copy or parse
them (PNA on SWX, target.py), the TCP segments that change a session's
state and datagrams with IPv4 options. In offload mode the switch sends those to a
slow-path instance instead, so they never come here. No writes here
(writer.py), no connection (service.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NamedTuple

from finsy.proto import p4r

from quicknat.config.model import Zone
from quicknat.controller.context import ModeContext
from quicknat.controller.install_state import IN_SWITCH, Held, InstallState
from quicknat.controller.writer import SwitchWriter
from quicknat.icmp_error import translate as translate_icmp_error
from quicknat.icmp_gen import Kind, Originator
from quicknat.nat.core import Nat, Refusal, Refused
from quicknat.nat.fragments import DatagramKey, Outcome, Reassembly, Span
from quicknat.nat.session import FlowKey, Session
from quicknat.p4.constants import PacketOutMode, PuntReason
from quicknat.p4rt.entities import packet_metadata
from quicknat.p4rt.p4info import decode
from quicknat.packet import (
    ETH_HEADER,
    ICMP,
    ICMP_ECHO_REPLY,
    ICMP_ECHO_REQUEST,
    TCP,
    PacketError,
    fragment_of,
    fragment_unsafe,
    parse_flow,
    rewrite_addresses,
    rewrite_flow,
    source_routed,
    tcp_flags,
)

log = logging.getLogger("quicknat.controller")

# Copies of packets the switch dropped, to answer with the NAT's own ICMP error.
ERROR_COPIES = {
    PuntReason.TIME_EXCEEDED: Kind.TIME_EXCEEDED,
    PuntReason.FRAG_NEEDED: Kind.FRAG_NEEDED,
}
# Refusals answered with destination unreachable code 13 (RFC 5508, out of resources).
_OUT_OF_RESOURCES = frozenset(
    {Refusal.POOL_EXHAUSTED, Refusal.QUOTA_EXCEEDED, Refusal.SESSION_LIMIT, Refusal.TABLE_FULL}
)


class Punt(NamedTuple):
    """A packet-in: the packet, where it came in, and why the switch sent it."""

    payload: bytes
    zone: Zone
    port: int
    mtu: int  # FRAG_NEEDED: the egress MTU the packet was over
    reason: PuntReason


class Punts:
    """Packet-ins decoded and handed to the handler of their reason; the
    packet-outs the handlers send. The table here answers the error copies
    only: what the switch punts in offload mode."""

    def __init__(self, context: ModeContext) -> None:
        config, p4info = context.config, context.p4info
        self.config = config  # (a run-time change sets it: Mode.apply)
        self._p4info = p4info
        self.stats = context.stats
        self._send = context.packet_out
        self.now = context.now
        self.received_at = 0.0  # the packet-in being handled arrived (self.now())
        self.icmp = Originator(config, context.stats)
        self.zone_of_port = {i.port: i.zone for i in config.interfaces}
        # Per-packet metadata, resolved once: packet-in field ids -> names, and
        # the packet-out header for each (port, mode) the controller sends with.
        self._packet_in_fields = {
            f.id: f.name for f in p4info.packet_metadata("packet_in").values()
        }
        self._packet_out_headers: dict[tuple[int, PacketOutMode], list[p4r.PacketMetadata]] = {}
        self._handlers: dict[int, Callable[[Punt], None]] = {
            PuntReason.TIME_EXCEEDED: self._on_error_copy,
            PuntReason.FRAG_NEEDED: self._on_error_copy,
        }

    def packet_in(self, packet: p4r.PacketIn) -> None:
        self.stats["packet_in"] += 1
        self.received_at = self.now()  # a new flow's latency starts here
        names = self._packet_in_fields
        meta = {
            names[m.metadata_id]: decode(m.value) for m in packet.metadata if m.metadata_id in names
        }
        port, reason = meta.get("ingress_port", -1), meta.get("reason", 0)
        handler = self._handlers.get(reason)
        if handler is None:
            self.stats[f"packet_in.ignored.{_reason_name(reason)}"] += 1
            return
        zone = self.zone_of_port.get(port)
        if zone is None:
            self.stats["packet_in.unknown_port"] += 1
            return
        handler(Punt(packet.payload, zone, port, meta.get("mtu", 0), PuntReason(reason)))

    def _on_error_copy(self, punt: Punt) -> None:
        """TIME_EXCEEDED, FRAG_NEEDED: a copy of a packet the switch dropped,
        answered with the NAT's own ICMP error (ICMP-4)."""
        self._send_icmp_error(punt.payload, punt.port, ERROR_COPIES[punt.reason], punt.mtu)

    def _send_icmp_error(self, frame: bytes, port: int, kind: Kind, mtu: int = 0) -> None:
        """The NAT's own ICMP error about a packet that arrived on `port`
        (icmp_gen.py decides, counts and rate-limits), routed by the switch."""
        error = self.icmp.error(frame, port, kind, self.now(), mtu)
        if error is not None:
            self._packet_out(error, port, PacketOutMode.ROUTE)

    def inject(self, payload: bytes, port: int) -> None:
        self._packet_out(payload, port, PacketOutMode.INJECT)

    def _packet_out(self, payload: bytes, port: int, mode: PacketOutMode) -> None:
        metadata = self._packet_out_headers.get((port, mode))
        if metadata is None:
            values = {"egress_port": 0, "ingress_port": port, "mode": mode}
            metadata = packet_metadata(self._p4info, "packet_out", values)
            self._packet_out_headers[(port, mode)] = metadata
        self._send(payload, metadata)
        self.stats["packet_out"] += 1


class NatPunts(Punts):
    """Controller mode's table: the NAT core decides every flow the switch
    punts, and the writer installs the sessions it opens."""

    def __init__(self, context: ModeContext, nat: Nat, writer: SwitchWriter[Session]) -> None:
        super().__init__(context)
        self.nat = nat
        self.writer = writer
        # The ports of fragmented datagrams (FRAGMENT packet-ins, IN-IP-8).
        self.fragments = Reassembly()
        self._handlers |= {
            PuntReason.NEW_FLOW: self._on_new_flow,
            PuntReason.NEW_FLOW_DNAT: self._on_new_flow,
            PuntReason.TCP_RST: self._on_tcp_rst,
            PuntReason.TCP_STATE: self._on_tcp_state,
            PuntReason.ICMP_ERROR: self._on_icmp_error,
            PuntReason.FRAGMENT: self._on_fragment,
            PuntReason.TCP_SEGMENT: self._on_tcp_segment,
            PuntReason.IPV4_OPTIONS: self._on_ipv4_options,
        }

    def _flow_key(self, punt: Punt) -> FlowKey | None:
        try:
            return parse_flow(punt.payload)
        except PacketError as exc:
            self.stats["packet_in.malformed"] += 1
            log.debug("malformed packet-in from port %d: %s", punt.port, exc)
            return None

    def _on_new_flow(self, punt: Punt, key: FlowKey | None = None) -> None:
        """NEW_FLOW, NEW_FLOW_DNAT: a packet the switch has no entry for. Its
        session (opened, or found: it raced its install) and its place in the
        writer decide whether it waits for a write or goes back at once."""
        key = key or self._flow_key(punt)
        if key is None:
            return
        flags = tcp_flags(punt.payload) if key.protocol == TCP else 0
        session = self._flow_session(punt.zone, key, flags, punt.payload, punt.port)
        if session is None:
            return
        if session.hairpin and session.partner is None and not self._open_hairpin(session, flags):
            return
        if key.protocol == TCP:
            self._track_tcp(session, key, flags)
        held = (punt.payload, punt.port)
        state = self.writer.state(session)
        if state is InstallState.REWRITING:
            # Its entry is being rewritten (a hairpin that just opened): after that.
            self.writer.hold(session, held)
        elif state in IN_SWITCH:
            # Punted before its entries were in place: they are now.
            self.stats["packet_in.reinjected"] += 1
            self.inject(punt.payload, punt.port)
        elif session.hairpin:
            # Its translation needs both halves' entries (the switch
            # rewrites the destination to the partner's inside host).
            self._wait_for_install(session, held, state)
        elif not self._routable_now(punt.payload):
            self._wait_for_install(session, held, state)
        else:
            self._route_before_install(session, key, punt, state)

    def _routable_now(self, frame: bytes) -> bool:
        """Whether the switch can route this packet translated without an
        error of its own: an error (time exceeded, fragmentation needed)
        must quote the packet as it arrived (RFC 5508 sec. 3, RFC 1191), so
        one with TTL 1, or bigger than the smallest MTU of the links, goes
        the way a packet of an installed session goes."""
        ip = ETH_HEADER
        length = int.from_bytes(frame[ip + 2 : ip + 4], "big")
        smallest_mtu = min(i.mtu for i in self.config.interfaces)
        return frame[ip + 8] > 1 and length <= smallest_mtu

    def _wait_for_install(self, session: Session, held: Held, state: InstallState | None) -> None:
        """The packet goes back through the pipeline once the session's
        entries are in (writer.Outcomes.installed: INJECT)."""
        if state in (InstallState.QUEUED, InstallState.INSTALLING):
            self.stats["packet_in.install_in_flight"] += 1
            self.writer.hold(session, held)
        else:  # new, or revived while its DELETE is out (sent after it)
            self.writer.queue(session, held, since=self.received_at)

    def _route_before_install(
        self, session: Session, key: FlowKey, punt: Punt, state: InstallState | None
    ) -> None:
        """A packet of a session whose entries are not in the switch yet
        (new, queued, being written, or revived while its DELETE is out):
        translated here and routed by the switch now, not after the write.
        The write's round trip was most of a first packet's delay (0.5 ms
        of Python gRPC a Write, docs/benchmarks.md); the entries still go in
        for the flow's next packets, and those punted before they are in
        come here in their order and leave in it. A switch that refuses the
        write (its table full) has then let one packet through for a flow
        it takes no more of, as a flow ageing out lets its last through."""
        if state in (InstallState.QUEUED, InstallState.INSTALLING):
            self.stats["packet_in.install_in_flight"] += 1
        else:
            self.writer.queue(session, since=self.received_at)
        self._route_translated(session, key, punt.payload, punt.port)
        if state is None:
            self.writer.latency.first_packet.observe(self.now() - self.received_at)

    def _on_tcp_rst(self, punt: Punt) -> None:
        """TCP_RST: an inside RST, routed without a lookup (_route_rst), or,
        with no session to route it by, a new flow (which opens none)."""
        key = self._flow_key(punt)
        if key is not None and not self._route_rst(punt.payload, key, punt.port):
            self._on_new_flow(punt, key)

    def _flow_session(
        self, zone: Zone, key: FlowKey, flags: int, payload: bytes, port: int
    ) -> Session | None:
        """The session of a punted packet's flow, opened if need be; None when
        the flow is refused (counted, and answered with code 13 when out of
        resources and the configuration says so, RFC 5508)."""
        if self.nat.session_for(key) is None and self.writer.free_slots() <= 0:
            # RES-4: the switch's tables are full; refused as any flow out of
            # resources, before a port is taken or a write tried
            self.writer.table_full()
            self.table_full([(payload, port)])
            return None
        try:
            return self.nat.new_flow(zone, key, self.now(), flags)
        except Refused as exc:
            self.stats[f"refused.{exc.reason.name.lower()}"] += 1
            if exc.reason in _OUT_OF_RESOURCES and self.config.icmp.unreachable_on_exhaustion:
                self._send_icmp_error(payload, port, Kind.PROHIBITED)
            return None

    def _open_hairpin(self, session: Session, tcp_flags: int = 0) -> bool:
        """The second half of a hairpinned flow (Nat.open_hairpin). On success both
        sessions' in2out entries get each other's inside host as destination; on a
        refusal the packet is dropped and the session is installed with
        hairpin_pending, so its next packets come back here and it ages."""
        try:
            partner = self.nat.open_hairpin(session, self.now(), tcp_flags)
        except Refused as exc:
            self.stats[f"refused.hairpin.{exc.reason.name.lower()}"] += 1
            self._install_if_out(session)
            return False
        self.stats["hairpin.opened"] += 1
        for s in (session, partner):
            if self.writer.in_switch(s):
                self.writer.want_rewrite(s)
            else:  # (an insert in flight sees the stale action when it returns)
                self._install_if_out(s)
        return True

    def _install_if_out(self, session: Session) -> None:
        """Install a session that has no entries and none on their way (or
        only a DELETE, after which it is installed again)."""
        if self.writer.state(session) in (None, InstallState.DELETING):
            self.writer.queue(session)

    def _on_icmp_error(self, punt: Punt) -> None:
        """ICMP_ERROR: translate an ICMP error for one of our sessions (the
        tables cannot match its quoted packet) and have the switch route it."""
        payload, zone, port = punt.payload, punt.zone, punt.port
        try:
            translated = translate_icmp_error(payload, zone, self.nat.session_for)
        except PacketError as exc:
            self.stats["icmp_error.malformed"] += 1
            log.debug("malformed ICMP error from port %d: %s", port, exc)
            return
        if translated is None:
            self.stats["icmp_error.no_session"] += 1
            return
        self.stats["icmp_error.translated"] += 1
        self._packet_out(translated, port, PacketOutMode.ROUTE)

    def _on_fragment(self, punt: Punt) -> None:
        """FRAGMENT, RFC 4787 REQ-14 (IN-IP-8): the switch cannot keep a datagram's ports,
        so it sends every fragment that needs NAT here. The first is translated
        as a packet of its flow (which it may open), the later ones with its
        ports (nat/fragments.py); the switch routes them (ROUTE). Overlaps,
        tiny first fragments and datagrams past 65,535 bytes are dropped
        (IN-IP-9, `fragment.overlap`)."""
        payload, port = punt.payload, punt.port
        now = self.now()
        try:
            fragment = fragment_of(payload)
            if fragment is None:
                raise PacketError("not a fragment")
            datagram = DatagramKey(fragment.src, fragment.dst, fragment.protocol, fragment.ident)
            unsafe = fragment_unsafe(payload, fragment)
            key = parse_flow(payload) if fragment.first and not unsafe else None
        except PacketError as exc:
            self.stats["fragment.malformed"] += 1
            log.debug("malformed fragment from port %d: %s", port, exc)
            return
        if unsafe:
            self.stats["fragment.overlap"] += 1
            return
        span = Span(fragment.offset, fragment.offset + fragment.length, fragment.last)
        if key is None:
            ports = self.fragments.later(datagram, span, payload, now)
            self._count_fragments_dropped()
            if isinstance(ports, Outcome):
                self.stats[f"fragment.{ports.name.lower()}"] += 1
                return
            self._route_later_fragment(payload, datagram, ports, port)
            return
        # recorded before it is translated: a duplicate or an overlap is not
        released = self.fragments.first(datagram, span, (key.sport, key.dport), now)
        self._count_fragments_dropped()
        if isinstance(released, Outcome):
            self.stats[f"fragment.{released.name.lower()}"] += 1
            return
        self._route_own_packet(punt, key, "fragment")
        # (refused: they find no session, and are counted so)
        for held in released:
            self._route_later_fragment(held, datagram, (key.sport, key.dport), port)

    def _route_own_packet(self, punt: Punt, key: FlowKey, what: str) -> bool:
        """A packet of `key`'s flow that the switch cannot translate (a first
        fragment, a datagram with options): its session, opened if need be
        and installed for the flow's other packets, translates it here and
        the switch routes it. False when it is refused or dropped (counted
        under `what`)."""
        payload, port = punt.payload, punt.port
        flags = tcp_flags(payload) if key.protocol == TCP else 0
        session = self._flow_session(punt.zone, key, flags, payload, port)
        if session is None:
            return False
        if session.hairpin:  # its second half would need this packet again
            self.stats[f"{what}.hairpin"] += 1
            return False
        if key.protocol == TCP:
            self._track_tcp(session, key, flags)
        self._install_if_out(session)  # for the flow's other packets
        self.stats[f"{what}.translated"] += 1
        self._route_translated(session, key, payload, port)
        return True

    def _route_translated(self, session: Session, key: FlowKey, payload: bytes, port: int) -> None:
        """The packet of `key`'s direction, translated here by its session,
        for the switch to route (packet-out ROUTE: no NAT lookup there)."""
        rewrite = session.in2out_rewrite if key == session.in2out else session.out2in_rewrite
        assert rewrite is not None
        self._packet_out(rewrite_flow(payload, rewrite), port, PacketOutMode.ROUTE)

    def _on_ipv4_options(self, punt: Punt) -> None:
        """IPV4_OPTIONS: a datagram with options that needs NAT, from a target
        whose parser does not walk them (PNA). Its options are checked as
        swpath checks them (IN-IP-4: a source route is dropped, a malformed
        list too); then it is what it would have been without them: a
        fragment, an ICMP error, or a packet of a flow (opened if need be),
        translated here and routed by the switch."""
        payload = punt.payload
        try:
            routed = source_routed(payload)
            fragment = fragment_of(payload)
            l4 = ETH_HEADER + (payload[ETH_HEADER] & 0x0F) * 4
            icmp_error = (
                fragment is None
                and payload[ETH_HEADER + 9] == ICMP
                and len(payload) > l4
                and payload[l4] not in (ICMP_ECHO_REPLY, ICMP_ECHO_REQUEST)
            )
            key = None if fragment is not None or icmp_error else parse_flow(payload)
        except PacketError as exc:
            self.stats["ipv4_options.malformed"] += 1
            log.debug("malformed datagram with options from port %d: %s", punt.port, exc)
            return
        if routed:
            self.stats["ipv4_options.source_route"] += 1
            return
        if fragment is not None:
            self._on_fragment(punt)
        elif icmp_error:
            self._on_icmp_error(punt)
        else:
            assert key is not None
            self._route_own_packet(punt, key, "ipv4_options")

    def _on_tcp_segment(self, punt: Punt) -> None:
        """TCP_SEGMENT: a SYN, FIN or RST of a session the switch holds, sent up
        instead of forwarded by a target that cannot copy it: tracked (RFC
        7857 sec. 2.2), translated with its session's rewrite and routed."""
        key = self._flow_key(punt)
        if key is None:
            return
        session = self.nat.session_for(key)
        if session is None:
            self.stats["tcp_segment.no_session"] += 1
            return
        rewrite = session.in2out_rewrite if key == session.in2out else session.out2in_rewrite
        if rewrite is None:  # a hairpin half waiting for its peer
            self.stats["tcp_segment.no_session"] += 1
            return
        self._track_tcp(session, key, tcp_flags(punt.payload))
        self.stats["tcp_segment.routed"] += 1
        self._packet_out(rewrite_flow(punt.payload, rewrite), punt.port, PacketOutMode.ROUTE)

    def _route_later_fragment(
        self, payload: bytes, datagram: DatagramKey, ports: tuple[int, int], port: int
    ) -> None:
        key = FlowKey(datagram.protocol, datagram.src, datagram.dst, *ports)
        session = self.nat.session_for(key)
        if session is None or session.hairpin:
            self.stats["fragment.no_session"] += 1
            return
        rewrite = session.in2out_rewrite if key == session.in2out else session.out2in_rewrite
        assert rewrite is not None
        self.stats["fragment.translated"] += 1
        self._packet_out(rewrite_addresses(payload, rewrite), port, PacketOutMode.ROUTE)

    def _count_fragments_dropped(self) -> None:
        """The held fragments the reassembly dropped: timed out, or of a
        datagram that overlapped."""
        fragments = self.fragments
        if fragments.timed_out:
            self.stats["fragment.timed_out"] += fragments.timed_out
            fragments.timed_out = 0
        if fragments.overlapped:
            self.stats["fragment.overlap"] += fragments.overlapped
            fragments.overlapped = 0

    def _route_rst(self, payload: bytes, key: FlowKey, port: int) -> bool:
        """An inside RST the switch did not look up, since a hit would restart
        its entry's idle timer (RFC 7857 sec. 2.2: an outbound RST does not
        refresh): tracked (the session turns transitory), translated with its
        session's rewrite and routed by the switch. That holds for a session
        whose idle timeout fired and whose DELETE is on its way too: any other
        packet would revive it (SwitchWriter.queue), a RST must not. False when it
        has no session with a rewrite: then it is handled as a new flow (which
        opens none for a RST, Nat.new_flow)."""
        session = self.nat.session_for(key)
        if session is None or key != session.in2out:
            return False
        if self.writer.state(session) not in (*IN_SWITCH, InstallState.DELETING):
            return False
        rewrite = session.in2out_rewrite
        if rewrite is None:  # a hairpin half waiting for its peer
            return False
        try:
            translated = rewrite_flow(payload, rewrite)
        except PacketError:
            self.stats["packet_in.malformed"] += 1
            return True
        self._track_tcp(session, key, tcp_flags(payload))
        self.stats["tcp_rst.routed"] += 1
        self._packet_out(translated, port, PacketOutMode.ROUTE)
        return True

    def _on_tcp_state(self, punt: Punt) -> None:
        """TCP_STATE: a copy of a SYN, FIN or RST that the switch translated."""
        key = self._flow_key(punt)
        if key is None:
            return
        session = self.nat.session_for(key)
        if session is None:
            self.stats["tcp_state.no_session"] += 1
            return
        self.stats["tcp_state.segments"] += 1
        self._track_tcp(session, key, tcp_flags(punt.payload))

    def _track_tcp(self, session: Session, key: FlowKey, flags: int) -> None:
        for changed in self.nat.tcp_segment(session, key, flags):
            self.writer.want_rewrite(changed)

    def table_full(self, packets: list[Held]) -> None:
        """A flow refused for a full table (refused.table_full), as any flow
        out of resources: code 13 to its sender if the configuration says so
        (RFC 5508)."""
        self.stats["refused.table_full"] += 1
        if packets and self.config.icmp.unreachable_on_exhaustion:
            payload, port = packets[0]
            self._send_icmp_error(payload, port, Kind.PROHIBITED)


def _reason_name(reason: int) -> str:
    try:
        return PuntReason(reason).name.lower()
    except ValueError:
        return f"reason_{reason}"
