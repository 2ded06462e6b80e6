"""A structure-aware packet fuzzer, on every PTF target: seeded random
mutations of valid packets (established flows and new ones, both
directions) and of the input contract's variants (test_input_contract.py),
and the invariants every packet that leaves the NAT must hold
(docs/nat-behavior.md, IN-*):

- a well-formed IPv4 header (version 4, IHL 5 or more, a total length within
  the frame, a valid checksum) or an ARP frame, nothing else;
- TCP and UDP headers as the contract accepts them (data offset, flags,
  lengths, no port 0) in unfragmented packets;
- no fragment the contract drops (IN-IP-9): a first fragment without its
  whole transport header, one past 65,535 bytes, TCP at offset 8;
- no martian or non-unicast address; towards the outside, never an inside
  source: only addresses the NAT owns or its own interface address;
- towards an inside host, an inside destination;

and, after the run, that the NAT still translates a valid flow.
`make test` runs FUZZ_PACKETS (2,000) from seed 1; `make fuzz` runs many more
(`ptf-tests/run.py --fuzz-packets N --fuzz-seed S ... fuzz`).
"""

from __future__ import annotations

import ipaddress
import random
from pathlib import Path
from typing import Any, ClassVar

from base import INSIDE, INSIDE2, OUTSIDE
from ptf import testutils
from ptf.testutils import group
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import checksum
from test_input_contract import HOST, VALID_TCP_FLAGS, Flow, InputContract, variants

FUZZ_PACKETS = 2000
INSIDE_NET = ipaddress.ip_network("10.0.0.0/8")
# configs/ptf.toml: the pools, the SNAT `to` address and the DNAT address,
# and the NAT's outside interface address (its own ICMP errors).
NAT_OWNED = [ipaddress.ip_network(n) for n in ("203.0.113.0/27", "203.0.113.80/32")]
NAT_OUTSIDE_ADDRESS = ipaddress.ip_address("198.51.100.253")
# The inside interface addresses: the NAT's own ICMP errors to a sender on
# an inside link come from them, whatever that sender's address.
NAT_INSIDE_ADDRESSES = {ipaddress.ip_address(a) for a in ("10.0.0.1", "10.0.1.1")}
MARTIANS = [
    ipaddress.ip_network(n) for n in ("0.0.0.0/8", "127.0.0.0/8", "224.0.0.0/4", "240.0.0.0/4")
]

# Header fields the mutator aims at: (offset from the IP header, size in bytes).
FIELDS = {
    "version_ihl": (0, 1),
    "tos": (1, 1),
    "total_length": (2, 2),
    "id": (4, 2),
    "flags_offset": (6, 2),
    "ttl": (8, 1),
    "protocol": (9, 1),
    "src": (12, 4),
    "dst": (16, 4),
    "l4_sport": (20, 2),
    "l4_dport": (22, 2),
    "udp_length": (24, 2),
    "tcp_doff": (32, 1),
    "tcp_flags": (33, 1),
    "icmp_type": (20, 1),
}


def _boundaries(size: int, rng: random.Random) -> int:
    top = (1 << (8 * size)) - 1
    return rng.choice([0, 1, 2, top, top - 1, top >> 1, rng.randrange(top + 1)])


def _fix_ip_checksum(frame: bytearray) -> None:
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return
    ihl = (frame[14] & 0x0F) * 4
    if ihl < 20 or len(frame) < 14 + ihl:
        return
    frame[24:26] = b"\0\0"
    frame[24:26] = checksum(bytes(frame[14 : 14 + ihl])).to_bytes(2, "big")


def mutate(rng: random.Random, frame: bytes) -> bytes:
    """One or two structure-aware mutations; the IPv4 checksum made right
    most of the time, so that the mutation reaches the checks behind it."""
    b = bytearray(frame)
    for _ in range(rng.choice((1, 1, 2))):
        kind = rng.randrange(5)
        if kind == 0 and len(b) > 14:  # a header field to a boundary value
            offset, size = rng.choice(list(FIELDS.values()))
            at = 14 + offset
            if at + size <= len(b):
                b[at : at + size] = _boundaries(size, rng).to_bytes(size, "big")
        elif kind == 1:  # random bytes in the headers
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(min(len(b), 14 + 60))
                b[i] = rng.randrange(256)
        elif kind == 2 and len(b) > 15:  # cut short (a link sends 14 bytes at least)
            del b[rng.randrange(14, len(b)) :]
        elif kind == 3:  # trailing bytes
            b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        else:  # another ethertype
            b[12:14] = rng.choice((b"\x81\x00", b"\x86\xdd", b"\x08\x06", b"\x88\xcc"))
    if rng.random() < 0.8:
        _fix_ip_checksum(b)
    return bytes(b)


def _in(address: str, networks: list[Any]) -> bool:
    ip = ipaddress.ip_address(address)
    return any(ip in n for n in networks)


def violations(port: int, frame: bytes) -> list[str]:
    """What is wrong with a packet that left the NAT on this PTF port."""
    if len(frame) < 14:
        return ["a frame shorter than Ethernet"]
    ethertype = frame[12:14]
    if ethertype == b"\x08\x06":
        return []
    if ethertype != b"\x08\x00":
        return [f"ethertype 0x{ethertype.hex()}"]
    ip = frame[14:]
    if len(ip) < 20 or ip[0] >> 4 != 4 or ip[0] & 0x0F < 5:
        return ["a broken IPv4 header"]
    ihl = (ip[0] & 0x0F) * 4
    total = int.from_bytes(ip[2:4], "big")
    if total < ihl or total > len(ip) or len(ip) < ihl:
        return [f"total length {total} (header {ihl}, frame holds {len(ip)})"]
    if checksum(ip[:ihl]) != 0:
        return ["a bad IPv4 header checksum"]
    problems = []
    pkt = IP(ip[:total])
    src, dst = str(pkt.src), str(pkt.dst)
    if _in(src, MARTIANS) or _in(dst, MARTIANS) or dst == "255.255.255.255":
        problems.append(f"martian or non-unicast {src} -> {dst}")
    if port == OUTSIDE:
        if _in(src, [INSIDE_NET]):
            problems.append(f"untranslated inside source {src}")
        elif not _in(src, NAT_OWNED) and ipaddress.ip_address(src) != NAT_OUTSIDE_ADDRESS:
            problems.append(f"a source the NAT does not own: {src}")
    elif not _in(dst, [INSIDE_NET]) and ipaddress.ip_address(src) not in NAT_INSIDE_ADDRESSES:
        problems.append(f"to {dst} on an inside port")
    fragment = pkt.flags.MF or pkt.frag
    l4 = bytes(ip[ihl:total])
    if fragment:
        problems += _fragment_problems(pkt.proto, pkt.frag * 8, total, l4)
    if pkt.proto == 6 and not fragment:
        doff = (l4[12] >> 4) * 4 if len(l4) >= 20 else 0
        if len(l4) < 20 or doff < 20 or doff > len(l4):
            problems.append(f"a TCP header of {doff} bytes in {len(l4)}")
        elif l4[13] & 0x37 not in VALID_TCP_FLAGS:
            problems.append(f"TCP flags 0x{l4[13]:02x}")
        elif pkt[TCP].sport == 0 or pkt[TCP].dport == 0:
            problems.append("TCP port 0")
    if pkt.proto == 17 and not fragment:
        length = int.from_bytes(l4[4:6], "big") if len(l4) >= 8 else 0
        if len(l4) < 8 or length < 8 or length > len(l4):
            problems.append(f"UDP length {length} in {len(l4)}")
        elif pkt[UDP].sport == 0 or pkt[UDP].dport == 0:
            problems.append("UDP port 0")
    return problems


def _fragment_problems(proto: int, offset: int, total: int, l4: bytes) -> list[str]:
    """IN-IP-9: what no fragment that leaves may be."""
    if offset + total > 0xFFFF:
        return [f"a fragment past 65,535 bytes ({offset} + {total})"]
    if proto == 6 and offset == 8:
        return ["a TCP fragment at offset 8"]
    need = {6: 20, 17: 8, 1: 8}.get(proto, 0)
    if offset == 0 and proto == 6 and len(l4) >= 20:
        need = max(need, (l4[12] >> 4) * 4)
    if offset == 0 and len(l4) < need:
        return [f"a first fragment of {len(l4)} bytes, short of its {need}-byte header"]
    return []


@group("fuzz")
class FuzzedInputKeepsTheInvariants(InputContract):
    """Mutated packets from both sides of established TCP, UDP and echo
    sessions, of new flows and of the contract's variants; every packet that
    comes out is checked, and a valid flow still works afterwards."""

    CONFIG: ClassVar[dict[str, Any]] = {"timeouts": {"udp": 120}}

    def runTest(self) -> None:
        params = testutils.test_params_get()
        count = int(params.get("fuzz_packets", FUZZ_PACKETS))
        seed = int(params.get("fuzz_seed", 1))
        rng = random.Random(seed)
        # PTF keeps 100 packets a port and drops the oldest: every packet out
        # must be checked, so the queues hold all of them
        self.dataplane.set_qlen(1_000_000)
        external = self.establish()
        inside = [self.inside_flow(p) for p in ("tcp", "udp", "icmp")]
        outside = [self.outside_flow(p, external[p]) for p in ("tcp", "udp", "icmp")]
        # valid packets, mutated, reach the translation paths; the contract's
        # variants, mutated, its corners: picked 60/40
        valid: list[tuple[int, bytes]] = []
        invalid: list[tuple[int, bytes]] = []
        for flows, port in ((inside, INSIDE), (outside, OUTSIDE)):
            valid += [(port, bytes(f.packet())) for f in flows]
            invalid += [(port, v.frame) for v in variants(flows, port == INSIDE)]
        # new flows too: a mutation of one may open a session
        for sport in range(41000, 41016):
            new = Flow("udp", HOST, "198.51.100.10", sport, 53, inside[1].ether)
            valid.append((INSIDE, bytes(new.packet())))
        bad: list[str] = []
        seen = 0
        received = sum(self.dataplane.rx_counters.values())
        for i in range(count):
            port, frame = rng.choice(valid if rng.random() < 0.6 else invalid)
            testutils.send_packet(self, port, mutate(rng, frame))
            if i % 500 == 499:
                seen += self.check_out(bad)
        seen += self.check_out(bad)
        self.assertEqual(seen, sum(self.dataplane.rx_counters.values()) - received, "all checked")
        report = Path(params["workdir"]) / "fuzz-violations.txt"
        summary = f"# seed {seed}: {count} sent, {seen} out, {len(bad)} broke an invariant\n"
        report.write_text(summary + "".join(f"{line}\n" for line in bad))
        self.assertEqual(
            bad[:10],
            [],
            f"seed {seed}: {len(bad)} of {seen} packets out broke an invariant (all: {report})",
        )
        # still translating
        sentinel = self.inside_flow("udp").packet()
        self.send(INSIDE, sentinel)
        got = self.receive(OUTSIDE)
        self.assertEqual((got[IP].src, got[UDP].sport), external["udp"])

    def check_out(self, bad: list[str]) -> int:
        """Checks every packet that left the NAT until it has been quiet a while."""
        seen = 0
        while True:
            result = self.dataplane.poll(timeout=0.5)
            if isinstance(result, self.dataplane.PollFailure):
                return seen
            seen += 1
            for problem in violations(result.port, bytes(result.packet)):
                where = {INSIDE: "inside", INSIDE2: "inside2", OUTSIDE: "outside"}[result.port]
                bad.append(f"{where}: {problem}: {Ether(result.packet).summary()}")
