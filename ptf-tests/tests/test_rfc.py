"""Behaviour applications rely on (docs/nat-behavior.md): ICMP errors, TCP
state and timeouts, fragments. The same scenarios run on both targets."""

from __future__ import annotations

import time

from base import INSIDE, OUTSIDE, QuickNatTest
from packets import (
    GATEWAY_MAC,
    HOST_MAC,
    NAT_INSIDE,
    NAT_OUTSIDE,
    PAYLOAD,
    PUBLIC_POOL,
    REMOTE_MAC,
    ROUTER_IN_MAC,
    ROUTER_OUT_MAC,
    from_inside,
    from_outside,
    tcp,
    udp,
)
from ptf.testutils import group
from scapy.layers.inet import (
    ICMP,
    IP,
    TCP,
    UDP,
    IPerror,
    IPOption_LSRR,
    IPOption_NOP,
    IPOption_Router_Alert,
    IPOption_RR,
    IPOption_SSRR,
    UDPerror,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet
from scapy.utils import checksum

UDP_TIMEOUT = 4  # configs/ptf.toml
ROUTER = "192.0.2.254"  # a router beyond the NAT that reports errors
INSIDE_ROUTER = "10.0.0.254"  # one between the NAT and the inside hosts
REMOTE = "198.51.100.10"


def quoted_ok(pkt: Packet) -> bool:
    """The quoted IPv4 header's checksum is right (checksums_ok checks the rest)."""
    inner = pkt[IPerror]
    rebuilt = IPerror(bytes(inner)[: inner.ihl * 4])
    del rebuilt.chksum
    return IPerror(bytes(rebuilt)).chksum == inner.chksum


class UdpSession(QuickNatTest):
    def open_udp(self, sport: int = 40000, dport: int = 33434) -> tuple[str, int]:
        """An outbound UDP flow from 10.0.0.10; its external address and port."""
        address, port = self.opened("10.0.0.10", REMOTE, udp(sport, dport))
        self.assertIn(address, PUBLIC_POOL)
        return address, port


# The errors a router beyond the NAT sends about a translated packet, with the
# field that must survive translation (RFC 792, RFC 1191).
ERRORS_FROM_OUTSIDE = [
    (ICMP(type=11, code=0), None),  # time exceeded in transit: traceroute
    (ICMP(type=3, code=4, nexthopmtu=1280), "nexthopmtu"),  # path MTU discovery
    (ICMP(type=12, code=0, ptr=8), "ptr"),  # parameter problem, pointing at the TTL
    (ICMP(type=3, code=3), None),  # port unreachable: traceroute's last hop
]


@group("rfc")
class IcmpErrorFromOutsideReachesTheInsideHost(UdpSession):
    """ICMP-2 (RFC 5508 sec. 4; traceroute, path MTU discovery): each kind of error
    about our translated packet (time exceeded, fragmentation needed,
    parameter problem, port unreachable) comes back with the outer destination,
    the quoted source address and port translated back, its own fields intact
    and every checksum right."""

    def runTest(self) -> None:
        ext_addr, ext_port = self.open_udp()
        sessions = self.target.sessions()
        quoted = IP(src=ext_addr, dst=REMOTE, ttl=1) / UDP(sport=ext_port, dport=33434)
        for icmp, field in ERRORS_FROM_OUTSIDE:
            error = (
                Ether(src=REMOTE_MAC, dst=ROUTER_OUT_MAC)
                / IP(src=ROUTER, dst=ext_addr, ttl=64)
                / icmp.copy()
                / bytes(quoted)
            )
            self.send(OUTSIDE, error)
            got = self.receive(INSIDE)
            what = icmp.summary()
            self.assertEqual((got.src, got.dst), (ROUTER_IN_MAC, HOST_MAC["10.0.0.10"]), what)
            self.assertEqual((got[IP].src, got[IP].dst, got[IP].ttl), (ROUTER, "10.0.0.10", 63))
            self.assertEqual((got[ICMP].type, got[ICMP].code), (icmp.type, icmp.code), what)
            if field:
                self.assertEqual(getattr(got[ICMP], field), getattr(icmp, field), what)
            self.assertEqual((got[IPerror].src, got[IPerror].dst), ("10.0.0.10", REMOTE), what)
            self.assertEqual((got[UDPerror].sport, got[UDPerror].dport), (40000, 33434), what)
            self.assertTrue(quoted_ok(got), what)
        # An error neither creates nor removes a session (RFC 5508 REQ-5).
        self.assertEqual(len(self.target.sessions()), len(sessions))


@group("rfc")
class IcmpErrorFromInsideLeavesWithTheExternalEndpoint(UdpSession):
    """An inside host's port-unreachable about a reply it got: the outer source
    and the quoted destination become the external address and port."""

    def runTest(self) -> None:
        ext_addr, ext_port = self.open_udp(40001, 5353)
        quoted = IP(src=REMOTE, dst="10.0.0.10", ttl=60) / UDP(sport=5353, dport=40001)
        error = (
            Ether(src=HOST_MAC["10.0.0.10"], dst=ROUTER_IN_MAC)
            / IP(src="10.0.0.10", dst=REMOTE)
            / ICMP(type=3, code=3)
            / bytes(quoted)
        )
        self.send(INSIDE, error)
        got = self.receive(OUTSIDE)
        self.assertEqual(got.dst, GATEWAY_MAC)
        self.assertEqual((got[IP].src, got[IP].dst), (ext_addr, REMOTE))
        self.assertEqual((got[ICMP].type, got[ICMP].code), (3, 3))
        self.assertEqual((got[IPerror].src, got[IPerror].dst), (REMOTE, ext_addr))
        self.assertEqual((got[UDPerror].sport, got[UDPerror].dport), (5353, ext_port))
        self.assertTrue(quoted_ok(got))


@group("rfc")
class IcmpErrorFromAnInsideRouterLeavesWithTheExternalEndpoint(UdpSession):
    """A router between the NAT and the host reports an error about a reply
    it could not deliver (path MTU discovery for traffic to the host, a
    traceroute to it): the error is about the host's session, not the
    router's, and leaves as the host's would, from the external address
    (the router's private address never leaves), its MTU intact."""

    def runTest(self) -> None:
        ext_addr, ext_port = self.open_udp(40002, 5353)
        sessions = self.target.sessions()
        quoted = IP(src=REMOTE, dst="10.0.0.10", ttl=60) / UDP(sport=5353, dport=40002)
        error = (
            Ether(src="02:00:00:00:01:fe", dst=ROUTER_IN_MAC)
            / IP(src=INSIDE_ROUTER, dst=REMOTE)
            / ICMP(type=3, code=4, nexthopmtu=1400)
            / bytes(quoted)
        )
        self.send(INSIDE, error)
        got = self.receive(OUTSIDE)
        self.assertEqual((got[IP].src, got[IP].dst), (ext_addr, REMOTE))
        self.assertEqual((got[ICMP].type, got[ICMP].code, got[ICMP].nexthopmtu), (3, 4, 1400))
        self.assertEqual((got[IPerror].src, got[IPerror].dst), (REMOTE, ext_addr))
        self.assertEqual((got[UDPerror].sport, got[UDPerror].dport), (5353, ext_port))
        self.assertTrue(quoted_ok(got))
        # nothing opened for the router (RFC 5508 REQ-5)
        self.assertEqual(len(self.target.sessions()), len(sessions))


@group("rfc")
class IcmpErrorForNoSessionIsDropped(QuickNatTest):
    """An error quoting a packet the NAT never sent opens nothing and goes nowhere."""

    def runTest(self) -> None:
        quoted = IP(src="203.0.113.1", dst=REMOTE) / UDP(sport=4242, dport=53)
        error = (
            Ether(src=REMOTE_MAC, dst=ROUTER_OUT_MAC)
            / IP(src=ROUTER, dst="203.0.113.1")
            / ICMP(type=3, code=1)
            / bytes(quoted)
        )
        self.send(OUTSIDE, error)
        self.expect_nothing()
        self.assertEqual(self.target.sessions(), [])


@group("rfc")
class TcpStateSetsTheTimeout(QuickNatTest):
    """RFC 5382 REQ-5 / RFC 7857 sec. 2.2: transitory (240 s) until the
    handshake, established (7,440 s) after it, transitory again after a RST;
    where the data plane ages entries itself, its entry's timeout follows."""

    def state(self) -> tuple[str, int]:
        (session,) = self.target.sessions()
        return session["tcp_state"], session["timeout_s"]

    def settles(self, state: str, timeout: int) -> None:
        held = self.target.session_timeout(timeout)
        self.target.wait_equal(f"session {state}", self.state, (state, held), 5)
        if self.target.data_plane_timeouts() is not None:  # a switch's own (a failure says it)
            self.target.wait_equal(
                f"data-plane timeout {timeout} s", self.target.data_plane_timeouts, [timeout], 5
            )

    def runTest(self) -> None:
        self.send(INSIDE, from_inside("10.0.0.10", REMOTE, tcp(40003, 443, "S")))
        out = self.receive(OUTSIDE)
        self.settles("opening", 240)
        answer = from_outside(REMOTE, out[IP].src, tcp(443, out[TCP].sport, "SA"))
        self.send(OUTSIDE, answer)
        self.assertEqual(self.receive(INSIDE)[TCP].dport, 40003)
        self.settles("established", 7440)
        self.send(INSIDE, from_inside("10.0.0.10", REMOTE, tcp(40003, 443, "R")))
        self.assertEqual(self.receive(OUTSIDE)[TCP].flags, "R")
        self.settles("reset", 240)


@group("rfc")
class TcpFinMakesTheSessionTransitory(TcpStateSetsTheTimeout):
    """RFC 7857 sec. 2.2: a FIN in either direction ends the established
    timeout; here the server closes first, then the host."""

    def runTest(self) -> None:
        self.send(INSIDE, from_inside("10.0.0.10", REMOTE, tcp(40008, 443, "S")))
        out = self.receive(OUTSIDE)
        external, port = out[IP].src, out[TCP].sport
        self.send(OUTSIDE, from_outside(REMOTE, external, tcp(443, port, "SA")))
        self.receive(INSIDE)
        self.settles("established", 7440)
        self.send(OUTSIDE, from_outside(REMOTE, external, tcp(443, port, "FA")))
        self.assertEqual(self.receive(INSIDE)[TCP].flags, "FA")
        self.settles("closing", 240)
        self.send(INSIDE, from_inside("10.0.0.10", REMOTE, tcp(40008, 443, "FA")))
        self.assertEqual(self.receive(OUTSIDE)[TCP].flags, "FA")
        self.settles("closing", 240)


TRANSITORY = 3  # the variant's tcp_transitory, so that a reset session ages in the test
SHORT_TRANSITORY = {"timeouts": {"tcp_transitory": TRANSITORY}}


@group("rfc")
class OutboundRstDoesNotRefresh(TcpStateSetsTheTimeout):
    """RFC 7857 sec. 2.2: a RST from inside is translated and passes, turns the
    session transitory, and does not keep it alive: with a RST every half
    second, the session still ages out after the transitory timeout."""

    CONFIG = SHORT_TRANSITORY

    def runTest(self) -> None:
        self.send(INSIDE, from_inside("10.0.0.10", REMOTE, tcp(40010, 443, "S")))
        out = self.receive(OUTSIDE)
        external, port = out[IP].src, out[TCP].sport
        self.send(OUTSIDE, from_outside(REMOTE, external, tcp(443, port, "SA")))
        self.receive(INSIDE)
        self.settles("established", 7440)
        rst = from_inside("10.0.0.10", REMOTE, tcp(40010, 443, "R"))
        self.send(INSIDE, rst)
        got = self.receive(OUTSIDE)
        self.assertEqual((got[IP].src, got[TCP].sport, got[TCP].flags), (external, port, "R"))
        self.assertEqual((got[IP].dst, got[TCP].dport, got[IP].ttl), (REMOTE, 443, 63))
        self.assertEqual(bytes(got[TCP].payload), PAYLOAD)
        self.settles("reset", TRANSITORY)
        (session,) = self.target.sessions()
        expired = self.target.counter("sessions_expired")
        dropped = self.target.counter("rst_no_session")
        # Every session listed on the way: a RST that crosses the expiry finds
        # no session and must not open one (RstOpensNoSession).
        seen: set[int] = set()

        def listed() -> set[int]:
            ids = {s["id"] for s in self.target.sessions()}
            seen.update(ids)
            return ids

        deadline = time.monotonic() + TRANSITORY + 15
        passed = 0
        while session["id"] in listed():
            self.assertLess(time.monotonic(), deadline, "the RSTs kept the session alive")
            self.send(INSIDE, rst)
            passed += self.arrived(OUTSIDE) is not None
            time.sleep(0.5)
        self.assertGreaterEqual(passed, 2)
        self.assertEqual(seen, {session["id"]})
        self.assertEqual(self.target.counter("sessions_expired") - expired, 1)
        # The next RST meets no session: dropped, counted, and still no session.
        self.send(INSIDE, rst)
        self.expect_nothing()
        self.target.wait_until(
            "the RST counted",
            lambda: self.target.counter("rst_no_session") > dropped,
            5,
        )
        self.assertEqual(self.target.sessions(), [])


EIF_TCP = {"filtering": {"tcp": "endpoint-independent"}}


@group("rfc")
class RstOpensNoSession(QuickNatTest):
    """A TCP RST finds its session but never opens one: not from inside (it
    would take a port for the transitory timeout, for a RST no peer can
    match), not at a DNAT rule and not through a mapping whose filtering lets
    the sender in (a spoofed RST flood would fill the host's session slots;
    RFC 6888). Each is dropped and counted; a SYN of the same flows passes."""

    CONFIG = EIF_TCP

    def runTest(self) -> None:
        dropped = self.target.counter("rst_no_session")
        self.send(INSIDE, from_inside("10.0.0.10", REMOTE, tcp(40020, 443, "R")))
        self.expect_nothing()
        self.send(INSIDE, from_inside("10.0.0.10", REMOTE, tcp(40020, 443, "RA")))
        self.expect_nothing()
        self.send(OUTSIDE, from_outside(REMOTE, "203.0.113.80", tcp(40021, 80, "R")))
        self.expect_nothing()
        self.counted("rst_no_session", dropped + 3)
        self.assertEqual(self.target.sessions(), [])
        # A mapping that lets any remote in (endpoint-independent filtering)
        self.send(INSIDE, from_inside("10.0.0.10", REMOTE, tcp(40022, 443, "S")))
        out = self.receive(OUTSIDE)
        external, port = out[IP].src, out[TCP].sport
        self.send(OUTSIDE, from_outside("198.51.100.77", external, tcp(999, port, "R")))
        self.expect_nothing()
        self.counted("rst_no_session", dropped + 4)
        self.assertEqual(len(self.target.sessions()), 1)
        # The same packets as SYNs open their sessions.
        self.send(OUTSIDE, from_outside("198.51.100.77", external, tcp(999, port, "S")))
        got = self.receive(INSIDE)
        self.assertEqual((got[IP].dst, got[TCP].dport), ("10.0.0.10", 40022))
        self.send(OUTSIDE, from_outside(REMOTE, "203.0.113.80", tcp(40021, 80, "S")))
        got = self.receive(INSIDE)
        self.assertEqual((got[IP].dst, got[TCP].dport), ("10.0.0.20", 8080))
        self.assertEqual(len(self.target.sessions()), 3)

    def counted(self, counter: str, expected: int) -> None:
        self.target.wait_until(
            f"{counter} counted", lambda: self.target.counter(counter) == expected, 5
        )


@group("rfc")
class TcpSimultaneousOpen(QuickNatTest):
    """RFC 5382 REQ-2: both sides send a SYN (no SYN-ACK first); the peer's SYN
    passes the mapping the first SYN made, and the session is established."""

    def runTest(self) -> None:
        self.send(INSIDE, from_inside("10.0.0.10", REMOTE, tcp(40004, 5000, "S")))
        out = self.receive(OUTSIDE)
        self.send(OUTSIDE, from_outside(REMOTE, out[IP].src, tcp(5000, out[TCP].sport, "S")))
        got = self.receive(INSIDE)
        self.assertEqual((got[IP].dst, got[TCP].dport, got[TCP].flags), ("10.0.0.10", 40004, "S"))
        self.target.wait_until(
            "established",
            lambda: [s.get("tcp_state") for s in self.target.sessions()] == ["established"],
            5,
        )


@group("rfc")
class UnsolicitedSynIsNotAnswered(QuickNatTest):
    """RFC 5382 REQ-4: an inbound SYN with no mapping is dropped silently."""

    def runTest(self) -> None:
        self.send(OUTSIDE, from_outside(REMOTE, "203.0.113.1", tcp(5555, 22, "S")))
        self.expect_nothing()
        self.assertEqual(self.target.sessions(), [])


class NatOriginatedError(QuickNatTest):
    def setUp(self) -> None:
        super().setUp()
        if self.target.clones_outlive_pushes:
            # BMv2 keeps its clone sessions across pipeline pushes, and each
            # controller start (--reset pushes the pipeline) adds a replica:
            # a dropped packet would be copied, and answered, once per
            # controller started before. These tests count errors, so they
            # get a switch of their own (quicknat-swx has no clones: there
            # the pushed pipeline is all the reset they need).
            self.target.stop_nat()
            try:
                self.target.restart_switch()
                self.target.start_nat(reset=True)
            except BaseException:
                # as QuickNatTest.setUp: no tearDown follows a failed setUp
                self.target.stop_nat()
                raise

    def check_error(self, got: Packet, source: str, sent: Packet, kind: tuple[int, int]) -> None:
        """An error the NAT originated: from `source`, to the sender of `sent`,
        TTL 64, quoting `sent` as it arrived (its first 548 bytes at most)."""
        self.assertEqual((got[IP].src, got[IP].dst, got[IP].ttl), (source, sent[IP].src, 64))
        self.assertEqual((got[ICMP].type, got[ICMP].code), kind)
        quoted = bytes(got[IP])[28 : got[IP].len]
        self.assertEqual(quoted, bytes(sent[IP])[:548])
        self.assertLessEqual(got[IP].len, 576)

    def counted(self, name: str, expected: int) -> None:
        self.target.wait_until(
            f"{name} == {expected}", lambda: self.target.counter(name) == expected, 5
        )


@group("rfc")
class TimeExceededFromTheNatHop(NatOriginatedError):
    """IN-IP-7, ICMP-4 (RFC 1812 sec. 5.3.1): a packet from inside that would leave with TTL 0
    gets time exceeded from the NAT's inside address, quoting the packet as it
    arrived (untranslated), both for a new flow (which gets no mapping) and for
    one with a session; so traceroute from inside shows the NAT as a hop."""

    def runTest(self) -> None:
        expired = self.target.counter("ttl_expired")
        sent = self.target.counter("icmp_time_exceeded_sent")
        probe = from_inside("10.0.0.10", REMOTE, udp(40010, 33434), ttl=1)
        self.send(INSIDE, probe)
        got = self.receive(INSIDE)
        self.assertEqual((got.src, got.dst), (ROUTER_IN_MAC, HOST_MAC["10.0.0.10"]))
        self.check_error(got, NAT_INSIDE, probe, (11, 0))
        self.assertEqual(self.target.sessions(), [])
        # The same flow with a session: the error still quotes it untranslated.
        self.send(INSIDE, from_inside("10.0.0.10", REMOTE, udp(40010, 33434)))
        self.assertIn(self.receive(OUTSIDE)[IP].src, PUBLIC_POOL)
        self.send(INSIDE, probe)
        self.check_error(self.receive(INSIDE), NAT_INSIDE, probe, (11, 0))
        # From outside to the session's mapping: from the outside address.
        (session,) = self.target.sessions()
        ext_addr, ext_port = session["external"].split(":")
        inbound = from_outside(REMOTE, ext_addr, udp(33434, int(ext_port)), ttl=1)
        self.send(OUTSIDE, inbound)
        got = self.receive(OUTSIDE)
        self.assertEqual(got.dst, GATEWAY_MAC)
        self.check_error(got, NAT_OUTSIDE, inbound, (11, 0))
        self.counted("ttl_expired", expired + 3)
        self.counted("icmp_time_exceeded_sent", sent + 3)


@group("rfc")
class NoErrorAboutAnError(NatOriginatedError):
    """ICMP-5 (RFC 1812 sec. 4.3.2.7): no error about an ICMP error (the other exclusions
    are unit-tested: test_icmp_gen.py, test_sp_packet.c); it is still dropped
    and counted."""

    def runTest(self) -> None:
        expired = self.target.counter("ttl_expired")
        quoted = IP(src=REMOTE, dst="10.0.0.10") / UDP(sport=53, dport=40011)
        self.send(
            INSIDE, from_inside("10.0.0.10", REMOTE, ICMP(type=3, code=3) / bytes(quoted), ttl=1)
        )
        self.expect_nothing()
        self.counted("ttl_expired", expired + 1)
        self.counted("icmp_error_suppressed", 1)
        self.assertEqual(self.target.counter("icmp_time_exceeded_sent"), 0)


@group("rfc")
class FragmentationNeededForDfOverTheMtu(NatOriginatedError):
    """ICMP-4 (RFC 4787 REQ-13, RFC 1191): a DF packet bigger than the egress link's MTU
    (out0: 1400) is dropped and its sender gets fragmentation needed carrying
    that MTU, quoting the packet as it arrived; without DF swpath sends it
    as fragments, in order, and a switch, which cannot, drops it
    (docs/nat-behavior.md MTU-1); a packet of exactly the MTU passes."""

    def big(self, size: int, df: bool) -> Packet:
        pkt = from_inside("10.0.0.10", REMOTE, udp(40012, 53))
        pkt[IP].flags = "DF" if df else 0
        pkt[UDP].remove_payload()
        return Ether(bytes(pkt / (b"m" * (size - 28))))

    def runTest(self) -> None:
        # The first packet of the flow already (on P4 the controller opens
        # the session and re-injects it), then a packet of the open flow.
        dropped = self.target.counter("mtu_exceeded")
        too_big = self.big(1450, True)
        for _ in range(2):
            self.send(INSIDE, too_big)
            got = self.receive(INSIDE)
            self.check_error(got, NAT_INSIDE, too_big, (3, 4))
            self.assertEqual(got[ICMP].nexthopmtu, 1400)
        self.assertEqual(len(self.target.sessions()), 1)
        self.send(INSIDE, self.big(1450, False))
        if self.target.fragments_on_output:
            # 1,430 bytes after the header: 1,376 (the most a multiple of 8
            # in 1,400), then 54 at offset 172
            frags = [self.receive(OUTSIDE) for _ in range(2)]
            self.assertEqual(
                [(p[IP].flags.MF, p[IP].frag, len(p[IP])) for p in frags],
                [(1, 0, 1396), (0, 172, 74)],
            )
            self.assertEqual(len({(p[IP].src, p[IP].id) for p in frags}), 1, "one datagram")
            self.assertIn(frags[0][IP].src, PUBLIC_POOL)
            data = b"".join(bytes(p[IP].payload)[: len(p[IP]) - 20] for p in frags)
            self.assertEqual(data[8:], b"m" * 1422)
            self.assertEqual(self.target.read_counter("fragmented"), 1)
        self.expect_nothing()
        self.send(INSIDE, self.big(1400, True))
        self.assertEqual(len(self.receive(OUTSIDE)[IP]), 1400)
        self.counted("mtu_exceeded", dropped + (2 if self.target.fragments_on_output else 3))
        self.counted("icmp_frag_needed_sent", 2)


@group("rfc")
class Ipv4OptionsTravelUnchanged(UdpSession):
    """IN-IP-4 (docs/nat-behavior.md): a packet with
    IPv4 options (router alert, record route) is translated like any other in
    both directions: the ports are found after the options, which travel byte
    for byte, and the header checksum covers them."""

    def runTest(self) -> None:
        options = [IPOption_Router_Alert(), IPOption_RR(routers=["0.0.0.0"] * 2), IPOption_NOP()]
        ext_addr, ext_port = self.open_udp(40005, 53)
        pkt = from_inside("10.0.0.10", REMOTE, udp(40005, 53))
        pkt[IP].options = options
        pkt = Ether(bytes(pkt))
        self.send(INSIDE, pkt)
        out = self.receive(OUTSIDE)
        self.assertEqual((out[IP].src, out[UDP].sport), (ext_addr, ext_port))
        self.assertEqual(out[IP].ihl, pkt[IP].ihl)
        self.assertEqual(bytes(out[IP])[20 : out[IP].ihl * 4], bytes(pkt[IP])[20 : pkt[IP].ihl * 4])
        self.assertEqual(bytes(out[UDP].payload), PAYLOAD)
        reply = from_outside(REMOTE, ext_addr, udp(53, ext_port))
        reply[IP].options = options
        reply = Ether(bytes(reply))
        self.send(OUTSIDE, reply)
        back = self.receive(INSIDE)
        self.assertEqual((back[IP].dst, back[UDP].dport), ("10.0.0.10", 40005))
        self.assertEqual(
            bytes(back[IP])[20 : back[IP].ihl * 4], bytes(reply[IP])[20 : reply[IP].ihl * 4]
        )
        self.assertEqual(bytes(back[UDP].payload), PAYLOAD)


@group("rfc")
class SourceRoutesAndBadOptionListsAreDropped(UdpSession):
    """RFC 7126 sec. 4.3/4.4, the documented rule on both targets: a loose or
    strict source route would steer the packet past the NAT's rewrite, so it
    is dropped and counted, like an option list that runs past the header;
    neither opens a session."""

    def runTest(self) -> None:
        self.open_udp(40006, 53)
        sessions = len(self.target.sessions())
        for option in (IPOption_LSRR(routers=[REMOTE]), IPOption_SSRR(routers=[REMOTE])):
            before = self.target.counter("source_route_dropped")
            pkt = from_inside("10.0.0.10", REMOTE, udp(40007, 53))
            pkt[IP].options = [option]
            self.send(INSIDE, Ether(bytes(pkt)))
            self.expect_nothing()
            self.target.wait_until(
                "source route counted",
                lambda b=before: self.target.counter("source_route_dropped") == b + 1,
                5,
            )
        # Router alert (4 bytes) whose length byte claims 48: past the header.
        pkt = from_inside("10.0.0.10", REMOTE, udp(40006, 53))
        pkt[IP].options = [IPOption_Router_Alert()]
        raw = bytearray(bytes(pkt))
        raw[14 + 20 + 1] = 48
        raw[14 + 10 : 14 + 12] = b"\0\0"
        raw[14 + 10 : 14 + 12] = checksum(bytes(raw[14 : 14 + 24])).to_bytes(2, "big")
        before = self.target.counter("malformed_dropped")
        self.send(INSIDE, Ether(bytes(raw)))
        self.expect_nothing()
        self.target.wait_until(
            "bad option list counted",
            lambda: self.target.counter("malformed_dropped") == before + 1,
            5,
        )
        self.assertEqual(len(self.target.sessions()), sessions)


@group("rfc")
class IcmpErrorsDoNotRefreshTheSession(UdpSession):
    """ICMP-3 (RFC 5508 REQ-5, RFC 7857 sec. 2.1): errors about a session, in either
    direction, keep passing but do not keep it alive: with errors every
    half second, the session still ages out after the UDP timeout."""

    def runTest(self) -> None:
        ext_addr, ext_port = self.open_udp(40009, 33434)
        inbound = (
            Ether(src=REMOTE_MAC, dst=ROUTER_OUT_MAC)
            / IP(src=ROUTER, dst=ext_addr)
            / ICMP(type=11, code=0)
            / bytes(IP(src=ext_addr, dst=REMOTE, ttl=1) / UDP(sport=ext_port, dport=33434))
        )
        outbound = (
            Ether(src=HOST_MAC["10.0.0.10"], dst=ROUTER_IN_MAC)
            / IP(src="10.0.0.10", dst=REMOTE)
            / ICMP(type=3, code=3)
            / bytes(IP(src=REMOTE, dst="10.0.0.10") / UDP(sport=33434, dport=40009))
        )
        deadline = time.monotonic() + UDP_TIMEOUT + 15
        translated = 0
        while self.target.sessions():
            self.assertLess(time.monotonic(), deadline, "the errors kept the session alive")
            self.send(OUTSIDE, inbound)
            self.send(INSIDE, outbound)
            # Both pass while the session lives (the last pair may meet its end).
            translated += bool(self.arrived(INSIDE) and self.arrived(OUTSIDE))
            time.sleep(0.5)
        self.assertGreaterEqual(translated, UDP_TIMEOUT, "errors flowed for the whole timeout")
        self.assertEqual(self.target.counter("sessions_expired"), 1)
