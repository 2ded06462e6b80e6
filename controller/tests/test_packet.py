"""Packet-in parsing, checked against packets scapy builds (scapy only in tests)."""

from __future__ import annotations

import pytest
from quicknat.addr import parse_ipv4 as ip
from quicknat.nat.allocator import Endpoint
from quicknat.nat.session import FlowKey, Rewrite
from quicknat.packet import (
    Fragment,
    PacketError,
    fragment_of,
    fragment_unsafe,
    parse_flow,
    rewrite_addresses,
    rewrite_flow,
)
from scapy.layers.inet import ICMP, IP, TCP, UDP, fragment
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw


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


@pytest.mark.parametrize(
    "rewrite",
    [
        Rewrite(src=Endpoint(ip("203.0.113.1"), 61000)),  # an outbound RST
        # a hairpinned one: the sender's external source, the peer's inside host
        Rewrite(src=Endpoint(ip("203.0.113.1"), 61000), dst=Endpoint(ip("10.0.0.20"), 8080)),
    ],
)
def test_rewrite_flow_updates_both_checksums(rewrite: Rewrite) -> None:
    original = Ether() / IP(src="10.0.0.10", dst="198.51.100.10", options=[b"\x01" * 4])
    original = original / TCP(sport=40000, dport=443, flags="R", seq=7) / b"xxx"
    got = Ether(rewrite_flow(bytes(original), rewrite))
    assert (ip(got[IP].src), got[TCP].sport) == (rewrite.src.address, rewrite.src.port)
    if rewrite.dst is not None:
        assert (ip(got[IP].dst), got[TCP].dport) == (rewrite.dst.address, rewrite.dst.port)
    else:
        assert (got[IP].dst, got[TCP].dport) == ("198.51.100.10", 443)
    assert got[IP].ttl == original[IP].ttl  # the router decrements it
    fresh = got.copy()
    del fresh[IP].chksum, fresh[TCP].chksum
    fresh = Ether(bytes(fresh))
    assert (got[IP].chksum, got[TCP].chksum) == (fresh[IP].chksum, fresh[TCP].chksum)


def test_rewrite_flow_needs_a_whole_tcp_header() -> None:
    short = bytes(Ether() / IP(dst="198.51.100.10") / TCP(flags="R"))[:-4]
    with pytest.raises(PacketError):
        rewrite_flow(short, Rewrite(src=Endpoint(ip("203.0.113.1"), 1)))


def _checksums_ok(frame: bytes) -> bool:
    got = Ether(frame)
    fresh = got.copy()
    del fresh[IP].chksum
    for layer in (TCP, UDP, ICMP):
        if layer in fresh and not (layer is UDP and got[UDP].chksum == 0):
            del fresh[layer].chksum
    fresh = Ether(bytes(fresh))
    return all(
        got[layer].chksum == fresh[layer].chksum
        for layer in (IP, TCP, UDP, ICMP)
        if layer in got and not (layer is UDP and got[UDP].chksum == 0)
    )


def test_rewrite_flow_udp_and_echo() -> None:
    out = Rewrite(src=Endpoint(ip("203.0.113.1"), 61000))
    udp = Ether() / IP(src="10.0.0.10", dst="198.51.100.10") / UDP(sport=5000, dport=53) / b"q"
    got = Ether(rewrite_flow(bytes(udp), out))
    assert (got[IP].src, got[UDP].sport) == ("203.0.113.1", 61000)
    assert _checksums_ok(bytes(got))
    none = udp.copy()
    none[UDP].chksum = 0
    assert Ether(rewrite_flow(bytes(none), out))[UDP].chksum == 0  # none stays none
    echo = Ether() / IP(src="10.0.0.10", dst="198.51.100.10") / ICMP(type=8, id=77, seq=1) / b"p"
    got = Ether(rewrite_flow(bytes(echo), out))
    assert (got[IP].src, got[ICMP].id) == ("203.0.113.1", 61000)
    assert _checksums_ok(bytes(got))


def test_fragments_rewritten_reassemble_into_the_translated_datagram() -> None:
    """The first fragment gets the L4 rewrite, the later ones their addresses:
    the datagram they make is the one rewrite_flow makes of the whole."""
    out = Rewrite(src=Endpoint(ip("203.0.113.1"), 61000))
    whole = Ether() / IP(src="10.0.0.10", dst="198.51.100.10", id=9) / UDP(sport=5000, dport=53)
    whole = Ether(bytes(whole / (bytes(range(256)) * 4)))
    pieces = [Ether(bytes(p)) for p in fragment(whole, fragsize=256)]
    assert len(pieces) == 5
    first = fragment_of(bytes(pieces[0]))
    assert first == Fragment(ip("10.0.0.10"), ip("198.51.100.10"), 17, 9, True, 0, 256, False, 20)
    assert fragment_of(bytes(pieces[2])) == first._replace(first=False, offset=512)
    assert fragment_of(bytes(pieces[4])) == first._replace(
        first=False, offset=1024, length=8, last=True
    )
    assert fragment_of(bytes(whole)) is None
    translated = [Ether(rewrite_flow(bytes(pieces[0]), out))]
    translated += [Ether(rewrite_addresses(bytes(p), out)) for p in pieces[1:]]
    for p in translated:
        fresh = p.copy()
        del fresh[IP].chksum
        assert Ether(bytes(fresh))[IP].chksum == p[IP].chksum
    data = b"".join(bytes(p[IP].payload)[: p[IP].len - 20] for p in translated)
    expected = Ether(rewrite_flow(bytes(whole), out))
    assert data == bytes(expected[IP].payload)
    assert _checksums_ok(bytes(expected))


def _fragment(l4: bytes, proto: int, frag: int, mf: bool = True) -> bytes:
    header = IP(src="10.0.0.10", dst="198.51.100.10", proto=proto, frag=frag)
    header.flags = "MF" if mf else 0
    return bytes(Ether() / header / Raw(l4))


def test_fragment_unsafe_tiny_first_fragments() -> None:
    """IN-IP-9 (RFC 1858 sec. 3.1, RFC 3128): a first fragment must hold its
    whole transport header, TCP options included; swpath's parser the same
    (test_sp_packet.c: test_parse_fragment_limits)."""
    for proto, header in ((6, 20), (17, 8), (1, 8)):
        for size in range(0, header, 4):
            frame = _fragment(bytes(range(size)), proto, 0)
            frag = fragment_of(frame)
            assert frag is not None and fragment_unsafe(frame, frag), (proto, size)
        frame = _fragment(bytes(TCP(sport=1, dport=2)) if proto == 6 else bytes(header), proto, 0)
        frag = fragment_of(frame)
        assert frag is not None and not fragment_unsafe(frame, frag), proto
    # TCP with 40 bytes of options, in a first fragment of 48 bytes
    with_options = bytes(TCP(sport=1, dport=2, dataofs=15)) + bytes(40)
    frame = _fragment(with_options[:48], 6, 0)
    assert fragment_unsafe(frame, fragment_of(frame))  # type: ignore[arg-type]
    frame = _fragment(with_options, 6, 0)
    assert not fragment_unsafe(frame, fragment_of(frame))  # type: ignore[arg-type]
    bad_offset = bytes(TCP(sport=1, dport=2, dataofs=4))
    frame = _fragment(bad_offset, 6, 0)
    with pytest.raises(PacketError):
        fragment_unsafe(frame, fragment_of(frame))  # type: ignore[arg-type]


def test_fragment_unsafe_offsets() -> None:
    """Past 65,535 bytes with the header (the ping of death), and a TCP
    fragment at offset 8 bytes (RFC 1858 sec. 3.2); the lengths come from
    the IP header, never the frame's padding."""
    cases = [
        (_fragment(bytes(11), 17, 8188, mf=False), False),  # 65,504 + 11 + 20 = 65,535
        (_fragment(bytes(12), 17, 8188, mf=False), True),
        (_fragment(bytes(8), 17, 8191, mf=False), True),
        (_fragment(bytes(16), 6, 1), True),
        (_fragment(bytes(16), 17, 1), False),
        (_fragment(bytes(16), 6, 2), False),
    ]
    for frame, unsafe in cases:
        assert fragment_unsafe(frame, fragment_of(frame)) is unsafe  # type: ignore[arg-type]
    padded = _fragment(bytes(4), 17, 0) + bytes(20)  # Ethernet padding after 4 bytes
    frag = fragment_of(padded)
    assert frag is not None and frag.length == 4 and fragment_unsafe(padded, frag)
    with pytest.raises(PacketError):
        fragment_of(_fragment(bytes(16), 17, 2)[:-4])  # total length past the frame
