"""The input contract (docs/nat-behavior.md, IN-*), enumerated rather than
hand-listed: every header field with validity rules, times invalid values,
times both directions, on an established session of each protocol; and the
fragment attacks of IN-IP-9 (harness/fragment_attacks.py), which take
sequences of fragments and are checked by their own scenario (below).

For each direction a scenario sends every variant and then one valid packet of
the established session (the sentinel), and asserts on the wire and on the
counters:
- the sentinel is the first and only packet to leave the NAT: nothing invalid
  was forwarded (translated or not), and valid traffic still flows;
- no session appeared or went;
- each variant moved the counter its rule names, and no other drop counter
  moved (the expected deltas are summed per native counter, so a target that
  counts two reasons as one is checked as such).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from base import INSIDE, OUTSIDE, QuickNatTest
from harness.fragment_attacks import Attack, attacks
from harness.targets import COUNTERS
from packets import HOST_MAC, PAYLOAD, REMOTE_MAC, ROUTER_IN_MAC, ROUTER_OUT_MAC
from ptf import testutils
from ptf.testutils import group
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPerror, UDPerror
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet
from scapy.utils import checksum

HOST = "10.0.0.10"
REMOTE = "198.51.100.10"
HOST_PORT, REMOTE_PORT, ECHO_ID = 40100, 443, 0x4242

# TCP flag bytes a peer sends once ECE, CWR and PSH are masked out (IN-TCP-2).
VALID_TCP_FLAGS = {0x02, 0x22, 0x12, 0x04, 0x14, 0x11, 0x31, 0x10, 0x30}

MARTIAN_SOURCES = [
    "0.0.0.0",
    "0.1.2.3",
    "127.0.0.1",
    "127.255.0.9",
    "224.0.0.9",
    "239.255.255.250",
    "240.0.0.1",
    "254.1.2.3",
    "255.255.255.255",
]
MARTIAN_DESTINATIONS = ["0.0.0.1", "127.0.0.1", "240.0.0.1", "250.9.9.9"]
NOT_UNICAST_DESTINATIONS = ["224.0.0.9", "239.1.2.3", "255.255.255.255"]
# NAT-owned addresses (configs/ptf.toml): a pool address and a published one.
OWNED_SOURCES = ["203.0.113.1", "203.0.113.80"]
# Inside sources that no SNAT rule covers (configs/ptf.toml: 10.0.0/24, 10.0.1/24).
UNRULED_SOURCES = ["172.16.0.1", "8.8.8.8", "10.0.2.5", "192.168.1.1"]
OTHER_ETHERTYPES = [0x86DD, 0x88CC, 0x88A8, 0x0842, 0x9000, 0x8847]
UNSUPPORTED_ICMP_TYPES = [5, 9, 10, 13, 14, 15, 17, 30, 42, 255]


@dataclass(frozen=True)
class Variant:
    name: str  # e.g. "out udp ip.ihl=3"
    rule: str  # the requirement ID in docs/nat-behavior.md
    counter: str  # canonical counter (harness/targets.py COUNTERS)
    frame: bytes


@dataclass(frozen=True)
class Flow:
    """One established session seen from one side: how to build its packets."""

    proto: str  # tcp | udp | icmp
    src: str
    dst: str
    sport: int  # ICMP echo: the identifier, as both ports
    dport: int
    ether: Callable[[], Packet]
    echo_type: int = 8  # request from inside, reply from outside

    def l4(self) -> Packet:
        if self.proto == "tcp":
            return TCP(sport=self.sport, dport=self.dport, flags="A", seq=1000, ack=1)
        if self.proto == "udp":
            return UDP(sport=self.sport, dport=self.dport)
        return ICMP(type=self.echo_type, id=self.sport, seq=1)

    def packet(self, ip: IP | None = None, l4: Packet | None = None) -> Packet:
        return (
            self.ether()
            / (ip or IP(src=self.src, dst=self.dst))
            / (l4 if l4 is not None else self.l4())
            / PAYLOAD
        )


def _with_ip(flow: Flow, **fields: object) -> bytes:
    ip = IP(src=flow.src, dst=flow.dst)
    for name, value in fields.items():
        setattr(ip, name, value)
    return bytes(flow.packet(ip))


def _patched(frame: bytes, offset: int, value: bytes) -> bytes:
    return frame[:offset] + value + frame[offset + len(value) :]


def _with_options(flow: Flow, options: bytes) -> bytes:
    """The flow's packet with these raw option bytes (a multiple of 4) in its
    IPv4 header: IHL, total length and checksum made consistent."""
    frame = bytes(flow.packet())
    header, rest = bytearray(frame[14:34] + options), frame[34:]
    header[0] = 0x40 | len(header) // 4
    header[2:4] = (len(header) + len(rest)).to_bytes(2, "big")
    header[10:12] = b"\0\0"
    header[10:12] = checksum(bytes(header)).to_bytes(2, "big")
    return frame[:14] + bytes(header) + rest


def ipv4_variants(flow: Flow, inside: bool) -> Iterator[Variant]:
    tag = f"{flow.proto} ip"
    good = flow.packet()
    frame_ip_len = len(bytes(good)) - 14
    l4_min = {"tcp": 20, "udp": 8, "icmp": 8}[flow.proto]
    for version in (0, 1, 5, 6, 15):
        yield Variant(
            f"{tag}.version={version}",
            "IN-IP-1",
            "malformed_dropped",
            _with_ip(flow, version=version),
        )
    for ihl in range(5):
        yield Variant(f"{tag}.ihl={ihl}", "IN-IP-1", "malformed_dropped", _with_ip(flow, ihl=ihl))
    # total length: below the IP header, below the L4 header, beyond the frame
    for length in (0, 1, 19):
        yield Variant(
            f"{tag}.len={length}", "IN-IP-2", "malformed_dropped", _with_ip(flow, len=length)
        )
    short_l4 = "IN-ICMP-1" if flow.proto == "icmp" else "IN-IP-2"
    for length in (20, 20 + l4_min // 2, 20 + l4_min - 1):
        yield Variant(
            f"{tag}.len={length}", short_l4, "truncated_dropped", _with_ip(flow, len=length)
        )
    for length in (frame_ip_len + 1, frame_ip_len + 100, 65535):
        yield Variant(
            f"{tag}.len={length}", "IN-IP-2", "truncated_dropped", _with_ip(flow, len=length)
        )
    frame = bytes(good)
    checksum = int.from_bytes(frame[24:26], "big") ^ 0x0101
    yield Variant(
        f"{tag}.chksum", "IN-IP-3", "bad_checksum", _patched(frame, 24, checksum.to_bytes(2, "big"))
    )
    for name, raw in (
        ("lsrr", b"\x83\x07\x04\xc0\x00\x02\x01\x00"),
        ("ssrr", b"\x89\x07\x04\xc0\x00\x02\x01\x00"),
        ("nop-lsrr", b"\x01\x83\x07\x04\xc0\x00\x02\x01"),
    ):
        yield Variant(
            f"{tag}.option={name}", "IN-IP-4", "source_route_dropped", _with_options(flow, raw)
        )
    for name, raw in (
        ("len0", b"\x44\x00\x00\x00"),  # timestamp, length 0
        ("len1", b"\x44\x01\x00\x00"),
        ("past-end", b"\x44\x10\x05\x00"),  # says 16 bytes, 4 there
        ("cut", b"\x01\x01\x01\x44"),  # a type at the last byte, no length
    ):
        yield Variant(
            f"{tag}.option={name}", "IN-IP-4", "malformed_dropped", _with_options(flow, raw)
        )
    for src in MARTIAN_SOURCES:
        yield Variant(f"{tag}.src={src}", "IN-IP-5", "martian", _with_ip(flow, src=src))
    for src in OWNED_SOURCES:
        yield Variant(f"{tag}.src={src}", "IN-IP-5", "martian", _with_ip(flow, src=src))
    for dst in MARTIAN_DESTINATIONS:
        yield Variant(f"{tag}.dst={dst}", "IN-IP-6", "martian", _with_ip(flow, dst=dst))
    for dst in NOT_UNICAST_DESTINATIONS:
        yield Variant(f"{tag}.dst={dst}", "IN-IP-6", "not_unicast", _with_ip(flow, dst=dst))
    if inside:
        for src in UNRULED_SOURCES:
            yield Variant(f"{tag}.src={src}", "IN-RULE-1", "no_rule", _with_ip(flow, src=src))


def tcp_variants(flow: Flow) -> Iterator[Variant]:
    segment = 20 + len(PAYLOAD)
    for doff in range(16):
        if doff >= 5 and doff * 4 <= segment:
            continue
        l4 = TCP(sport=flow.sport, dport=flow.dport, flags="A", seq=1000, ack=1, dataofs=doff)
        yield Variant(
            f"tcp.dataofs={doff}", "IN-TCP-1", "malformed_dropped", bytes(flow.packet(l4=l4))
        )
    flag_bytes = [f for f in range(64) if f & 0x37 not in VALID_TCP_FLAGS]
    flag_bytes += [0xC3, 0xE9, 0xFF, 0xC0, 0x47]  # with ECE/CWR: SYN+FIN, xmas, ...
    for flags in flag_bytes:
        l4 = TCP(sport=flow.sport, dport=flow.dport, flags=flags, seq=1000, ack=1)
        yield Variant(
            f"tcp.flags=0x{flags:02x}", "IN-TCP-2", "bad_tcp_flags", bytes(flow.packet(l4=l4))
        )
    for name, sport, dport in (("sport", 0, flow.dport), ("dport", flow.sport, 0)):
        l4 = TCP(sport=sport, dport=dport, flags="A", seq=1000, ack=1)
        yield Variant(f"tcp.{name}=0", "IN-L4-1", "port_zero", bytes(flow.packet(l4=l4)))


def udp_variants(flow: Flow) -> Iterator[Variant]:
    payload = 8 + len(PAYLOAD)
    for length in (*range(8), payload + 1, payload + 100, 65535):
        l4 = UDP(sport=flow.sport, dport=flow.dport, len=length)
        yield Variant(
            f"udp.len={length}", "IN-UDP-1", "malformed_dropped", bytes(flow.packet(l4=l4))
        )
    for name, sport, dport in (("sport", 0, flow.dport), ("dport", flow.sport, 0)):
        l4 = UDP(sport=sport, dport=dport)
        yield Variant(f"udp.{name}=0", "IN-L4-1", "port_zero", bytes(flow.packet(l4=l4)))


def icmp_variants(flow: Flow) -> Iterator[Variant]:
    for icmp_type in UNSUPPORTED_ICMP_TYPES:
        yield Variant(
            f"icmp.type={icmp_type}",
            "IN-ICMP-2",
            "unsupported",
            bytes(flow.packet(l4=ICMP(type=icmp_type, code=0))),
        )
    # An error quoting a packet of no session: the quote names another port.
    quoted = IPerror(src=flow.dst, dst=flow.src) / UDPerror(sport=9, dport=9)
    yield Variant(
        "icmp.error-no-session",
        "IN-ICMP-3",
        "icmp_error_dropped",
        bytes(flow.packet(l4=ICMP(type=3, code=3) / bytes(quoted))),
    )


# IP protocols with no ports to map: GRE, ESP, AH, SCTP, UDP-Lite.
UNSUPPORTED_PROTOCOLS = [47, 50, 51, 132, 136]


def protocol_variants(flow: Flow) -> Iterator[Variant]:
    """IN-L4-2: the flow's addresses with another IP protocol, which needs a
    translation the NAT cannot make."""
    for proto in UNSUPPORTED_PROTOCOLS:
        yield Variant(f"ip.proto={proto}", "IN-L4-2", "unsupported", _with_ip(flow, proto=proto))


def ethernet_variants(flow: Flow) -> Iterator[Variant]:
    good = flow.packet()
    for ethertype in OTHER_ETHERTYPES:
        yield Variant(
            f"eth.type=0x{ethertype:04x}",
            "IN-ETH-1",
            "not_ipv4",
            _patched(bytes(good), 12, ethertype.to_bytes(2, "big")),
        )
    tagged = good[Ether].copy()
    tagged.remove_payload()
    tagged = tagged / Dot1Q(vlan=7) / good[IP]
    yield Variant("eth.vlan=7", "IN-ETH-1", "not_ipv4", bytes(tagged))


def variants(flows: list[Flow], inside: bool) -> list[Variant]:
    result: list[Variant] = []
    for flow in flows:
        result.extend(ipv4_variants(flow, inside))
        result.extend(
            {"tcp": tcp_variants, "udp": udp_variants, "icmp": icmp_variants}[flow.proto](flow)
        )
    result.extend(protocol_variants(flows[0]))
    result.extend(ethernet_variants(flows[0]))
    return result


def fragment_attacks(flows: list[Flow], inside: bool, ident: int) -> list[Attack]:
    """IN-IP-9: every fragment attack on each flow, each datagram its own IP
    ID from `ident` up; the smuggled header names the flow's next port on
    the host's side (its next echo identifier)."""
    result: list[Attack] = []
    for i, flow in enumerate(flows):
        if flow.proto == "icmp":
            other = replace(flow, sport=flow.sport + 1, dport=flow.dport + 1)
        elif inside:
            other = replace(flow, sport=flow.sport + 1)
        else:
            other = replace(flow, dport=flow.dport + 1)
        ip = IP(src=flow.src, dst=flow.dst)
        result += attacks(flow.ether(), ip, flow.l4(), other.l4(), ident + 32 * i)
    return result


class InputContract(QuickNatTest):
    """Opens one session per protocol, then checks the variants of one side."""

    # configs/ptf.toml ages UDP out in 4 s: long enough for no run of this.
    CONFIG: ClassVar[dict[str, Any]] = {"timeouts": {"udp": 120}}

    def establish(self) -> dict[str, tuple[str, int]]:
        """proto -> the external (address, port) of the session HOST opened."""
        external = {}
        for proto, l4 in (
            ("udp", UDP(sport=HOST_PORT, dport=REMOTE_PORT)),
            ("tcp", TCP(sport=HOST_PORT, dport=REMOTE_PORT, flags="S", seq=999)),
            ("icmp", ICMP(type=8, id=ECHO_ID, seq=1)),
        ):
            self.send(INSIDE, self.inside_flow(proto).packet(l4=l4))
            out = self.receive(OUTSIDE)
            port = out[ICMP].id if proto == "icmp" else out[IP].payload.sport
            external[proto] = (str(out[IP].src), int(port))
        self.expect_nothing()
        return external

    def inside_flow(self, proto: str) -> Flow:
        ports = (ECHO_ID, ECHO_ID) if proto == "icmp" else (HOST_PORT, REMOTE_PORT)
        return Flow(
            proto, HOST, REMOTE, *ports, lambda: Ether(src=HOST_MAC[HOST], dst=ROUTER_IN_MAC)
        )

    def outside_flow(self, proto: str, external: tuple[str, int]) -> Flow:
        address, port = external
        ports = (port, port) if proto == "icmp" else (REMOTE_PORT, port)
        return Flow(
            proto,
            REMOTE,
            address,
            *ports,
            lambda: Ether(src=REMOTE_MAC, dst=ROUTER_OUT_MAC),
            echo_type=0,
        )

    def check(self, cases: list[Variant], port: int, sentinel: Packet, arrives: int) -> None:
        target = self.target
        groups = _native_groups([target.counters[c] for c in COUNTERS if _is_drop(c)])
        natives = sorted(set(groups.values()))
        before = {n: target.read_counter(n) for n in natives}
        sessions = _identities(target.sessions())
        expected = Counter(groups[target.counters[v.counter]] for v in cases)
        for i, variant in enumerate(cases):
            testutils.send_packet(self, port, variant.frame)
            if i % 32 == 31:  # paced: a software switch's input buffer is small
                time.sleep(0.02)
        self.send(port, sentinel)
        got = self.receive(arrives)
        self.assertEqual(
            bytes(got[IP].payload)[-len(PAYLOAD) :],
            PAYLOAD,
            f"the first packet out is the sentinel, not {got.summary()}",
        )
        self.expect_nothing()

        def deltas() -> dict[str, int]:
            return {n: target.read_counter(n) - before[n] for n in natives}

        want = {n: expected.get(n, 0) for n in natives}
        try:
            target.wait_until("every variant counted", lambda: deltas() == want, 5)
        except AssertionError:
            got_deltas = deltas()
            wrong = {n: (got_deltas[n], want[n]) for n in natives if got_deltas[n] != want[n]}
            self.fail(f"{len(cases)} variants: counters (got, want) differ: {wrong}")
        self.assertEqual(_identities(target.sessions()), sessions, "no session opened or closed")

    def check_fragments(
        self,
        cases: list[Attack],
        port: int,
        sentinel: Packet,
        arrives: int,
        endpoints: dict[str, tuple[str, int]],
    ) -> None:
        """IN-IP-9: the attacks, then the sentinel. A target that sees
        fragments (not reassembled by its packet I/O) forwards each attack's
        `forwarded` frames only, translated: from inside with the session's
        external endpoint, from outside to its inside one, per protocol in
        `endpoints` (never the smuggled ports); and counts the rest
        fragment_overlap. A target whose kernel reassembles forwards none of
        them (Linux drops an overlapping datagram, and no attack completes
        one). Either way no other drop counter moves, nothing is held, no
        session comes or goes."""
        target = self.target
        groups = _native_groups([target.counters[c] for c in COUNTERS if _is_drop(c)])
        natives = sorted(set(groups.values()))
        before = {n: target.read_counter(n) for n in natives}
        sessions = _identities(target.sessions())
        sees = not target.reassembles_fragments
        for i, frame in enumerate(f for c in cases for f in c.frames):
            testutils.send_packet(self, port, frame)
            if i % 16 == 15:  # paced: every fragment is a punt on a switch
                time.sleep(0.05)
        self.send(port, sentinel)
        got = []
        while (pkt := self.arrived(arrives, timeout=1.5)) is not None:
            got.append(pkt)
        whole = [p for p in got if not (p[IP].flags.MF or p[IP].frag)]
        self.assertEqual(len(whole), 1, f"only the sentinel whole: {[p.summary() for p in whole]}")
        self.assertEqual(bytes(whole[0][IP].payload)[-len(PAYLOAD) :], PAYLOAD)
        want = {
            (Ether(c.frames[i])[IP].id, Ether(c.frames[i])[IP].frag): c.name
            for c in cases
            for i in c.forwarded
            if sees
        }
        frags = {(p[IP].id, p[IP].frag): p for p in got if p[IP].flags.MF or p[IP].frag}
        self.assertEqual(sorted(frags), sorted(want), "the fragments that left")
        for key, p in frags.items():
            self.assertEqual(
                _endpoint(p, port == INSIDE), endpoints[want[key].split()[0]], want[key]
            )
        expected = {n: 0 for n in natives}
        if sees:
            expected[groups[target.counters["fragment_overlap"]]] = sum(c.dropped for c in cases)

        def deltas() -> dict[str, int]:
            return {n: target.read_counter(n) - before[n] for n in natives}

        try:
            target.wait_until("every attack counted", lambda: deltas() == expected, 5)
        except AssertionError:
            now = deltas()
            wrong = {n: (now[n], expected[n]) for n in natives if now[n] != expected[n]}
            self.fail(f"{len(cases)} attacks: counters (got, want) differ: {wrong}")
        self.assertEqual(_identities(target.sessions()), sessions, "no session opened or closed")


def _endpoint(pkt: Packet, source: bool) -> tuple[str, int]:
    """A first fragment's source (or destination) address and port, or echo
    identifier."""
    l4 = pkt[IP].payload
    if ICMP in pkt:
        return str(pkt[IP].src if source else pkt[IP].dst), int(l4.id)
    return (str(pkt[IP].src), int(l4.sport)) if source else (str(pkt[IP].dst), int(l4.dport))


def _native_groups(names: list[str]) -> dict[str, str]:
    """Each target counter (native names joined by `+`) to the group of
    natives it shares one with, joined by `+`: counters that overlap on a
    target (one native for two canonical counters, or a canonical counter
    kept in two places) are checked as their group's sum."""
    groups: list[set[str]] = []
    for name in names:
        atoms = set(name.split("+"))
        merged = [g for g in groups if g & atoms]
        for g in merged:
            groups.remove(g)
            atoms |= g
        groups.append(atoms)
    return {n: "+".join(sorted(g)) for n in names for g in groups if set(n.split("+")) <= g}


def _identities(sessions: list[dict[str, Any]]) -> list[str]:
    """What makes each session the one it is (not its age, idle time, or
    with learning, the lease the switch runs down and the place that
    follows from it)."""
    return sorted(
        repr({k: v for k, v in s.items() if k not in _CLOCKS and not _leased_place(k, s)})
        for s in sessions
    )


_CLOCKS = {"age_s", "idle_s", "switch_lease_s"}


def _leased_place(key: str, session: dict[str, Any]) -> bool:
    return key == "where" and "switch_lease_s" in session


def _is_drop(canonical: str) -> bool:
    """Canonical counters the contract's variants may move (drops, refusals)."""
    return canonical not in {
        "new_flows",
        "sessions_expired",
        "icmp_time_exceeded_sent",
        "icmp_frag_needed_sent",
        "icmp_prohibited_sent",
        "icmp_error_suppressed",
    }


@group("contract")
class InsideInputContract(InputContract):
    """IN-*: every invalid variant of three established inside flows (TCP,
    UDP, ICMP echo) and of inside hosts no rule covers is dropped and counted."""

    def runTest(self) -> None:
        self.establish()
        flows = [self.inside_flow(p) for p in ("tcp", "udp", "icmp")]
        cases = variants(flows, inside=True)
        self.assertGreater(len(cases), 150)
        sentinel = self.inside_flow("udp").packet()
        self.check(cases, INSIDE, sentinel, OUTSIDE)


@group("contract")
class OutsideInputContract(InputContract):
    """IN-*: the same for packets from outside to the sessions' external
    endpoints: none reaches the inside host."""

    def runTest(self) -> None:
        external = self.establish()
        flows = [self.outside_flow(p, external[p]) for p in ("tcp", "udp", "icmp")]
        cases = variants(flows, inside=False)
        self.assertGreater(len(cases), 150)
        sentinel = self.outside_flow("udp", external["udp"]).packet()
        self.check(cases, OUTSIDE, sentinel, INSIDE)


@group("contract")
class InsideFragmentContract(InputContract):
    """IN-IP-9: the fragment attacks on the three established inside flows:
    only each datagram's valid first fragment leaves, with its session's
    external endpoint."""

    def runTest(self) -> None:
        external = self.establish()
        flows = [self.inside_flow(p) for p in ("tcp", "udp", "icmp")]
        cases = fragment_attacks(flows, inside=True, ident=0x6C00)
        self.assertGreater(len(cases), 15)
        sentinel = self.inside_flow("udp").packet()
        self.check_fragments(cases, INSIDE, sentinel, OUTSIDE, external)


@group("contract")
class OutsideFragmentContract(InputContract):
    """IN-IP-9: the same from outside, to the sessions' external endpoints:
    the inside host gets no fragment but each valid first, at its own port."""

    def runTest(self) -> None:
        external = self.establish()
        flows = [self.outside_flow(p, external[p]) for p in ("tcp", "udp", "icmp")]
        cases = fragment_attacks(flows, inside=False, ident=0x6D00)
        self.assertGreater(len(cases), 15)
        sentinel = self.outside_flow("udp", external["udp"]).packet()
        host = {"tcp": (HOST, HOST_PORT), "udp": (HOST, HOST_PORT), "icmp": (HOST, ECHO_ID)}
        self.check_fragments(cases, OUTSIDE, sentinel, INSIDE, host)
