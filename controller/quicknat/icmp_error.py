"""ICMP error translation for the P4 path (RFC 5508 sec. 4; swpath does the same
in C, swpath/src/dataplane/icmp_error.h).

An ICMP error (destination unreachable, time exceeded, parameter problem) quotes
the IP header and first 8 bytes of a packet one of our sessions sent, as it was
after translation. The switch's tables cannot match the quote, so the switch
punts the error (ICMP_ERROR) and the controller translates it here: the outer
header gets the session's rewrite, the quoted header and its ports or
identifier get the rewrite undone, the quoted checksums are adjusted and the
ICMP checksum recomputed; type and code are unchanged. Nothing here touches the
session: errors never create or refresh one (RFC 5508 REQ-5, RFC 7857 sec. 2.3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from quicknat.config.model import Zone
from quicknat.nat.session import FlowKey, Rewrite, Session
from quicknat.packet import (
    ETH_HEADER,
    ICMP,
    ICMP_ECHO_REPLY,
    ICMP_ECHO_REQUEST,
    IPV4_MIN_HEADER,
    TCP,
    UDP,
    PacketError,
    checksum,
    checksum_adjust,
    ipv4_header_length,
)

ERROR_TYPES = frozenset({3, 11, 12})  # destination unreachable, time exceeded, parameter problem
ICMP_HEADER = 8


@dataclass(frozen=True, slots=True)
class _Quote:
    ip: int  # offset of the outer IPv4 header
    l4: int  # offset of the outer ICMP header
    end: int  # end of the outer IPv4 datagram
    inner: int  # offset of the quoted IPv4 header
    inner_l4: int  # offset of the quoted L4 header
    protocol: int
    src: int
    dst: int
    sport: int
    dport: int

    def reply_key(self) -> FlowKey:
        """The quoted packet reversed: the key of the packets the error is about
        the replies to, i.e. of the packets the error travels with."""
        return FlowKey(self.protocol, self.dst, self.src, self.dport, self.sport)


def _u16(frame: bytes | bytearray, at: int) -> int:
    return int.from_bytes(frame[at : at + 2], "big")


def _u32(frame: bytes | bytearray, at: int) -> int:
    return int.from_bytes(frame[at : at + 4], "big")


def _parse(frame: bytes | bytearray) -> _Quote:
    ip = ETH_HEADER
    ihl = ipv4_header_length(frame)
    end = ip + _u16(frame, ip + 2)
    if end > len(frame) or end < ip + ihl:
        raise PacketError("IPv4 total length does not match the frame")
    if _u16(frame, ip + 6) & 0x3FFF:
        raise PacketError("fragment")
    if frame[ip + 9] != ICMP:
        raise PacketError("not ICMP")
    l4 = ip + ihl
    if end < l4 + ICMP_HEADER + IPV4_MIN_HEADER:
        raise PacketError("truncated ICMP error")
    if frame[l4] not in ERROR_TYPES:
        raise PacketError(f"ICMP type {frame[l4]} is not an error")
    inner = l4 + ICMP_HEADER
    inner_ihl = (frame[inner] & 0x0F) * 4
    if frame[inner] >> 4 != 4 or inner_ihl < IPV4_MIN_HEADER:
        raise PacketError("quoted packet: bad IPv4 version or header length")
    inner_l4 = inner + inner_ihl
    if end < inner_l4 + 8:
        raise PacketError("quoted packet: fewer than 8 bytes of its L4 header")
    protocol = frame[inner + 9]
    if protocol in (TCP, UDP):
        sport, dport = _u16(frame, inner_l4), _u16(frame, inner_l4 + 2)
    elif protocol == ICMP and frame[inner_l4] in (ICMP_ECHO_REQUEST, ICMP_ECHO_REPLY):
        sport = dport = _u16(frame, inner_l4 + 4)
    else:
        raise PacketError(f"quoted packet: protocol {protocol} has no session")
    return _Quote(
        ip,
        l4,
        end,
        inner,
        inner_l4,
        protocol,
        _u32(frame, inner + 12),
        _u32(frame, inner + 16),
        sport,
        dport,
    )


def _put(frame: bytearray, at: int, value: int, size: int) -> None:
    frame[at : at + size] = value.to_bytes(size, "big")


def _rewrite_quoted(frame: bytearray, q: _Quote, src: bool, address: int, port: int) -> None:
    """Rewrite the quoted source (src) or destination endpoint, keeping whatever
    quoted checksums are present right."""
    addr_at = q.inner + (12 if src else 16)
    old_addr = _u32(frame, addr_at)
    # the echo identifier stands for both ports
    port_at = q.inner_l4 + (4 if q.protocol == ICMP else 0 if src else 2)
    old_port = _u16(frame, port_at)
    _put(frame, addr_at, address, 4)
    _put(frame, port_at, port, 2)
    if q.protocol == UDP:
        at = q.inner_l4 + 6
        if _u16(frame, at):  # 0: no checksum, and it stays so (RFC 768)
            value = checksum_adjust(
                checksum_adjust(_u16(frame, at), old_addr, address, 2), old_port, port, 1
            )
            _put(frame, at, value or 0xFFFF, 2)
    elif q.protocol == TCP:
        at = q.inner_l4 + 16
        if q.end >= at + 2:  # quoted only when 18 or more bytes of TCP are
            value = checksum_adjust(
                checksum_adjust(_u16(frame, at), old_addr, address, 2), old_port, port, 1
            )
            _put(frame, at, value, 2)
    else:
        at = q.inner_l4 + 2  # the quoted echo's checksum covers no addresses
        _put(frame, at, checksum_adjust(_u16(frame, at), old_port, port, 1), 2)


def _session_rewrite(
    zone: Zone, key: FlowKey, lookup: Callable[[FlowKey], Session | None]
) -> Rewrite | None:
    session = lookup(key)
    if session is None:
        return None
    if key == session.in2out:
        return session.in2out_rewrite if zone is Zone.INSIDE else None
    # A hairpinned error comes from inside with the in2out key of the session that
    # sent the quoted packet on (its partner's host is the error's destination).
    return session.out2in_rewrite if zone is Zone.OUTSIDE else None


def translate(
    frame: bytes, zone: Zone, lookup: Callable[[FlowKey], Session | None]
) -> bytes | None:
    """The translated error, or None when it belongs to no session (the caller
    drops and counts it). Raises PacketError for a malformed error."""
    q = _parse(frame)
    # The error travels back to the quoted packet's source.
    if _u32(frame, q.ip + 16) != q.src:
        return None
    rewrite = _session_rewrite(zone, q.reply_key(), lookup)
    if rewrite is None:
        return None
    out = bytearray(frame)
    if rewrite.src is not None:
        _put(out, q.ip + 12, rewrite.src.address, 4)
        _rewrite_quoted(out, q, False, rewrite.src.address, rewrite.src.port)
    if rewrite.dst is not None:
        _put(out, q.ip + 16, rewrite.dst.address, 4)
        _rewrite_quoted(out, q, True, rewrite.dst.address, rewrite.dst.port)
    _put(out, q.inner + 10, 0, 2)
    _put(out, q.inner + 10, checksum(out[q.inner : q.inner_l4]), 2)
    _put(out, q.l4 + 2, 0, 2)
    _put(out, q.l4 + 2, checksum(out[q.l4 : q.end]), 2)
    _put(out, q.ip + 10, 0, 2)
    _put(out, q.ip + 10, checksum(out[q.ip : q.l4]), 2)
    return bytes(out)
