"""ICMP error translation for the P4 path (RFC 5508 sec. 4), checked with scapy:
the outer header, the quoted header and ports, and every checksum."""

from __future__ import annotations

import configs
import pytest
from quicknat.addr import parse_ipv4 as ip
from quicknat.config import parse_config
from quicknat.config.model import Zone
from quicknat.icmp_error import translate
from quicknat.nat.core import Nat
from quicknat.nat.session import FlowKey, Session
from quicknat.packet import PacketError
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPerror, TCPerror, UDPerror
from scapy.layers.l2 import Ether

CONFIG = configs.text("zones", "snat_pool_ten_ports")
ROUTER = "192.0.2.254"


def frame(pkt: object) -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / pkt)  # type: ignore[operator]


def session(protocol: int, sport: int = 5000, dport: int = 53) -> tuple[Nat, Session]:
    n = Nat(parse_config(CONFIG))
    key = FlowKey(protocol, ip("10.0.0.7"), ip("198.51.100.9"), sport, dport)
    return n, n.new_flow(Zone.INSIDE, key, 0)


def checked(raw: bytes) -> Ether:
    """Parse and check that every checksum scapy can recompute is right."""
    pkt = Ether(raw)
    again = pkt.copy()
    del again[IP].chksum
    del again[ICMP].chksum
    del again[IPerror].chksum
    rebuilt = Ether(bytes(again))
    assert pkt[IP].chksum == rebuilt[IP].chksum
    assert pkt[ICMP].chksum == rebuilt[ICMP].chksum
    assert pkt[IPerror].chksum == rebuilt[IPerror].chksum
    return pkt


def test_time_exceeded_from_outside_goes_back_to_the_inside_host() -> None:
    n, s = session(17)
    quoted = (
        IP(src="203.0.113.1", dst="198.51.100.9", ttl=1)
        / UDP(sport=s.external.port, dport=53)
        / b"query"
    )
    error = IP(src=ROUTER, dst="203.0.113.1") / ICMP(type=11, code=0) / bytes(quoted)[:28]
    pkt = checked(translate(frame(error), Zone.OUTSIDE, n.session_for) or b"")
    assert pkt[IP].src == ROUTER and pkt[IP].dst == "10.0.0.7"
    assert (pkt[ICMP].type, pkt[ICMP].code) == (11, 0)
    assert pkt[IPerror].src == "10.0.0.7" and pkt[IPerror].dst == "198.51.100.9"
    assert pkt[UDPerror].sport == 5000 and pkt[UDPerror].dport == 53
    # the quoted UDP checksum was adjusted: it matches the original packet's
    original = IP(src="10.0.0.7", dst="198.51.100.9", ttl=1) / UDP(sport=5000, dport=53) / b"query"
    assert pkt[UDPerror].chksum == IP(bytes(original))[UDP].chksum


def test_fragmentation_needed_for_tcp_keeps_the_mtu_and_fixes_the_quoted_checksum() -> None:
    n, s = session(6, 40000, 443)
    quoted = IP(src="203.0.113.1", dst="198.51.100.9", flags="DF") / TCP(
        sport=s.external.port, dport=443, flags="A"
    )
    too_big = ICMP(type=3, code=4, nexthopmtu=1400)
    error = IP(src=ROUTER, dst="203.0.113.1") / too_big / bytes(quoted)
    pkt = checked(translate(frame(error), Zone.OUTSIDE, n.session_for) or b"")
    assert pkt[ICMP].nexthopmtu == 1400 and pkt[TCPerror].sport == 40000
    original = IP(src="10.0.0.7", dst="198.51.100.9", flags="DF") / TCP(
        sport=40000, dport=443, flags="A"
    )
    assert pkt[TCPerror].chksum == IP(bytes(original))[TCP].chksum


def test_error_from_an_inside_host_gets_the_external_endpoint() -> None:
    n, s = session(17)
    quoted = IP(src="198.51.100.9", dst="10.0.0.7") / UDP(sport=53, dport=5000)
    error = IP(src="10.0.0.7", dst="198.51.100.9") / ICMP(type=3, code=3) / bytes(quoted)
    pkt = checked(translate(frame(error), Zone.INSIDE, n.session_for) or b"")
    assert pkt[IP].src == "203.0.113.1" and pkt[IP].dst == "198.51.100.9"
    assert pkt[IPerror].dst == "203.0.113.1" and pkt[UDPerror].dport == s.external.port


def test_echo_identifier_in_the_quote_is_mapped_back() -> None:
    n, s = session(1, 0x1234, 0x1234)
    quoted = IP(src="203.0.113.1", dst="198.51.100.9", ttl=1) / ICMP(type=8, id=s.external.port)
    error = IP(src=ROUTER, dst="203.0.113.1") / ICMP(type=11) / bytes(quoted)
    pkt = checked(translate(frame(error), Zone.OUTSIDE, n.session_for) or b"")
    assert pkt[IPerror].src == "10.0.0.7"
    inner = pkt[IPerror].payload
    assert inner.id == 0x1234
    assert inner.chksum == ICMP(bytes(ICMP(type=8, id=0x1234))).chksum


def test_errors_about_no_session_or_from_the_wrong_side_are_refused() -> None:
    n, s = session(17)
    other = IP(src="203.0.113.1", dst="198.51.100.9") / UDP(sport=s.external.port + 1, dport=53)
    error = IP(src=ROUTER, dst="203.0.113.1") / ICMP(type=11) / bytes(other)
    assert translate(frame(error), Zone.OUTSIDE, n.session_for) is None
    mine = IP(src="203.0.113.1", dst="198.51.100.9") / UDP(sport=s.external.port, dport=53)
    error = IP(src=ROUTER, dst="203.0.113.1") / ICMP(type=11) / bytes(mine)
    assert translate(frame(error), Zone.INSIDE, n.session_for) is None  # arrived inside
    misdirected = IP(src=ROUTER, dst="203.0.113.9") / ICMP(type=11) / bytes(mine)
    assert translate(frame(misdirected), Zone.OUTSIDE, n.session_for) is None
    assert n.session_for(s.out2in) is s  # nothing refreshed or removed


@pytest.mark.parametrize(
    "pkt",
    [
        IP(src=ROUTER, dst="203.0.113.1") / ICMP(type=8),  # not an error
        IP(src=ROUTER, dst="203.0.113.1") / ICMP(type=11) / b"\x45\x00",  # truncated quote
        IP(src=ROUTER, dst="203.0.113.1") / ICMP(type=11) / bytes(IP(proto=47) / (b"\0" * 8)),
        IP(src=ROUTER, dst="203.0.113.1", flags="MF") / ICMP(type=11) / bytes(IP() / UDP()),
    ],
)
def test_malformed_errors_raise(pkt: object) -> None:
    n, _ = session(17)
    with pytest.raises(PacketError):
        translate(frame(pkt), Zone.OUTSIDE, n.session_for)


def test_hairpinned_error_reaches_the_sender_with_the_peer_external_endpoint() -> None:
    """RFC 5508 sec. 6: an inside host's error about a hairpinned packet goes back
    to the inside sender, addressed as the hairpinned packet was."""
    n = Nat(parse_config(CONFIG + '[filtering]\nudp = "endpoint-independent"\n'))
    peer = n.new_flow(Zone.INSIDE, FlowKey(17, ip("10.0.0.8"), ip(ROUTER), 6000, 53), 0)
    key = FlowKey(17, ip("10.0.0.7"), ip("203.0.113.1"), 5000, peer.external.port)
    sender = n.new_flow(Zone.INSIDE, key, 0)
    n.open_hairpin(sender, 0)
    e_sender, e_peer = sender.external, peer.external
    # What 10.0.0.8 received, and its port-unreachable about it.
    quoted = IP(src="203.0.113.1", dst="10.0.0.8") / UDP(sport=e_sender.port, dport=6000)
    error = IP(src="10.0.0.8", dst="203.0.113.1") / ICMP(type=3, code=3) / bytes(quoted)
    pkt = checked(translate(frame(error), Zone.INSIDE, n.session_for) or b"")
    assert (pkt[IP].src, pkt[IP].dst) == ("203.0.113.1", "10.0.0.7")
    assert (pkt[IPerror].src, pkt[UDPerror].sport) == ("10.0.0.7", 5000)
    assert (pkt[IPerror].dst, pkt[UDPerror].dport) == ("203.0.113.1", e_peer.port)
    assert pkt[ICMP].type == 3 and pkt[ICMP].code == 3
