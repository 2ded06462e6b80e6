"""The ICMP errors the NAT originates (quicknat/icmp_gen.py), checked byte by byte
with scapy: header fields, the quote, every checksum, the RFC 1812 exclusions and
the rate limit."""

from __future__ import annotations

from collections import Counter

import pytest
from quicknat.addr import parse_ipv4
from quicknat.config import parse_config
from quicknat.icmp_gen import Kind, Originator, Suppressed, TokenBucket, build
from quicknat.packet import PacketError, checksum
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPerror, UDPerror
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

HOST_MAC, ROUTER_MAC = "02:00:00:00:01:10", "02:00:00:00:00:01"
NAT = "10.0.0.1"
CONFIG = """
[[interface]]
name = "in0"
zone = "inside"
port = 1
address = "10.0.0.1/24"
[[interface]]
name = "out0"
zone = "outside"
port = 2
[icmp]
rate = 2
burst = 2
"""


def frame(pkt: Packet, dst_mac: str = ROUTER_MAC) -> bytes:
    return bytes(Ether(src=HOST_MAC, dst=dst_mac) / pkt)


def udp(size: int = 20, **ip: object) -> Packet:
    return (
        IP(src="10.0.0.10", dst="198.51.100.10", ttl=1, **ip)
        / UDP(  # type: ignore[arg-type]
            sport=40000, dport=33434
        )
        / Raw(b"x" * size)
    )


def checked(raw: bytes) -> Ether:
    """Parsed, with the IPv4 and ICMP checksums verified from scratch."""
    pkt = Ether(raw)
    ip_header = raw[14:34]
    assert checksum(ip_header) == 0, "IPv4 header checksum"
    assert checksum(raw[34 : 14 + pkt[IP].len]) == 0, "ICMP checksum"
    return pkt


def test_time_exceeded_quotes_the_packet_as_it_arrived() -> None:
    original = frame(udp())
    raw = build(original, Kind.TIME_EXCEEDED, parse_ipv4(NAT), 7)
    got = checked(raw)
    assert (got.src, got.dst) == (ROUTER_MAC, HOST_MAC)
    assert (got[IP].src, got[IP].dst, got[IP].ttl, got[IP].proto) == (NAT, "10.0.0.10", 64, 1)
    assert (got[IP].id, got[IP].tos, got[IP].flags, got[IP].ihl) == (7, 0xC0, 0, 5)
    assert (got[ICMP].type, got[ICMP].code, got[ICMP].unused) == (11, 0, 0)
    # The whole datagram fits in 576 bytes: quoted byte for byte, TTL 1 as received.
    assert raw[14 + 28 :] == original[14:]
    assert (got[IPerror].ttl, got[UDPerror].sport, got[UDPerror].dport) == (1, 40000, 33434)
    assert got[IP].len == 28 + len(original) - 14


def test_quote_is_cut_to_576_bytes() -> None:
    original = frame(udp(1400))
    raw = build(original, Kind.PROHIBITED, parse_ipv4(NAT), 1)
    got = checked(raw)
    assert got[IP].len == 576
    assert len(raw) == 14 + 576
    assert raw[14 + 28 :] == original[14 : 14 + 548]
    assert (got[ICMP].type, got[ICMP].code) == (3, 13)


def test_frag_needed_carries_the_next_hop_mtu() -> None:
    original = frame(udp(1400, flags="DF"))
    got = checked(build(original, Kind.FRAG_NEEDED, parse_ipv4(NAT), 1, mtu=1400))
    assert (got[ICMP].type, got[ICMP].code, got[ICMP].nexthopmtu) == (3, 4, 1400)
    assert got[IPerror].flags == "DF"


def test_frame_padding_is_not_quoted() -> None:
    # A 60-byte minimum Ethernet frame carries padding after a short datagram.
    short = IP(src="10.0.0.10", dst="198.51.100.10", ttl=1) / UDP(sport=1, dport=2)
    original = frame(short) + b"\0" * 18
    got = checked(build(original, Kind.TIME_EXCEEDED, parse_ipv4(NAT), 1))
    assert got[IP].len == 28 + 28


@pytest.mark.parametrize(
    ("pkt", "dst_mac", "why"),
    [
        (
            IP(src="10.0.0.10", dst="8.8.8.8") / ICMP(type=3, code=1) / bytes(udp()),
            ROUTER_MAC,
            "an ICMP error",
        ),
        (
            IP(src="10.0.0.10", dst="8.8.8.8") / ICMP(type=11) / bytes(udp()),
            ROUTER_MAC,
            "an ICMP error",
        ),
        (
            IP(src="10.0.0.10", dst="8.8.8.8", frag=10, proto=17) / Raw(b"y" * 16),
            ROUTER_MAC,
            "fragment other than the first",
        ),
        (udp(), "ff:ff:ff:ff:ff:ff", "link-layer broadcast or multicast"),
        (udp(), "01:00:5e:00:00:01", "link-layer broadcast or multicast"),
        (
            IP(src="10.0.0.10", dst="224.0.0.251", ttl=1) / UDP(),
            ROUTER_MAC,
            "IP multicast or broadcast destination",
        ),
        (
            IP(src="10.0.0.10", dst="255.255.255.255", ttl=1) / UDP(),
            ROUTER_MAC,
            "IP multicast or broadcast destination",
        ),
        (
            IP(src="0.0.0.0", dst="8.8.8.8", ttl=1) / UDP(),
            ROUTER_MAC,
            "source is not a unicast address",
        ),
        (
            IP(src="127.0.0.1", dst="8.8.8.8", ttl=1) / UDP(),
            ROUTER_MAC,
            "source is not a unicast address",
        ),
        (
            IP(src="224.1.2.3", dst="8.8.8.8", ttl=1) / UDP(),
            ROUTER_MAC,
            "source is not a unicast address",
        ),
        (
            IP(src="250.1.2.3", dst="8.8.8.8", ttl=1) / UDP(),
            ROUTER_MAC,
            "source is not a unicast address",
        ),
    ],
)
def test_rfc1812_exclusions(pkt: Packet, dst_mac: str, why: str) -> None:
    with pytest.raises(Suppressed, match=why):
        build(frame(pkt, dst_mac), Kind.TIME_EXCEEDED, parse_ipv4(NAT), 1)


def test_errors_about_queries_and_first_fragments_are_sent() -> None:
    echo = IP(src="10.0.0.10", dst="8.8.8.8", ttl=1) / ICMP(type=8, id=5)
    assert checked(build(frame(echo), Kind.TIME_EXCEEDED, parse_ipv4(NAT), 1))[ICMP].type == 11
    first = IP(src="10.0.0.10", dst="8.8.8.8", flags="MF", ttl=1) / TCP(sport=1, dport=2)
    assert checked(build(frame(first), Kind.TIME_EXCEEDED, parse_ipv4(NAT), 1))[ICMP].type == 11


def test_truncated_frame_is_malformed() -> None:
    with pytest.raises(PacketError):
        build(frame(udp())[:-5], Kind.TIME_EXCEEDED, parse_ipv4(NAT), 1)


def test_token_bucket() -> None:
    bucket = TokenBucket(rate=10, burst=3)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.take(0.05) is False  # half a token
    assert bucket.take(0.1) is True
    assert [bucket.take(100.0) for _ in range(4)] == [True, True, True, False]


def test_originator_counts_and_limits() -> None:
    stats: Counter[str] = Counter()
    gen = Originator(parse_config(CONFIG), stats)
    original = frame(udp())
    first = gen.error(original, 1, Kind.TIME_EXCEEDED, 0.0)
    assert first is not None and checked(first)[IP].src == NAT
    assert checked(first)[IP].ttl == 65  # the switch's routing takes one
    assert gen.error(original, 2, Kind.TIME_EXCEEDED, 0.0) is None  # out0 has no address
    assert gen.error(frame(udp(), "ff:ff:ff:ff:ff:ff"), 1, Kind.TIME_EXCEEDED, 0.0) is None
    assert gen.error(original[:20], 1, Kind.TIME_EXCEEDED, 0.0) is None
    assert gen.error(original, 1, Kind.PROHIBITED, 0.0) is not None
    assert gen.error(original, 1, Kind.PROHIBITED, 0.0) is None  # burst of 2 spent
    assert gen.error(original, 1, Kind.FRAG_NEEDED, 0.5, mtu=1400) is not None  # 2/s refills
    assert stats == {
        "icmp_gen.sent.time_exceeded": 1,
        "icmp_gen.sent.prohibited": 1,
        "icmp_gen.sent.frag_needed": 1,
        "icmp_gen.no_address": 1,
        "icmp_gen.suppressed": 1,
        "icmp_gen.malformed": 1,
        "icmp_gen.rate_limited": 1,
    }
