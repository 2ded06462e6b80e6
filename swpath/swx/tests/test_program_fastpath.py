"""The PNA program's fast path (p4src/include/pna/fastpath.spec) decides
nothing the full program would not: every kind of packet, through the
committed spec and through the same spec without the fast path
(swx_splice.py --strip), with the same table entries, leaves by the same
ports with the same bytes, and the program's counters end the same. And the
fast path does take the packets it is for (its own counter), so the
comparison is not two runs of the full program. As root (DPDK), through
bench_swx_spec, the harness that measures the pipeline."""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Packet, Raw
from scapy.utils import RawPcapReader, wrpcap

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
BENCH_SPEC = REPO / "swpath" / "build" / "swx" / "bench_swx_spec"
SPEC = REPO / "p4src" / "build" / "pna" / "quicknat.spec"
sys.path.insert(0, str(REPO / "p4src"))

import swx_splice  # noqa: E402
from quicknat.p4.constants import (  # noqa: E402
    ETHERTYPE_LEARN,
    LEARN_IN2OUT_HIT,
    LEARN_OUT2IN_HIT,
    LEARN_TAG_BYTES,
    ZONE_SLOW_PATH,
)

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not BENCH_SPEC.exists(), reason="needs root and make -C swpath/swx"
)

COUNTERS = [
    "core_nat_nat_in2out_counter",
    "core_drop_counter",
    "core_punt_punt_counter",
    "core_punt_slow_path_counter",
    "core_nat_learn_counter",
]
# The tables the fast path looks up: their hits and misses, as quicknat-swx
# reports them, must be the packets' (src/fastpath_stats.h).
TABLES = [
    "core_zone_port_zone",
    "core_input_check_owned_source",
    "core_nat_nat_in2out",
    "core_nat_nat_out2in",
    "core_routing_routing_v4",
    "core_routing_egress_mtu",
    "core_nat_nat_in2out_learned",
    "core_nat_nat_out2in_learned",
]
ZONE_INSIDE, ZONE_OUTSIDE = 1, 2
MAC_IN, MAC_ROUTER = "02:00:00:00:10:02", "02:00:00:00:00:01"
PAYLOAD = b"quicknat-fastpath"


def ip(text: str) -> int:
    return int.from_bytes(bytes(int(b) for b in text.split(".")), "big")


@dataclass(frozen=True)
class Session:
    """A nat_in2out or nat_out2in entry: the 5-tuple it matches, the action
    and its arguments in DPDK's entry text."""

    src: str
    dst: str
    proto: int
    sport: int
    dport: int
    action: str
    args: str
    fast: bool  # its plain packets take the fast path

    def entry(self) -> str:
        return (
            f"match 0x{ip(self.src):08x} 0x{ip(self.dst):08x} 0x{self.proto:02x} "
            f"0x{self.sport:04x} 0x{self.dport:04x} action {self.action} {self.args}"
        )


def addr_port(prefix: str, addr: str, port: int) -> str:
    return f"{prefix}addr 0x{ip(addr):08x} {prefix}port 0x{port:04x}"


UDP_, TCP_ = 17, 6
PUB = "203.0.113.1"
INSIDE_SESSIONS = [
    Session(
        "10.0.0.1",
        "192.0.2.1",
        UDP_,
        1000,
        53,
        "core_nat_rewrite_src_0",
        addr_port("", PUB, 40000),
        True,
    ),
    Session(
        "10.0.0.2",
        "192.0.2.1",
        TCP_,
        2000,
        443,
        "core_nat_rewrite_src_0",
        addr_port("", PUB, 40001),
        True,
    ),
    # a DNAT session's reply: the destination rewritten, routed on it
    Session(
        "10.0.0.3",
        "192.0.2.9",
        UDP_,
        1000,
        53,
        "core_nat_rewrite_dst_0",
        addr_port("", "10.0.0.4", 5353),
        True,
    ),
    # a hairpin, both halves
    Session(
        "10.0.0.5",
        PUB,
        TCP_,
        3000,
        40002,
        "core_nat_rewrite_src_dst_0",
        addr_port("src_", PUB, 40003) + " " + addr_port("dst_", "10.0.0.6", 80),
        True,
    ),
    Session(
        "10.0.0.7",
        PUB,
        UDP_,
        1000,
        40004,
        "core_nat_hairpin_pending_0",
        addr_port("src_", PUB, 40005),
        False,
    ),
    # routed to the CPU port, past port 63, nowhere
    Session(
        "10.0.0.8",
        "192.0.2.50",
        UDP_,
        1000,
        53,
        "core_nat_rewrite_src_0",
        addr_port("", PUB, 40006),
        False,
    ),
    Session(
        "10.0.0.9",
        "192.0.2.70",
        UDP_,
        1000,
        53,
        "core_nat_rewrite_src_0",
        addr_port("", PUB, 40007),
        False,
    ),
    Session(
        "10.0.0.10",
        "198.18.0.1",
        UDP_,
        1000,
        53,
        "core_nat_rewrite_src_0",
        addr_port("", PUB, 40008),
        False,
    ),
    # keys the controller never writes, which the checks must still see:
    # a NAT-owned source, martians
    Session(
        "203.0.113.99",
        "192.0.2.1",
        UDP_,
        1000,
        53,
        "core_nat_rewrite_src_0",
        addr_port("", PUB, 40009),
        False,
    ),
    Session(
        "127.0.0.1",
        "192.0.2.1",
        UDP_,
        1000,
        53,
        "core_nat_rewrite_src_0",
        addr_port("", PUB, 40010),
        False,
    ),
    Session(
        "10.0.0.11",
        "224.0.0.9",
        UDP_,
        1000,
        53,
        "core_nat_rewrite_src_0",
        addr_port("", PUB, 40011),
        False,
    ),
    Session(
        "10.0.0.12",
        "192.0.2.1",
        UDP_,
        0,
        53,
        "core_nat_rewrite_src_0",
        addr_port("", PUB, 40012),
        False,
    ),
]
OUTSIDE_SESSIONS = [
    Session(
        "192.0.2.1",
        PUB,
        UDP_,
        53,
        40000,
        "core_nat_out2in_rewrite_dst_0",
        addr_port("", "10.0.0.1", 1000),
        True,
    ),
    Session(
        "192.0.2.1",
        PUB,
        TCP_,
        443,
        40001,
        "core_nat_out2in_rewrite_dst_0",
        addr_port("", "10.0.0.2", 2000),
        True,
    ),
    Session(
        "192.0.2.2",
        PUB,
        UDP_,
        53,
        40020,
        "core_nat_out2in_rewrite_src_dst_0",
        addr_port("src_", "198.51.100.2", 5300) + " " + addr_port("dst_", "10.0.0.20", 1000),
        True,
    ),
    Session(
        "192.0.2.3",
        "10.0.0.21",
        TCP_,
        80,
        8080,
        "core_nat_out2in_rewrite_src_0",
        addr_port("", "198.51.100.3", 8000),
        True,
    ),
    Session(
        "198.18.0.1",
        PUB,
        UDP_,
        53,
        40021,
        "core_nat_out2in_rewrite_dst_0",
        addr_port("", "10.0.0.99", 1000),
        True,
    ),
]


# Sessions the switch learns (nat.p4's learner tables) from an instance's
# learn tags, which come in on port 1 (bench_swx_spec -l), of the slow-path
# zone: each tag learns the inside-to-outside entry of its 5-tuple and the
# outside-to-inside one of its reply. Their packets then come in on port 0,
# as the written sessions' do: from the inside, the tag's tuple; from the
# outside, the reply to its translation.
@dataclass(frozen=True)
class Learned:
    src: str
    dst: str
    proto: int
    sport: int
    dport: int
    port: int  # the translated source port, on PUB
    fast_out: bool  # the plain packets of its tuple take the fast path
    fast_back: bool  # and those of its reply

    def tag(
        self,
        vid: int = ZONE_OUTSIDE,
        flags: int = 0,
        next_type: int = 0x0800,
        ip_fields: dict[str, object] | None = None,
        l4_fields: dict[str, object] | None = None,
        payload: bytes = PAYLOAD,
    ) -> bytes:
        """The first packet as the instance sends it back: 802.1Q (the
        zone it leaves to), the learn tag (lease class 4), translated; or,
        with the arguments, a tag that differs where the program looks."""
        # header.p4's learn_t: the tuple before, lease class, flags, next
        tag = struct.pack(
            "!IIHHBBH", ip(self.src), ip(self.dst), self.sport, self.dport, 4, flags, next_type
        )
        assert len(tag) == LEARN_TAG_BYTES
        vlan = Dot1Q(vlan=vid, type=ETHERTYPE_LEARN)
        sent = replace(self.outbound(), sport=self.port)
        fields: dict[str, object] = {"src": PUB, "dst": self.dst, "ttl": 63, **(ip_fields or {})}
        translated = IP(**fields) / l4(sent, **(l4_fields or {}))
        return bytes(Ether(src=MAC_IN, dst=MAC_ROUTER) / vlan / Raw(tag) / translated / payload)

    def tag_variants(self) -> list[bytes]:
        """Its tag, and each thing the program looks at in one."""
        out = [self.tag(), self.tag(vid=ZONE_INSIDE), self.tag(vid=3)]
        # a DNAT session's: the packet goes inside, the tag names the
        # other direction (nat.p4's LEARN_FLAG_OUT2IN)
        out += [self.tag(vid=ZONE_INSIDE, flags=1), self.tag(flags=0xFE)]
        out += [self.tag(next_type=0x0806), self.tag(ip_fields={"ttl": 1})]
        out += [self.tag(ip_fields={"flags": "MF"}), self.tag(ip_fields={"frag": 2})]
        out += [self.tag(ip_fields={"flags": "evil"})]
        out += [self.tag(ip_fields={"options": [IPOption_NOP()] * 4})]
        out += [self.tag(ip_fields={"len": 27}), self.tag(ip_fields={"len": 1000})]
        out += [self.tag(ip_fields={"flags": "DF"}, payload=b"x" * 1400)]
        bad = bytearray(self.tag())
        bad[18 + 16 + 10] ^= 0x01  # the IPv4 header checksum
        out.append(bytes(bad))
        if self.proto == TCP_:
            out += [self.tag(l4_fields={"dataofs": 4}), self.tag(l4_fields={"dataofs": 15})]
            out += [self.tag(l4_fields={"flags": "S"}), self.tag(l4_fields={"flags": "R"})]
        else:
            out += [self.tag(l4_fields={"len": 7}), self.tag(l4_fields={"len": 200})]
        icmp = Ether(src=MAC_IN, dst=MAC_ROUTER) / Dot1Q(vlan=ZONE_OUTSIDE, type=ETHERTYPE_LEARN)
        out.append(bytes(icmp / Raw(self.tag()[18:34]) / IP(src=PUB, dst=self.dst) / ICMP()))
        return out

    def outbound(self) -> Session:
        s = self
        return Session(s.src, s.dst, s.proto, s.sport, s.dport, "", "", s.fast_out)

    def reply(self) -> Session:
        return Session(self.dst, PUB, self.proto, self.dport, self.port, "", "", self.fast_back)


LEARNED = [
    Learned("10.0.0.101", "192.0.2.1", UDP_, 1000, 53, 41000, True, True),
    Learned("10.0.0.102", "192.0.2.1", TCP_, 2000, 443, 41001, True, True),
    # to the CPU port, past port 63, nowhere: handed on after the lookup
    Learned("10.0.0.103", "192.0.2.50", UDP_, 1000, 53, 41002, False, True),
    Learned("10.0.0.104", "192.0.2.70", UDP_, 1000, 53, 41003, False, True),
    Learned("10.0.0.105", "198.18.0.9", UDP_, 1000, 53, 41004, False, True),
    # and their replies: to a host behind the CPU port, past port 63, nowhere
    Learned("192.0.2.51", "192.0.2.1", UDP_, 1000, 53, 41005, True, False),
    Learned("192.0.2.71", "192.0.2.1", UDP_, 1000, 53, 41006, True, False),
    Learned("198.18.0.5", "192.0.2.1", UDP_, 1000, 53, 41007, True, False),
]


def entries(zone: int, sessions: list[Session]) -> dict[str, list[str]]:
    """The program's tables for one input port (bench_swx_spec's port 0)
    of `zone`, and port 1 of the slow-path zone (learn tags): routes to
    ports 1 and 2 (bench_swx_spec's sinks), to the CPU port, past port 63;
    an MTU on port 2; owned prefixes."""

    def hop(port: int, last: int) -> str:
        return (
            f"action core_routing_set_next_hop_0 port 0x{port:x} "
            f"smac 0x02000000000{port % 10} dmac 0x0200000000{last:02x}"
        )

    table = "core_nat_nat_in2out" if zone == ZONE_INSIDE else "core_nat_nat_out2in"
    return {
        "core_zone_port_zone": [
            f"match 0x0 action core_zone_set_zone_0 zone 0x{zone:x}",
            f"match 0x1 action core_zone_set_zone_0 zone 0x{ZONE_SLOW_PATH:x}",
        ],
        "core_input_check_owned_source": [
            "match 0xcb007100/0xffffff00 action core_input_check_mark_owned_0",
            "match 0xc6336407/0xffffffff action core_input_check_mark_owned_0",
        ],
        "core_routing_routing_v4": [
            f"match 0xc0000200/0xffffff00 {hop(2, 0xFE)}",
            f"match 0xc0000230/0xfffffff0 {hop(0, 0xFD)}",
            f"match 0xc0000240/0xfffffff0 {hop(70, 0xFC)}",
            f"match 0x0a000000/0xffffff00 {hop(1, 0x10)}",
            f"match 0x0a000006/0xffffffff {hop(3, 0x06)}",
            f"match 0xc6336400/0xffffff00 {hop(2, 0xFB)}",
            f"match 0xcb007100/0xffffff00 {hop(1, 0xFA)}",
        ],
        "core_routing_egress_mtu": ["match 0x2 action core_routing_set_mtu_0 mtu 0x578"],
        table: [s.entry() for s in sessions],
    }


def l4(s: Session, flags: str = "A", **fields: object) -> Packet:
    if s.proto == TCP_:
        return TCP(sport=s.sport, dport=s.dport, flags=flags, seq=1000, ack=2000, **fields)
    return UDP(sport=s.sport, dport=s.dport, **fields)


def base(s: Session, ttl: int = 64, **ip_fields: object) -> Packet:
    fields: dict[str, object] = {"src": s.src, "dst": s.dst, "ttl": ttl, **ip_fields}
    return Ether(src=MAC_IN, dst=MAC_ROUTER) / IP(**fields)


def rebuilt(p: Packet) -> Packet:
    return Ether(bytes(p))


def variants(s: Session) -> list[Packet]:
    """One session's packets: the plain one, and each thing a rule looks at."""
    out = [base(s) / l4(s) / PAYLOAD, base(s, ttl=2) / l4(s) / PAYLOAD]
    out += [base(s, ttl=t) / l4(s) / PAYLOAD for t in (0, 1)]
    out += [base(s, flags="DF") / l4(s) / Raw(b"x" * n) for n in (1300, 1400, 1460)]
    out += [base(s) / l4(s) / Raw(b"x" * 1400)]
    out += [base(s, id=7, flags="MF") / l4(s) / PAYLOAD, base(s, frag=3) / Raw(b"y" * 24)]
    out += [base(s, flags="evil") / l4(s) / PAYLOAD]
    out += [base(s, options=[IPOption_NOP()] * 4) / l4(s) / PAYLOAD]
    bad = rebuilt(base(s) / l4(s) / PAYLOAD)
    bad[IP].chksum ^= 0x0101
    out.append(bad)
    if s.proto == TCP_:
        for flags in ("S", "SA", "F", "FA", "R", "RA", "PA", "AU", "", "SF", "AE", "AC"):
            out.append(base(s) / l4(s, flags) / PAYLOAD)
        out += [base(s) / l4(s, dataofs=4) / PAYLOAD, base(s) / l4(s, dataofs=15) / b"z"]
        out.append(base(s) / l4(s, chksum=0) / PAYLOAD)
    else:
        out += [base(s) / l4(s, chksum=0) / PAYLOAD, base(s) / l4(s, len=7) / PAYLOAD]
        out += [base(s) / l4(s, len=200) / PAYLOAD, base(s) / l4(s, len=12) / PAYLOAD]
        # checksums that come out 0 and 0xffff after the rewrite
        out += [base(s) / l4(s, chksum=c) / PAYLOAD for c in (1, 0xFFFF, 0xFFFE)]
    out += [base(s, len=30) / l4(s) / PAYLOAD, base(s, len=1000) / l4(s) / PAYLOAD]
    tagged = Ether(src=MAC_IN, dst=MAC_ROUTER) / Dot1Q(vlan=1) / IP(src=s.src, dst=s.dst)
    out.append(tagged / l4(s) / PAYLOAD)
    return out


def mutated(packets: list[Packet], count: int, seed: int) -> list[bytes]:
    """Random bytes of the first 54 changed, half with the IPv4 header
    checksum made right again, so they reach the checks behind it."""
    rng = random.Random(seed)
    frames = []
    for n in range(count):
        frame = bytearray(bytes(rng.choice(packets)))
        for _ in range(rng.randint(1, 3)):
            frame[rng.randrange(12, min(54, len(frame)))] = rng.randrange(256)
        if n % 2 and len(frame) >= 34:
            header = IP(bytes(frame[14:]))
            header.chksum = None
            frame[14:34] = bytes(header)[:20]
        frames.append(bytes(frame))
    return frames


def workload(sessions: list[Session]) -> tuple[list[bytes], int]:
    """Every session's packets, misses, other protocols and mutations; and
    how many should take the fast path."""
    packets: list[Packet] = []
    fast = 0
    for s in sessions:
        mine = variants(s)
        packets += mine
        fast += s.fast
    miss = Session("10.0.0.200", "192.0.2.1", UDP_, 999, 53, "", "", False)
    packets += variants(miss)
    packets += [base(miss) / ICMP(id=1000) / PAYLOAD, Ether() / ARP(pdst="10.0.0.254")]
    packets += [Ether(type=0x86DD) / Raw(b"\x60" + b"\x00" * 50)]
    packets += [base(miss, dst="255.255.255.255") / l4(miss) / PAYLOAD]
    frames = [bytes(p) for p in packets] + mutated(packets, 1500, seed=len(sessions))
    return frames, fast


@pytest.fixture(scope="module")
def workspace() -> Iterator[Path]:
    """A short path: DPDK's I/O spec takes paths of at most 63 characters."""
    with tempfile.TemporaryDirectory(prefix="qn-pf-", dir="/tmp") as tmp:
        yield Path(tmp)


@pytest.fixture
def work(workspace: Path) -> Path:
    """A test's own directory, beside the module's pipeline cache
    (workspace/cache): bench_swx_spec names a compiled pipeline by its
    spec's hash and checks the text, so the committed program and its
    stripped twin, which five tests run, are compiled once, not five
    times (gcc over some 10k lines of generated C each)."""
    return Path(tempfile.mkdtemp(dir=workspace))


@dataclass
class Run:
    ports: list[Counter[bytes]]
    counters: dict[str, dict[str, int]]
    fastpath: dict[str, int]
    tables: dict[str, dict[str, int]]


def write_frames(path: Path, frames: list[bytes]) -> None:
    """The frames as they are: scapy writes bytes without dissecting them
    (making each an Ether first cost 18 s of a learn test's 29)."""
    wrpcap(str(path), frames, linktype=1)  # type: ignore[arg-type]


def read_frames(path: Path) -> Counter[bytes]:
    with RawPcapReader(str(path)) as pcap:
        return Counter(frame for frame, _ in pcap)


def run(
    spec: Path,
    frames: list[bytes],
    tables: dict[str, list[str]],
    work: Path,
    learn: list[bytes] | None = None,
) -> Run:
    name = spec.stem
    pcap, out = work / f"{name}.pcap", work / f"{name}-out"
    out.mkdir()
    args = [str(BENCH_SPEC), "-C", str(work.parent / "cache"), "-o", str(out)]
    if learn:
        # One tag at a time: 16 frames of IPv6 (dropped) after each, the
        # packets a pipeline has in flight, so that two tags of one session
        # never miss together (which of them learns, and which renews, would
        # be the threads' order). The tags go in beside the first frames,
        # which must not need them: 512 more are 32 rounds after the last.
        ipv6 = bytes(Ether(type=0x86DD) / Raw(b"\x60" + b"\x00" * 50))
        learn = [frame for tag in learn for frame in [tag] + [ipv6] * 16]
        frames = [ipv6] * (len(learn) + 512) + frames
        write_frames(work / "learn.pcap", learn)
        args += ["-l", str(work / "learn.pcap")]
    write_frames(pcap, frames)
    args += ["-n", str(len(frames) + len(learn or []))]
    for table, lines in tables.items():
        path = work / f"{table}.entries"
        path.write_text("\n".join(lines) + "\n")
        args += ["-t", table, str(path)]
    for regarray in COUNTERS + (["fastpath_counter"] if "fastpath" in name else []):
        args += ["-r", regarray]
    for table in TABLES:
        args += ["-s", table]
    done = subprocess.run(
        [*args, str(spec), str(pcap), "0"], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    ports = []
    for port in range(4):
        path = out / f"port{port}.pcap"
        ports.append(read_frames(path) if path.exists() else Counter())
    regarrays = result["regarrays"]
    return Run(
        ports,
        {c: regarrays[c] for c in COUNTERS},
        regarrays.get("fastpath_counter", {}),
        result["tables"],
    )


def specs(work: Path, spec_text: str) -> tuple[Path, Path]:
    with_fastpath, full = work / "fastpath.spec", work / "full.spec"
    with_fastpath.write_text(spec_text)
    full.write_text(swx_splice.strip(spec_text))
    return with_fastpath, full


def compare(
    work: Path,
    spec_text: str,
    zone: int,
    sessions: list[Session],
    learned: list[Learned] | None = None,
    tags: list[bytes] | None = None,
) -> tuple[Run, Run, int]:
    """Both runs; with `learned`, their tags (or `tags`) first and then
    their packets from `zone` (`sessions` are then only the written ones)."""
    traffic = sessions + [
        (s.outbound() if zone == ZONE_INSIDE else s.reply()) for s in learned or []
    ]
    frames, fast = workload(traffic)
    tables = entries(zone, sessions)
    if tags is None and learned:
        tags = [s.tag() for s in learned]
    with_fastpath, full = specs(work, spec_text)
    return (
        run(with_fastpath, frames, tables, work, tags),
        run(full, frames, tables, work, tags),
        fast,
    )


def assert_same(a: Run, b: Run) -> None:
    for port in range(4):
        extra, missing = a.ports[port] - b.ports[port], b.ports[port] - a.ports[port]
        assert not extra and not missing, (
            f"port {port}: with the fast path {len(extra)} frames the full program does not "
            f"send, {len(missing)} it sends that the fast path does not; first: "
            f"{(list(extra) or list(missing))[0].hex()}"
        )
    assert a.counters == b.counters
    assert a.tables == b.tables


@pytest.mark.parametrize(
    ("zone", "sessions"), [(ZONE_INSIDE, INSIDE_SESSIONS), (ZONE_OUTSIDE, OUTSIDE_SESSIONS)]
)
def test_fastpath_decides_as_the_full_program(
    work: Path, zone: int, sessions: list[Session]
) -> None:
    assert swx_splice.strip(SPEC.read_text()) != SPEC.read_text(), "no fast path spliced"
    fast_run, full_run, fast = compare(work, SPEC.read_text(), zone, sessions)
    assert_same(fast_run, full_run)
    # the plain packet and TTL 2 of each fast session, through; and some
    # of the mutated ones (a changed payload byte or identification)
    sent = fast_run.fastpath.get("0", 0)
    assert sent >= 2 * fast, fast_run.fastpath
    assert fast_run.fastpath.get("1", 0) > 0
    # and some were handed on after lookups, whose repeats the tables'
    # statistics leave out (a miss at least: the workload's new flows)
    assert sum(v for k, v in fast_run.fastpath.items() if int(k) >= 2) > 0
    assert sum(len(p) for p in full_run.ports) > 0


def test_the_comparison_sees_a_missing_check(work: Path) -> None:
    """The same comparison with the fast path's TTL check taken out: a TTL 1
    packet it translates to TTL 0 where the program drops it and tells the
    controller. It must fail, or it proves nothing."""
    text = SPEC.read_text()
    check = "\tjmplt FASTPATH_FULL h.fastpath.ttl_protocol 0x200\n"
    assert check in text
    fast_run, full_run, _ = compare(work, text.replace(check, ""), ZONE_INSIDE, INSIDE_SESSIONS)
    with pytest.raises(AssertionError):
        assert_same(fast_run, full_run)


def test_the_comparison_sees_a_repeated_lookup_left_in(work: Path) -> None:
    """Without the exit line of a miss in nat_in2out, each new flow counts
    two misses there, as the pipeline counts them: the tables' comparison
    must see it."""
    text = SPEC.read_text()
    line = next(x for x in text.splitlines(True) if x.startswith("; fastpath exit 6:"))
    assert "core_nat_nat_in2out miss" in line
    fast_run, full_run, _ = compare(work, text.replace(line, ""), ZONE_INSIDE, INSIDE_SESSIONS)
    assert fast_run.ports == full_run.ports and fast_run.counters == full_run.counters
    in2out = "core_nat_nat_in2out"
    assert fast_run.tables[in2out]["misses"] > full_run.tables[in2out]["misses"]


@pytest.mark.parametrize("zone", [ZONE_INSIDE, ZONE_OUTSIDE])
def test_fastpath_takes_learned_sessions_as_the_full_program(work: Path, zone: int) -> None:
    """Sessions the switch learned (offload mode, install = "learn") are
    looked up by the fast path when the written table misses: the same
    frames and counters as the full program, learn_counter's hits
    included, and the learned sessions' plain packets sent by the path."""
    written = INSIDE_SESSIONS[:2] if zone == ZONE_INSIDE else OUTSIDE_SESSIONS[:2]
    fast_run, full_run, fast = compare(work, SPEC.read_text(), zone, written, LEARNED)
    assert_same(fast_run, full_run)
    slot = str(LEARN_IN2OUT_HIT if zone == ZONE_INSIDE else LEARN_OUT2IN_HIT)
    learned_hits = full_run.counters["core_nat_learn_counter"].get(slot, 0)
    fast_learned = sum(s.fast_out if zone == ZONE_INSIDE else s.fast_back for s in LEARNED)
    assert learned_hits >= 2 * fast_learned, full_run.counters
    assert fast_run.fastpath.get("0", 0) >= 2 * fast, fast_run.fastpath
    # the exits after a learned session's lookup: a route to the CPU port
    # or nowhere (14 to 16 from the inside, 17 to 19 from the outside)
    first = 14 if zone == ZONE_INSIDE else 17
    assert sum(fast_run.fastpath.get(str(k), 0) for k in range(first, first + 3)) > 0


def test_the_comparison_sees_a_learned_hit_left_uncounted(work: Path) -> None:
    """Without the fast path's count of a learned session's hit, the
    learned sessions' packets it sends go uncounted: the comparison must
    see it, or the learned sessions never took the path."""
    text = SPEC.read_text()
    count = "\tFASTPATH_TX_LEARNED : regadd core_nat_learn_counter "
    line = next(x for x in text.splitlines(True) if x.startswith(count))
    fast_run, full_run, _ = compare(
        work,
        text.replace(line, "\tFASTPATH_TX_LEARNED : mov h.fastpath_check.learned 0\n"),
        ZONE_INSIDE,
        INSIDE_SESSIONS[:2],
        LEARNED,
    )
    assert fast_run.ports == full_run.ports
    assert fast_run.counters != full_run.counters


def tag_workload() -> tuple[list[bytes], int]:
    """Every learned session's tag variants; each plain tag again, which
    renews what the first learned; 300 random mutations of the tags' first
    70 bytes, half with the IPv4 header checksum made right again (the
    lease class kept to one of 120 s or more, the program's classes 4 to
    7: no entry may end while the run lasts). And how many tags the fast
    path should send at least: of the sessions routed to a port it sends
    to, the plain tag and its renewal, the tag of the other zone, of
    unknown flags, of the other direction, of TTL 1, and a TCP one's SYN
    and RST."""
    rng = random.Random(34)
    tags = [v for s in LEARNED for v in s.tag_variants()]
    tags += [s.tag() for s in LEARNED]
    for n in range(300):
        frame = bytearray(rng.choice(tags))
        for _ in range(rng.randint(1, 3)):
            frame[rng.randrange(12, min(70, len(frame)))] = rng.randrange(256)
        frame[18 + 12] = 4 + frame[18 + 12] % 4
        if n % 2 and len(frame) >= 54:
            header = IP(bytes(frame[34:]))
            header.chksum = None
            frame[34:54] = bytes(header)[:20]
        tags.append(bytes(frame))
    sent = sum(6 + 2 * (s.proto == TCP_) for s in LEARNED if s.fast_out)
    return tags, sent


def test_fastpath_learns_as_the_full_program(work: Path) -> None:
    """Learn tags: the fast path learns both directions of a session from a
    slow-path instance's tag, renews its lease, strips the tags and routes
    the packet as the full program does, and hands on every tag it is not
    sure of; the same frames, counters (learn_counter's added and renewed)
    and learners' statistics, and the learned sessions' packets after."""
    tags, fast_tags = tag_workload()
    # (no session's packets but misses: what the fast path sends is tags)
    fast_run, full_run, _ = compare(work, SPEC.read_text(), ZONE_INSIDE, [], None, tags)
    assert_same(fast_run, full_run)
    learned = full_run.counters["core_nat_learn_counter"]
    assert learned.get("2", 0) >= len(LEARNED) and learned.get("4", 0) >= len(LEARNED), learned
    assert fast_run.fastpath.get("0", 0) >= fast_tags, (fast_tags, fast_run.fastpath)
    # a tag routed nowhere, to the CPU port or past port 63, over the MTU
    for exit_ in ("21", "22", "23"):
        assert fast_run.fastpath.get(exit_, 0) > 0, fast_run.fastpath


def test_the_comparison_sees_a_renewal_counted_as_an_add(work: Path) -> None:
    """A copy of the fast path that counts a renewed lease as a new entry:
    the comparison must see it, or no tag renewed one."""
    text = SPEC.read_text()
    renewed = "FASTPATH_LEARN_IN2OUT_RENEWED : mov "
    line = next(x for x in text.splitlines(True) if renewed in x)
    wrong = line.rsplit(" ", 1)[0] + " 0x2\n"
    tags, _ = tag_workload()
    fast_run, full_run, _ = compare(work, text.replace(line, wrong), ZONE_INSIDE, [], None, tags)
    assert fast_run.counters != full_run.counters
