"""The flow of a punted packet, by plain byte parsing (no scapy on the packet-in path).

Only what a new-flow decision needs is read: Ethernet type, the IPv4 addresses,
protocol, fragment offset and header length, and the ports (or, for ICMP echo,
the identifier, which RFC 5508 maps like a port). Anything short or odd raises
PacketError, which the controller counts as a malformed drop.
"""

from __future__ import annotations

from typing import NamedTuple

from quicknat.nat.session import FlowKey, Rewrite

ETH_HEADER = 14
ETHERTYPE_IPV4 = 0x0800
IPV4_MIN_HEADER = 20
ICMP_ECHO_REPLY, ICMP_ECHO_REQUEST = 0, 8
ICMP, TCP, UDP = 1, 6, 17


class PacketError(ValueError):
    """A packet the NAT cannot take a flow from; the message says why."""


def ipv4_header_length(frame: bytes | bytearray) -> int:
    """The length of the IPv4 header after the Ethernet header, checked."""
    if len(frame) < ETH_HEADER + IPV4_MIN_HEADER:
        raise PacketError("truncated: shorter than Ethernet + IPv4 headers")
    if int.from_bytes(frame[12:14], "big") != ETHERTYPE_IPV4:
        raise PacketError("not IPv4")
    version_ihl = frame[ETH_HEADER]
    header_len = (version_ihl & 0x0F) * 4
    if version_ihl >> 4 != 4 or header_len < IPV4_MIN_HEADER:
        raise PacketError("bad IPv4 version or header length")
    if len(frame) < ETH_HEADER + header_len:
        raise PacketError("truncated IPv4 options")
    return header_len


# Loose and strict source route (RFC 791): they would steer the packet past
# the NAT's rewrite (RFC 7126 sec. 4.3, 4.4; docs/nat-behavior.md IN-IP-4).
IPV4_OPTION_LSRR, IPV4_OPTION_SSRR = 131, 137


def source_routed(frame: bytes | bytearray) -> bool:
    """Whether a frame's IPv4 options hold a source route (IN-IP-4, as swpath's
    sp_check_options); PacketError for an option list that runs past the
    header or has a length below 2 (malformed)."""
    end = ETH_HEADER + ipv4_header_length(frame)
    i = ETH_HEADER + IPV4_MIN_HEADER
    while i < end:
        kind = frame[i]
        if kind == 0:  # end of list
            return False
        if kind == 1:  # no-op
            i += 1
            continue
        if i + 1 >= end or frame[i + 1] < 2 or i + frame[i + 1] > end:
            raise PacketError("malformed IPv4 options")
        if kind in (IPV4_OPTION_LSRR, IPV4_OPTION_SSRR):
            return True
        i += frame[i + 1]
    return False


def checksum(data: bytes | bytearray) -> int:
    """The Internet checksum (RFC 1071) of data."""
    total = sum(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data) - 1, 2))
    if len(data) % 2:
        total += data[-1] << 8
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def checksum_adjust(cksum: int, old: int, new: int, width: int) -> int:
    """RFC 1624 eqn. 3: `cksum` after a field of `width` 16-bit words changed
    from `old` to `new`."""
    total = ~cksum & 0xFFFF
    for i in range(width):
        shift = 16 * (width - 1 - i)
        total += (~(old >> shift) & 0xFFFF) + ((new >> shift) & 0xFFFF)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def rewrite_flow(frame: bytes, rewrite: Rewrite) -> bytes:
    """A TCP, UDP or ICMP echo packet parse_flow accepted (or the first fragment
    of one), with the session's new source and/or destination (address and port,
    or echo identifier) and the checksums updated incrementally (RFC 1624): the
    IPv4 header's, and the L4 one, which for TCP and UDP covers the addresses
    through the pseudo-header and, in a first fragment, the whole datagram. A UDP
    checksum of 0 (none) stays 0. The TTL is the router's to decrement. For
    packets the switch must not or cannot translate itself: an outbound RST
    (a hit would restart its entry's idle timer), a first fragment."""
    ip = ETH_HEADER
    l4 = ip + ipv4_header_length(frame)
    protocol = frame[ip + 9]
    sum_at = {TCP: l4 + 16, UDP: l4 + 6, ICMP: l4 + 2}.get(protocol)
    if sum_at is None or len(frame) < sum_at + 2 or (protocol == ICMP and len(frame) < l4 + 8):
        raise PacketError("not a whole TCP, UDP or ICMP header")
    out = bytearray(frame)
    ip_sum = int.from_bytes(out[ip + 10 : ip + 12], "big")
    l4_sum = int.from_bytes(out[sum_at : sum_at + 2], "big")
    keep_zero = protocol == UDP and l4_sum == 0
    ports = (l4 + 4, l4 + 4) if protocol == ICMP else (l4, l4 + 2)
    for endpoint, addr_at, port_at in (
        (rewrite.src, ip + 12, ports[0]),
        (rewrite.dst, ip + 16, ports[1]),
    ):
        if endpoint is None:
            continue
        old_addr = int.from_bytes(out[addr_at : addr_at + 4], "big")
        old_port = int.from_bytes(out[port_at : port_at + 2], "big")
        ip_sum = checksum_adjust(ip_sum, old_addr, endpoint.address, 2)
        if protocol != ICMP:  # ICMP has no pseudo-header
            l4_sum = checksum_adjust(l4_sum, old_addr, endpoint.address, 2)
        l4_sum = checksum_adjust(l4_sum, old_port, endpoint.port, 1)
        out[addr_at : addr_at + 4] = endpoint.address.to_bytes(4, "big")
        out[port_at : port_at + 2] = endpoint.port.to_bytes(2, "big")
    if keep_zero:
        l4_sum = 0
    elif protocol == UDP and l4_sum == 0:
        l4_sum = 0xFFFF  # a computed 0 is sent as all ones (RFC 768)
    out[ip + 10 : ip + 12] = ip_sum.to_bytes(2, "big")
    out[sum_at : sum_at + 2] = l4_sum.to_bytes(2, "big")
    return bytes(out)


def rewrite_addresses(frame: bytes, rewrite: Rewrite) -> bytes:
    """A later fragment of a datagram whose first got `rewrite`: its addresses
    only (it has no L4 header; the first fragment's L4 checksum update covers
    the whole datagram)."""
    ip = ETH_HEADER
    ipv4_header_length(frame)
    out = bytearray(frame)
    ip_sum = int.from_bytes(out[ip + 10 : ip + 12], "big")
    for endpoint, addr_at in ((rewrite.src, ip + 12), (rewrite.dst, ip + 16)):
        if endpoint is None:
            continue
        old_addr = int.from_bytes(out[addr_at : addr_at + 4], "big")
        ip_sum = checksum_adjust(ip_sum, old_addr, endpoint.address, 2)
        out[addr_at : addr_at + 4] = endpoint.address.to_bytes(4, "big")
    out[ip + 10 : ip + 12] = ip_sum.to_bytes(2, "big")
    return bytes(out)


class Fragment(NamedTuple):
    """Where an IPv4 fragment belongs: its datagram, whether it is the first,
    and where its data lies in the datagram's IP payload."""

    src: int
    dst: int
    protocol: int
    ident: int
    first: bool
    offset: int  # bytes
    length: int  # bytes of data, by the IP total length (not the frame's)
    last: bool  # MF clear
    header_len: int


def fragment_of(frame: bytes) -> Fragment | None:
    """The fragment a frame is, or None for a whole datagram."""
    ip = ETH_HEADER
    header_len = ipv4_header_length(frame)
    flags_offset = int.from_bytes(frame[ip + 6 : ip + 8], "big")
    if not flags_offset & 0x3FFF:  # neither MF nor an offset
        return None
    total = int.from_bytes(frame[ip + 2 : ip + 4], "big")
    if total < header_len or ip + total > len(frame):
        raise PacketError("IPv4 total length outside the frame")
    return Fragment(
        int.from_bytes(frame[ip + 12 : ip + 16], "big"),
        int.from_bytes(frame[ip + 16 : ip + 20], "big"),
        frame[ip + 9],
        int.from_bytes(frame[ip + 4 : ip + 6], "big"),
        not flags_offset & 0x1FFF,
        (flags_offset & 0x1FFF) * 8,
        total - header_len,
        not flags_offset & 0x2000,
        header_len,
    )


# The whole transport header a first fragment must hold (RFC 1858 sec. 3.1).
L4_HEADER_MIN = {TCP: 20, UDP: 8, ICMP: 8}


def fragment_unsafe(frame: bytes, fragment: Fragment) -> bool:
    """IN-IP-9 (swpath's parser, packet.h): a fragment that reaches past
    65,535 bytes (the ping of death), a TCP fragment at offset 8 bytes (RFC
    1858 sec. 3.2: it rewrites the flags), or a first fragment too short for
    its whole transport header, TCP options included (RFC 1858 sec. 3.1, RFC
    3128: the rest of the header would come apart from the ports the NAT
    checked). PacketError for a TCP data offset below 5 words."""
    if fragment.offset + fragment.header_len + fragment.length > 0xFFFF:
        return True
    if fragment.protocol == TCP and fragment.offset == 8:
        return True
    if not fragment.first:
        return False
    need = L4_HEADER_MIN.get(fragment.protocol, 0)
    if fragment.protocol == TCP and fragment.length >= need:
        data_offset = (frame[ETH_HEADER + fragment.header_len + 12] >> 4) * 4
        if data_offset < need:
            raise PacketError("TCP data offset below 5 words")
        need = data_offset
    return fragment.length < need


def parse_flow(frame: bytes) -> FlowKey:
    ip = ETH_HEADER
    header_len = ipv4_header_length(frame)
    if int.from_bytes(frame[ip + 6 : ip + 8], "big") & 0x1FFF:
        raise PacketError("non-first fragment: no L4 header")
    protocol = frame[ip + 9]
    src = int.from_bytes(frame[ip + 12 : ip + 16], "big")
    dst = int.from_bytes(frame[ip + 16 : ip + 20], "big")
    l4 = ip + header_len
    if protocol in (TCP, UDP):
        if len(frame) < l4 + 4:
            raise PacketError("truncated L4 ports")
        sport = int.from_bytes(frame[l4 : l4 + 2], "big")
        dport = int.from_bytes(frame[l4 + 2 : l4 + 4], "big")
        return FlowKey(protocol, src, dst, sport, dport)
    if protocol == ICMP:
        if len(frame) < l4 + 8:
            raise PacketError("truncated ICMP header")
        if frame[l4] not in (ICMP_ECHO_REQUEST, ICMP_ECHO_REPLY):
            raise PacketError(f"ICMP type {frame[l4]} is not an echo message")
        identifier = int.from_bytes(frame[l4 + 4 : l4 + 6], "big")
        return FlowKey(protocol, src, dst, identifier, identifier)
    return FlowKey(protocol, src, dst, 0, 0)


def tcp_flags(frame: bytes) -> int:
    """The flags byte of a TCP segment parse_flow accepted (FIN 0x01, SYN 0x02,
    RST 0x04, ...); 0 when the frame is too short to hold it."""
    l4 = ETH_HEADER + (frame[ETH_HEADER] & 0x0F) * 4
    return frame[l4 + 13] if len(frame) > l4 + 13 else 0
