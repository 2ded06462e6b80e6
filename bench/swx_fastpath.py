"""The hand-written NAT fast path (swpath/swx/bench/nat_fastpath.spec):
its sessions as table entries, the frames that exercise it, and the check of
what left it, byte for byte against scapy (issue #33).

Flows are bench_swpath's and bench_swx's: flow i is 10.128.0.0 + i % 4096,
port 1024 + i // 4096, to 192.0.2.1:53, translated to 203.0.113.(i % 256),
port 1024 + i % 60000, and leaves by port 1 with the next hop's MACs.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet
from scapy.utils import rdpcap, wrpcap

SPEC = Path(__file__).resolve().parent.parent / "swpath" / "swx" / "bench" / "nat_fastpath.spec"
TABLE = "nat_in2out"
HOSTS = 4096
PEER, PEER_PORT = "192.0.2.1", 53
PORT_OUT, PORT_FULL = 1, 3  # the outside, and the full program behind the fast path
SMAC, DMAC = "02:00:00:00:00:02", "02:00:00:00:00:fe"  # the next hop (bench_swx's route)
IN_SMAC, IN_DMAC = "02:00:00:00:10:02", "02:00:00:00:00:01"
PROTO_TCP, PROTO_UDP = 6, 17


@dataclass(frozen=True)
class Flow:
    src: int
    sport: int
    proto: int
    nat_src: int
    nat_sport: int


def flow(i: int, proto: int = PROTO_UDP) -> Flow:
    return Flow(
        0x0A800000 + i % HOSTS, 1024 + i // HOSTS, proto, 0xCB007100 + i % 256, 1024 + i % 60000
    )


def ip_text(addr: int) -> str:
    return ".".join(str(b) for b in addr.to_bytes(4, "big"))


def entry(f: Flow) -> str:
    """The session in DPDK's table entry text (bench_swx_spec -t)."""
    action = "rewrite_src_tcp" if f.proto == PROTO_TCP else "rewrite_src_udp"
    return (
        f"match 0x{f.src:08x} 0xc0000201 0x{f.proto:02x} 0x{f.sport:04x} 0x{PEER_PORT:04x} "
        f"action {action} addr 0x{f.nat_src:08x} port 0x{f.nat_sport:04x} port_out {PORT_OUT} "
        f"smac 0x{SMAC.replace(':', '')} dmac 0x{DMAC.replace(':', '')}"
    )


def write_entries(path: Path, flows: Iterable[Flow]) -> int:
    lines = [entry(f) for f in flows]
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


def packet(f: Flow, ttl: int = 64, tcp_flags: str = "A", payload: bytes = b"") -> Packet:
    """Flow f's packet as it arrives from inside (64 bytes on the wire for
    UDP without payload, as bench_swpath's)."""
    l4: Packet
    if f.proto == PROTO_TCP:
        l4 = TCP(sport=f.sport, dport=PEER_PORT, flags=tcp_flags, seq=1000, ack=2000)
    else:
        l4 = UDP(sport=f.sport, dport=PEER_PORT)
    pkt = (
        Ether(src=IN_SMAC, dst=IN_DMAC)
        / IP(src=ip_text(f.src), dst=PEER, ttl=ttl, id=7)
        / l4
        / (payload or b"\x00" * (18 if f.proto == PROTO_UDP else 6))
    )
    return Ether(bytes(pkt))  # checksums filled in


def translated(f: Flow, sent: Packet) -> bytes:
    """What the NAT must send for `sent` (scapy recomputes both checksums)."""
    out = Ether(bytes(sent))
    out[Ether].src, out[Ether].dst = SMAC, DMAC
    out[IP].src, out[IP].ttl = ip_text(f.nat_src), out[IP].ttl - 1
    l4 = out[TCP] if f.proto == PROTO_TCP else out[UDP]
    l4.sport = f.nat_sport
    del out[IP].chksum
    del l4.chksum
    return bytes(out)


def handed_on(udp: Flow, tcp: Flow, miss: Flow) -> list[Packet]:
    """A packet for each reason the fast path hands one on unchanged
    (nat_fastpath.spec's header), each of a session it holds but the miss."""
    eth = Ether(src=IN_SMAC, dst=IN_DMAC)
    ip = {"src": ip_text(udp.src), "dst": PEER, "id": 9}
    tcp_ip = {"src": ip_text(tcp.src), "dst": PEER, "id": 9}
    u = UDP(sport=udp.sport, dport=PEER_PORT)
    pad = b"\x00" * 18
    packets = [
        packet(miss),
        eth / IP(**ip, ttl=1) / u / pad,  # TTL (IN-IP-7)
        eth / IP(**ip, chksum=0x1234) / u / pad,  # header checksum (IN-IP-3)
        eth / IP(**ip, flags="MF") / u / pad,  # a first fragment (IN-IP-8)
        eth / IP(**ip, frag=3, proto=17) / pad,  # a later one
        eth / IP(**ip, options=b"\x01\x01\x01\x00") / u / pad,  # options (IN-IP-4)
        eth / IP(**ip) / UDP(sport=udp.sport, dport=PEER_PORT, chksum=0) / pad,  # RFC 768
        eth / IP(**ip) / UDP(sport=udp.sport, dport=PEER_PORT, len=200) / pad,  # IN-UDP-1
        eth / IP(**ip) / u / (b"\x00" * 1480),  # over the smallest MTU
        eth / IP(**ip, proto=47) / pad,  # another protocol (IN-L4-2)
        Ether(src=IN_SMAC, dst=IN_DMAC, type=0x86DD) / (b"\x60" + b"\x00" * 45),
    ]
    for flags in ("S", "SA", "FA", "R", "RA", "UA", "SF", ""):  # TCP state, IN-TCP-2
        packets.append(eth / IP(**tcp_ip) / TCP(sport=tcp.sport, dport=PEER_PORT, flags=flags))
    for offset in (4, 15):  # IN-TCP-1: below 5 words, past the segment
        tcp_header = TCP(sport=tcp.sport, dport=PEER_PORT, flags="A", dataofs=offset)
        packets.append(eth / IP(**tcp_ip) / tcp_header / (b"\x00" * 6))
    return [Ether(bytes(p)) for p in packets]


def check_packets(per_proto: int) -> list[tuple[Flow | None, Packet]]:
    """What the output check sends: a packet of each of per_proto UDP and
    per_proto TCP sessions, some with payload, TCP with options and PSH,
    ECE, CWR (all translated), then those handed_on() (flow None)."""
    udp = [flow(i) for i in range(per_proto)]
    tcp = [flow(per_proto + i, PROTO_TCP) for i in range(per_proto)]
    sent: list[tuple[Flow | None, Packet]] = [(f, packet(f)) for f in udp + tcp]
    sent += [(f, packet(f, payload=bytes(range(200)))) for f in udp[:8]]
    sent += [(f, packet(f, tcp_flags="PAEC", payload=b"data" * 50)) for f in tcp[:8]]
    for f in tcp[8:16]:
        opts = [("NOP", None), ("NOP", None), ("Timestamp", (1, 2))]
        pkt = (
            Ether(src=IN_SMAC, dst=IN_DMAC)
            / IP(src=ip_text(f.src), dst=PEER, ttl=9)
            / TCP(sport=f.sport, dport=PEER_PORT, flags="A", options=opts)
            / b"payload"
        )
        sent.append((f, Ether(bytes(pkt))))
    miss = flow(2 * per_proto + 1)
    sent += [(None, p) for p in handed_on(udp[0], tcp[0], miss)]
    return sent


def write_established_frames(path: Path, flows: list[Flow]) -> None:
    """One frame a flow, written with struct rather than scapy: 64k of
    them in a second (the benchmark's input)."""
    frames = [bytes(packet(flows[0]))]
    template = bytearray(frames[0])
    for f in flows[1:]:
        template[26:30] = f.src.to_bytes(4, "big")
        template[24:26] = b"\x00\x00"
        template[24:26] = checksum(bytes(template[14:34])).to_bytes(2, "big")
        template[34:36] = f.sport.to_bytes(2, "big")
        template[40:42] = b"\x00\x00"
        template[40:42] = l4_checksum(bytes(template[14:])).to_bytes(2, "big")
        frames.append(bytes(template))
    write_pcap(path, frames)


def checksum(data: bytes) -> int:
    """RFC 1071."""
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def l4_checksum(ip_packet: bytes) -> int:
    """The UDP or TCP checksum of an IPv4 packet without options (RFC 768,
    RFC 793: over the pseudo-header); 0 is sent as 0xffff."""
    total = struct.unpack("!H", ip_packet[2:4])[0]
    seg = ip_packet[20:total]
    pseudo = ip_packet[12:20] + struct.pack("!BBH", 0, ip_packet[9], len(seg))
    return checksum(pseudo + seg) or 0xFFFF


def write_pcap(path: Path, frames: list[bytes]) -> None:
    with path.open("wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for frame in frames:
            out.write(struct.pack("<IIII", 0, 0, len(frame), len(frame)))
            out.write(frame)


def write_scapy_pcap(path: Path, packets: list[Packet]) -> None:
    wrpcap(str(path), packets)


def read_frames(path: Path) -> list[bytes]:
    return [bytes(p) for p in rdpcap(str(path))] if path.exists() else []


def differences(sent: list[tuple[Flow | None, Packet]], out_dir: Path) -> list[str]:
    """What is wrong with what left the fast path, given what was sent: a
    flow's packet must leave by PORT_OUT exactly as translated() says,
    anything else (flow None) by PORT_FULL unchanged, nothing by another
    port; an empty list when all is right. Order is not compared: the
    pipeline's threads interleave packets around table lookups."""
    expect = {
        PORT_OUT: [translated(f, p) for f, p in sent if f is not None],
        PORT_FULL: [bytes(p) for f, p in sent if f is None],
    }
    problems = []
    for port in range(4):
        want = sorted(expect.get(port, []))
        got = sorted(read_frames(out_dir / f"port{port}.pcap"))
        if len(want) != len(got):
            problems.append(f"port {port}: {len(got)} frames, expected {len(want)}")
        problems += [f"port {port}: unexpected {g.hex()}" for g in got if g not in want]
        problems += [f"port {port}: missing {w.hex()}" for w in want if w not in got]
    return problems
