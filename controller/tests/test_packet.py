"""Packet-in parsing, checked against packets scapy builds (scapy only in tests)."""

from __future__ import annotations

import pytest
from quicknat.addr import parse_ipv4 as ip
from quicknat.nat.session import FlowKey
from quicknat.packet import PacketError, parse_flow
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether


def frame(pkt: object) -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / pkt)  # type: ignore[operator]


def test_tcp_udp_icmp_echo() -> None:
    assert parse_flow(frame(IP(src="10.0.0.7", dst="8.8.8.8") / TCP(sport=1234, dport=80))) == (
        FlowKey(6, ip("10.0.0.7"), ip("8.8.8.8"), 1234, 80)
    )
    assert parse_flow(frame(IP(src="10.0.0.7", dst="8.8.8.8") / UDP(sport=0, dport=65535))) == (
        FlowKey(17, ip("10.0.0.7"), ip("8.8.8.8"), 0, 65535)
    )
    echo = IP(src="10.0.0.7", dst="8.8.8.8") / ICMP(type=8, id=0xBEEF, seq=3)
    assert parse_flow(frame(echo)) == FlowKey(1, ip("10.0.0.7"), ip("8.8.8.8"), 0xBEEF, 0xBEEF)


def test_ipv4_options_move_the_l4_header() -> None:
    pkt = IP(src="10.0.0.7", dst="8.8.8.8", options=b"\x01\x01\x01\x00") / UDP(sport=7, dport=9)
    assert parse_flow(frame(pkt)).sport == 7


def test_other_protocols_have_no_ports() -> None:
    assert parse_flow(frame(IP(src="10.0.0.7", dst="8.8.8.8", proto=47) / b"xxxx")) == (
        FlowKey(47, ip("10.0.0.7"), ip("8.8.8.8"), 0, 0)
    )


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x00" * 10, "truncated"),
        (frame(ARP()), "not IPv4"),
        (frame(IP(src="10.0.0.7", dst="8.8.8.8", frag=10, proto=17) / b"12345678"), "fragment"),
        (frame(IP(src="10.0.0.7", dst="8.8.8.8") / TCP())[:36], "truncated L4"),
        (frame(IP(src="10.0.0.7", dst="8.8.8.8") / ICMP(type=3, code=1)), "not an echo"),
        (frame(IP(src="10.0.0.7", dst="8.8.8.8", ihl=15) / UDP())[:40], "options"),
    ],
)
def test_malformed_packets_raise_packet_error(data: bytes, reason: str) -> None:
    with pytest.raises(PacketError, match=reason):
        parse_flow(data)
