"""The ICMP errors the NAT originates itself, for the P4 path (swpath builds the
same bytes in C, swpath/src/dataplane/icmp_gen.c). No I/O: the controller passes frames and
the time in and sends what comes out (packet-out, mode ROUTE).

A router must report what it drops (RFC 1812 sec. 4.3.2, RFC 5508):
- time exceeded (11/0) for a packet that would leave with TTL 0 (sec. 5.3.1),
  which is what makes the NAT a hop in traceroute;
- destination unreachable, administratively prohibited (3/13) for a new flow
  refused for want of a port or over a per-host limit ("out of resources:
  SHOULD send", docs/nat-behavior.md ICMP-4), unless configured off;
- fragmentation needed (3/4) with the next-hop MTU (RFC 1191) for a DF packet
  too big for the egress link (RFC 4787 REQ-13: the NAT never fragments here).

The error comes from the NAT's address on the interface the packet arrived on,
goes back to the packet's source and quotes the packet as it arrived, up to 576
bytes in all (sec. 4.3.2.3). No error answers an ICMP error, a fragment other
than the first, a link-layer or IP broadcast or multicast, or a source that is
not one host (sec. 4.3.2.7). A token bucket bounds the rate (sec. 4.3.2.8).
"""

from __future__ import annotations

import enum
from collections import Counter

from quicknat.config.model import Config, IcmpErrors
from quicknat.packet import ETH_HEADER, ICMP, PacketError, checksum, ipv4_header_length

MAX_ERROR = 576  # bytes of IP datagram an error may take (RFC 1812 sec. 4.3.2.3)
ERROR_HEADERS = 20 + 8  # the error's own IPv4 and ICMP headers
ERROR_TTL = 64
# Precedence 6, internetwork control (RFC 1812 sec. 4.3.2.5 / 5.3.3.2), as Linux.
ERROR_TOS = 0xC0
ICMP_ERROR_TYPES = frozenset({3, 4, 5, 11, 12})  # unreachable, quench, redirect, time, parameter


class Kind(enum.Enum):
    """(type, code) of each error the NAT originates."""

    TIME_EXCEEDED = (11, 0)
    PROHIBITED = (3, 13)
    FRAG_NEEDED = (3, 4)


class Suppressed(Exception):
    """RFC 1812 sec. 4.3.2.7 forbids an error about this packet; the message says why."""


def _u16(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 2], "big")


def _unicast_source(address: int) -> bool:
    """Whether a source address names one host: not 0/8 ("this network"), 127/8,
    multicast (224/4) or class E and broadcast (240/4)."""
    first = address >> 24
    return first not in (0, 127) and first < 224


def _check(frame: bytes) -> tuple[int, int]:
    """(IPv4 header length, bytes of datagram to quote), or Suppressed / PacketError."""
    ihl = ipv4_header_length(frame)
    ip = ETH_HEADER
    total = _u16(frame, ip + 2)
    if total < ihl or ETH_HEADER + total > len(frame):
        raise PacketError("IPv4 total length does not match the frame")
    if frame[0] & 1:
        raise Suppressed("link-layer broadcast or multicast")
    dst = int.from_bytes(frame[ip + 16 : ip + 20], "big")
    if dst >> 28 == 0xE or dst == 0xFFFFFFFF:
        raise Suppressed("IP multicast or broadcast destination")
    if not _unicast_source(int.from_bytes(frame[ip + 12 : ip + 16], "big")):
        raise Suppressed("source is not a unicast address")
    if _u16(frame, ip + 6) & 0x1FFF:
        raise Suppressed("fragment other than the first")
    if frame[ip + 9] == ICMP and (total == ihl or frame[ip + ihl] in ICMP_ERROR_TYPES):
        raise Suppressed("an ICMP error")
    return ihl, min(total, MAX_ERROR - ERROR_HEADERS)


def build(
    frame: bytes, kind: Kind, source: int, ident: int, mtu: int = 0, ttl: int = ERROR_TTL
) -> bytes:
    """The Ethernet frame of the error about `frame` (as it arrived), from `source`.
    `mtu` is the next-hop MTU of FRAG_NEEDED. The Ethernet addresses are the
    arriving frame's swapped; the data path's routing sets the real ones.
    Raises Suppressed, or PacketError for a frame that is not whole IPv4."""
    _, quoted = _check(frame)
    ip = ETH_HEADER
    icmp_type, code = kind.value
    rest = mtu if kind is Kind.FRAG_NEEDED else 0  # RFC 1191: unused(16), next-hop MTU(16)
    icmp = bytearray(bytes([icmp_type, code, 0, 0]) + rest.to_bytes(4, "big"))
    icmp += frame[ip : ip + quoted]
    icmp[2:4] = checksum(icmp).to_bytes(2, "big")
    header = bytearray(20)
    header[0] = 0x45
    header[1] = ERROR_TOS
    header[2:4] = (20 + len(icmp)).to_bytes(2, "big")
    header[4:6] = (ident & 0xFFFF).to_bytes(2, "big")
    header[8] = ttl
    header[9] = ICMP
    header[12:16] = source.to_bytes(4, "big")
    header[16:20] = frame[ip + 12 : ip + 16]
    header[10:12] = checksum(header).to_bytes(2, "big")
    return bytes(frame[6:12] + frame[0:6] + frame[12:14] + header + icmp)


class TokenBucket:
    """`rate` tokens a second, at most `burst` banked; one per error."""

    def __init__(self, rate: int, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.last: float | None = None

    def take(self, now: float) -> bool:
        if self.last is not None:
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class Originator:
    """The controller's ICMP errors: which address each comes from, the rate
    limit, and the counters (`icmp_gen.*` in `quicknat stats`)."""

    def __init__(self, config: Config, stats: Counter[str]) -> None:
        self.settings: IcmpErrors = config.icmp
        self.address = {
            i.port: i.address.address
            for i in config.interfaces
            if i.port is not None and i.address is not None
        }
        self.bucket = TokenBucket(self.settings.rate, self.settings.burst)
        self.stats = stats
        self.ident = 0

    def error(self, frame: bytes, port: int, kind: Kind, now: float, mtu: int = 0) -> bytes | None:
        """The error to send back for `frame`, which arrived on `port`, or None
        (suppressed, rate-limited, malformed: each counted)."""
        source = self.address.get(port)
        if source is None:
            self.stats["icmp_gen.no_address"] += 1
            return None
        try:
            _check(frame)
        except Suppressed:
            self.stats["icmp_gen.suppressed"] += 1
            return None
        except PacketError:
            self.stats["icmp_gen.malformed"] += 1
            return None
        if not self.bucket.take(now):
            self.stats["icmp_gen.rate_limited"] += 1
            return None
        self.ident = (self.ident + 1) & 0xFFFF
        self.stats[f"icmp_gen.sent.{kind.name.lower()}"] += 1
        # The switch routes a ROUTE packet-out like a forwarded packet, TTL
        # decremented once: it leaves with ERROR_TTL, as swpath's errors do.
        return build(frame, kind, source, self.ident, mtu, ttl=ERROR_TTL + 1)
