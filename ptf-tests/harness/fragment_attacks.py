"""The fragment attacks of IN-IP-9 (docs/nat-behavior.md), generated for any
flow: one place for the PTF input contract (test_input_contract.py), swpath's
pcap tests (swpath/tests/sp_e2e_fragments.py) and the controller's unit tests
(controller/tests/test_fragment_overlaps.py).

Each attack is a few fragments of one datagram of an established flow: a
valid first fragment, then one that overlaps it and carries another header
(other ports: the flow the NAT did not check), or a teardrop pair, a
duplicate first fragment with other content, a fragment past 65,535 bytes;
or a first fragment too short for its transport header (RFC 1858 sec. 3,
RFC 3128, RFC 5722). `forwarded` names the frames a NAT that sees the
fragments themselves translates and forwards (only ever the valid first
fragment: what comes after an overlap is dropped), and `dropped` how many
it drops under `fragment_overlap`. A NAT whose packet I/O reassembles first
(Linux, for af_packet) forwards nothing of any of them: Linux drops an
overlapping datagram whole, and no attack here completes a datagram.
"""

from __future__ import annotations

from dataclasses import dataclass

from scapy.layers.inet import ICMP, IP, TCP
from scapy.packet import Packet, Raw

BODY = bytes(range(100, 148))  # 48 bytes after the transport header
FIRST = 40  # bytes of data in the valid first fragment (a multiple of 8)


@dataclass(frozen=True)
class Attack:
    name: str  # e.g. "udp overlap-header"
    frames: tuple[bytes, ...]
    forwarded: tuple[int, ...]  # frames a NAT that sees fragments forwards
    dropped: int  # fragments it drops under fragment_overlap
    ident: int  # the IP ID of the attack's datagram


def _data(ip: IP, l4: Packet) -> bytes:
    """The datagram's IP payload: the transport header with its checksum
    over the whole datagram, then BODY."""
    whole = IP(bytes(ip.copy() / l4.copy() / Raw(BODY)))
    return bytes(whole.payload)


def _name(l4: Packet) -> str:
    return "tcp" if TCP in l4 else "icmp" if ICMP in l4 else "udp"


def attacks(ether: Packet, ip: IP, l4: Packet, other: Packet, ident: int) -> list[Attack]:
    """The attacks on the flow of `ip` / `l4` (the headers of a valid packet
    of an established session), each its own datagram from IP ID `ident`
    up; `other` is the same transport header with other ports, the
    flow a rewrite would smuggle in."""
    proto = _name(l4)
    ip = ip.copy()
    ip.proto = {"tcp": 6, "udp": 17, "icmp": 1}[proto]
    good, bad = _data(ip, l4), _data(ip, other)
    result: list[Attack] = []

    def add(name: str, pieces: list[tuple[bytes, int, bool]], fwd: tuple[int, ...], n: int) -> None:
        datagram = ident + len(result)
        frames = []
        for data, start, last in pieces:
            header = ip.copy()
            header.id, header.frag, header.flags = datagram, start // 8, 0 if last else "MF"
            frames.append(bytes(ether.copy() / header / Raw(data)))
        result.append(Attack(f"{proto} {name}", tuple(frames), fwd, n, datagram))

    first = (good[:FIRST], 0, False)
    # RFC 1858 sec. 3.2: a second header over the first; then the real tail,
    # dropped as the rest of a datagram that overlapped
    rewrite, tail = (bad[: FIRST + 8], 0, False), (good[FIRST:], FIRST, True)
    add("overlap-header", [first, rewrite, tail], (0,), 2)
    # partly over the first, from 8 bytes in (TCP: over the flags)
    add("overlap-middle", [first, (bad[8 : FIRST + 8], 8, False)], (0,), 1)
    # the teardrop pair: a last fragment that ends inside the first
    add("teardrop", [first, (good[16:24], 16, True)], (0,), 1)
    # the same bytes again with another header: only the first copy leaves
    add("duplicate-first", [first, (bad[:FIRST], 0, False)], (0,), 1)
    # past 65,535 bytes with its 20-byte header
    add("past-65535", [first, (bytes(16), 65520, True)], (0,), 1)
    # tiny first fragments (RFC 1858 sec. 3.1): TCP without its flags
    for size in (8, 16) if proto == "tcp" else (4,):
        add(f"tiny-first-{size}", [(good[:size], 0, False)], (), 1)
    if proto == "tcp":
        # RFC 3128: a tiny first, then the flags from 8 bytes in
        add("tiny-first-rewrite", [(good[:8], 0, False), (bad[8:FIRST], 8, False)], (), 2)
    return result
