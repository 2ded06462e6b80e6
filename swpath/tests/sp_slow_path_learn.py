#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Live tests of a slow-path instance in learn mode (issue 34; docs/swpath.md,
"Learn mode"): sp_slow_path.py's veth pair and instance, with `offload learn
on` and a lease per kind, scapy playing the switch. Each translated packet of
a learnable session comes back with the learn tag between its 802.1Q header
(EtherType 0x88B5) and its IPv4 header: the tuple before translation, the
kind's lease class, the direction; what must stay in software (an ICMP
error, a hairpin, a kind without a lease) comes back untagged. A tagged
session outlives its idle timeout by its lease. (Fragments: the kernel under
af_packet reassembles them before swpath sees them; test_sp_learn.c checks
that a fragment gets no tag.)

Run as root: sp_slow_path_learn.py --app PATH/quicknat-swpath. Ends with
"N passed, M failed" (skipped without root or veth support).
"""

from __future__ import annotations

import struct
import sys
import time
from collections.abc import Callable
from ipaddress import ip_address
from pathlib import Path

from live_frame import Tally, live_main, parse_args
from quicknat.controller.status import query
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import Dot1Q
from scapy.packet import Packet, Raw
from sp_live import Nat, cases_on_one_nat, eq, sh
from sp_slow_path import (
    COMMANDS,
    GATEWAY_MAC,
    HOSTS,
    OWN_BLOCK,
    POOL,
    REMOTE,
    SLOW,
    SWITCH,
    SWITCH_IN_MAC,
    SWITCH_OUT_MAC,
    ZONE_INSIDE,
    ZONE_OUTSIDE,
    Stream,
    exchange,
    from_switch,
    host_mac,
    make_link,
    remove_link,
)

LEARN_ETHERTYPE = 0x88B5  # IEEE 802's local experimental EtherType 1
LEARN_TAG_BYTES = 16
# The leases: TCP established has none (its packets stay untagged). The
# longest, QUIET_S, is the quiet period of an instance started without a
# state file (control/learn_quiet.h): kept short, the cases wait it out.
UDP_CLASS, UDP_LEASE = 1, 3
TCP_TRANS_CLASS, ICMP_CLASS = 2, 0
QUIET_S = 6
LEARN_COMMANDS = COMMANDS + (
    "offload learn on\n"
    f"offload lease udp class {UDP_CLASS} seconds {UDP_LEASE}\n"
    f"offload lease tcp_transitory class {TCP_TRANS_CLASS} seconds {QUIET_S}\n"
    f"offload lease icmp class {ICMP_CLASS} seconds {QUIET_S}\n"
)


def inside(host: str, pkt: Packet, dst: str = REMOTE) -> Packet:
    ip = IP(src=host, dst=dst, ttl=64)
    return from_switch(ZONE_INSIDE, SWITCH_IN_MAC, host_mac(host), ip / pkt)


def outside(pkt: Packet) -> Packet:
    return from_switch(ZONE_OUTSIDE, SWITCH_OUT_MAC, GATEWAY_MAC, pkt)


def learn_tag(p: Packet) -> tuple[tuple[str, str, int, int, int, int], Packet]:
    """The tag's fields (orig src, dst, sport, dport, lease, flags) and the
    IPv4 packet after it; AssertionError when the frame has no tag."""
    eq(p[Dot1Q].type, LEARN_ETHERTYPE, "802.1Q type: the learn tag")
    raw = bytes(p[Dot1Q].payload)
    head = raw[:LEARN_TAG_BYTES]
    src, dst, sport, dport, lease, flags, eth_type = struct.unpack("!4s4sHHBBH", head)
    eq(eth_type, 0x0800, "the tag's next header: IPv4")
    fields = (str(ip_address(src)), str(ip_address(dst)), sport, dport, lease, flags)
    return fields, IP(raw[LEARN_TAG_BYTES:])


def untagged(p: Packet) -> Packet:
    eq(p[Dot1Q].type, 0x0800, "802.1Q type: IPv4, no learn tag")
    return p[IP]


def checksums_hold(ip: Packet) -> bool:
    """The IPv4 and L4 checksums swpath wrote are the ones scapy computes."""
    l4 = ip.payload
    fresh = (ip.chksum, l4.chksum)
    again = IP(bytes(ip))
    del again.chksum
    del again.payload.chksum
    again = IP(bytes(again))
    return fresh == (again.chksum, again.payload.chksum)


def counters(nat: Nat) -> dict[str, int]:
    c = nat.stats()["counters"]
    assert isinstance(c, dict)
    return c


FLOW: dict[str, int | str] = {}


def case_quiet_period_then_ports(nat: Nat) -> None:
    """Started without a state file, the switch may still hold ports of a
    previous run under its leases: for the longest lease (QUIET_S) a new flow
    gets no port (refused, counted learn_quiet_refused, nothing comes back),
    then it does. Runs first, within QUIET_S of the start."""
    start = time.monotonic()
    flow = [inside(HOSTS[6], UDP(sport=7100, dport=53))]
    eq(len(exchange(flow, 1, timeout=0.5)), 0, "refused in the quiet period")
    eq(counters(nat)["learn_quiet_refused"], 1, "learn_quiet_refused")
    got: list[Packet] = []
    while not got and time.monotonic() < start + QUIET_S + 5:
        got = exchange(flow, 1, timeout=0.5)
    eq(len(got), 1, f"translated within {QUIET_S + 5} s")
    learn_tag(got[0])
    assert counters(nat)["learn_quiet_refused"] >= 2, "refused until it ended"


def case_snat_tcp_syn_tagged(nat: Nat) -> None:
    """A SYN from inside comes back to the outside VID with the tag: the
    inside tuple, TCP transitory's class, direction 0 (source translated)."""
    host = HOSTS[0]
    before = counters(nat)["learn_tagged_in2out"]
    got = exchange([inside(host, TCP(sport=40000, dport=443, flags="S", seq=1))], 1)
    eq(len(got), 1, "translated")
    eq(got[0][Dot1Q].vlan, ZONE_OUTSIDE, "VID")
    tag, ip = learn_tag(got[0])
    eq(tag, (host, REMOTE, 40000, 443, TCP_TRANS_CLASS, 0), "the tag")
    assert ip_address(ip.src) in POOL, ip.src
    eq((ip.dst, ip[TCP].dport, ip.ttl, ip[TCP].flags), (REMOTE, 443, 63, "S"))
    assert checksums_hold(ip), ip.summary()
    FLOW.update(ext=ip.src, port=ip[TCP].sport)
    eq(counters(nat)["learn_tagged_in2out"] - before, 1, "learn_tagged_in2out")


def case_reply_tagged_destination(nat: Nat) -> None:
    """The SYN-ACK from outside comes back to the inside VID with direction
    1 (destination translated) and the public tuple it arrived with."""
    ext, port = str(FLOW["ext"]), int(FLOW["port"])
    syn_ack = IP(src=REMOTE, dst=ext, ttl=60) / TCP(sport=443, dport=port, flags="SA")
    got = exchange([outside(syn_ack)], 1)
    eq(len(got), 1, "translated")
    eq(got[0][Dot1Q].vlan, ZONE_INSIDE, "VID")
    tag, ip = learn_tag(got[0])
    eq(tag, (REMOTE, ext, 443, port, TCP_TRANS_CLASS, 1), "the tag")
    eq((ip.src, ip.dst, ip[TCP].dport), (REMOTE, HOSTS[0], 40000))
    assert checksums_hold(ip), ip.summary()
    eq(counters(nat)["learn_tagged_out2in"], 1, "learn_tagged_out2in")


def case_kind_without_lease_untagged(nat: Nat) -> None:
    """Established TCP has no lease here: its ACK leaves untagged, counted."""
    before = counters(nat)["learn_not_learnable"]
    got = exchange([inside(HOSTS[0], TCP(sport=40000, dport=443, flags="A"))], 1)
    eq(len(got), 1, "translated")
    ip = untagged(got[0])
    eq((ip.src, ip[TCP].sport), (FLOW["ext"], FLOW["port"]))
    eq(counters(nat)["learn_not_learnable"] - before, 1, "learn_not_learnable")


def case_udp_and_icmp_echo_tagged(nat: Nat) -> None:
    """UDP and ICMP echo carry their own kinds' classes; an echo's tag has
    the identifier before translation as both ports."""
    host = HOSTS[1]
    got = exchange(
        [
            inside(host, UDP(sport=5000, dport=53) / Raw(b"q")),
            inside(host, ICMP(type=8, id=0x1234, seq=1) / Raw(b"ping")),
        ],
        2,
    )
    eq(len(got), 2, "translated")
    by_proto = {learn_tag(p)[1].proto: learn_tag(p) for p in got}
    tag, ip = by_proto[17]
    eq(tag, (host, REMOTE, 5000, 53, UDP_CLASS, 0), "UDP tag")
    assert checksums_hold(ip), ip.summary()
    FLOW.update(udp_ext=ip.src, udp_port=ip[UDP].sport)
    tag, ip = by_proto[1]
    eq(tag, (host, REMOTE, 0x1234, 0x1234, ICMP_CLASS, 0), "ICMP echo tag")
    eq(ip[ICMP].type, 8)
    assert checksums_hold(ip), ip.summary()


def case_icmp_error_untagged(nat: Nat) -> None:
    """An ICMP error about the UDP flow is translated through its session
    but stays in software: no tag."""
    ext, port = str(FLOW["udp_ext"]), int(FLOW["udp_port"])
    quoted = IP(src=ext, dst=REMOTE, ttl=3) / UDP(sport=port, dport=53)
    err = IP(src="198.51.100.99", dst=ext, ttl=30) / ICMP(type=3, code=3) / quoted
    got = exchange([outside(err)], 1)
    eq(len(got), 1, "translated")
    ip = untagged(got[0])
    eq((ip.dst, ip[ICMP].type), (HOSTS[1], 3))


def case_hairpin_untagged(nat: Nat) -> None:
    """A host's packet to another host's mapping (hairpin: both sides
    rewritten) comes back untagged."""
    ext, port = str(FLOW["udp_ext"]), int(FLOW["udp_port"])
    got = exchange([inside(HOSTS[3], UDP(sport=5003, dport=port) / Raw(b"hp"), dst=ext)], 1)
    eq(len(got), 1, "hairpinned")
    ip = untagged(got[0])
    eq((ip.dst, ip[UDP].dport), (HOSTS[1], 5000))


def case_full_size_packet_tagged(nat: Nat) -> None:
    """A packet of the interface's full MTU (1,500) leaves tagged, its frame
    16 bytes over what the link carries without learn mode: the link to the
    switch must take it (docs/swpath.md; here the veths have MTU 1516, and
    the kernel's veth drops the frame at 1500)."""
    host = HOSTS[5]
    data = Raw(b"z" * (1500 - 20 - 8))
    got = exchange([inside(host, UDP(sport=9000, dport=53) / data)], 1, timeout=1.0)
    eq(len(got), 1, "translated")
    tag, ip = learn_tag(got[0])
    eq(tag, (host, REMOTE, 9000, 53, UDP_CLASS, 0), "the tag")
    eq((ip.len, len(bytes(got[0]))), (1500, 14 + 4 + 16 + 1500), "IPv4 and frame length")
    assert checksums_hold(ip), ip.summary()


def case_writer_commands_refused(nat: Nat) -> None:
    """No writer installs a learned session: the offload manager's session
    commands are refused, and the leases are start-up only."""
    answers = nat.lines(f"session offload 1 udp {HOSTS[1]}:5000 {REMOTE}:53")
    assert answers[-1].startswith("error: session: offload learn is on"), answers
    answers = nat.lines("offload lease udp class 1 seconds 30")
    assert answers[-1].startswith("error: offload lease: only at start-up"), answers


def case_stream_announces_nothing(nat: Nat) -> None:
    """The session stream's snapshot leaves every session out (none is for a
    writer to install), and ends synced."""
    rows = query(nat.sock, "sessions")
    assert isinstance(rows, list) and rows, rows
    stream = Stream(nat)
    try:
        events = stream.until(lambda e: e.kind == "synced")
    finally:
        stream.close()
    eq([e.kind for e in events], ["synced"], "nothing announced")
    eq(events[-1].count, 0, "synced count")


def case_tagged_session_outlives_its_timeout_by_its_lease(nat: Nat) -> None:
    """UDP's timeout 2 s, lease 3 s: a tagged session is still there well
    after its timeout, and gone once timeout + lease have passed (the
    sessions listing says 5 s), never before. Its `switch_lease_s` counts
    the lease down from the tag, and is 0 once it has run out."""
    eq(nat.lines("timeouts udp 2"), ["ok"])
    try:
        host = HOSTS[4]

        def listed() -> list[dict[str, object]]:
            rows = query(nat.sock, f"sessions src {host}")
            assert isinstance(rows, list)
            return [r for r in rows if r["internal"] == f"{host}:7000"]

        start = time.monotonic()  # the packet is sent after this
        got = exchange([inside(host, UDP(sport=7000, dport=53))], 1, timeout=1.0)
        eq(len(got), 1, "translated")
        learn_tag(got[0])
        (row,) = listed()
        eq(row["timeout_s"], 2 + UDP_LEASE, "timeout_s: T + L")
        # the switch's lease from that tag: at most L left, and by the
        # time the listing answered, no less than L minus a second
        lease = float(row["switch_lease_s"])
        assert UDP_LEASE - 1 <= lease <= UDP_LEASE, f"switch_lease_s {lease}"
        time.sleep(max(0.0, start + 3.5 - time.monotonic()))
        rows = listed()
        assert rows, "expired before timeout + lease"
        eq([r["switch_lease_s"] for r in rows], [0.0], "the lease is over")
        while listed() and time.monotonic() < start + 2 + UDP_LEASE + 3:
            time.sleep(0.1)
        gone = time.monotonic() - start
        assert not listed(), "not expired after timeout + lease"
        assert gone >= 2 + UDP_LEASE, f"expired after {gone:.2f} s"
    finally:
        eq(nat.lines("timeouts udp 300"), ["ok"])


CASES: list[Callable[[Nat], None]] = [
    case_quiet_period_then_ports,
    case_snat_tcp_syn_tagged,
    case_reply_tagged_destination,
    case_kind_without_lease_untagged,
    case_udp_and_icmp_echo_tagged,
    case_icmp_error_untagged,
    case_hairpin_untagged,
    case_full_size_packet_tagged,
    case_writer_commands_refused,
    case_stream_announces_nothing,
    case_tagged_session_outlives_its_timeout_by_its_lease,
]


# restart_keeps_held_port: the pool one port, UDP's lease long enough to
# span two restarts: about 3 s here, more than 7 once on a loaded machine
# (a BMv2 rehearsal, the lab-free suites beside it), so 10.
HELD_LEASE_S = 10
HELD_PORT = 5000
HELD_COMMANDS = (
    COMMANDS.replace(
        f"ports {OWN_BLOCK[0]}-{OWN_BLOCK[1]} addresses {POOL}",
        f"ports {HELD_PORT}-{HELD_PORT} addresses {POOL[1]}/32",
    )
    + "offload learn on\n"
    + f"offload lease udp class {UDP_CLASS} seconds {HELD_LEASE_S}\n"
)


def refused(flow: list[Packet], what: str) -> None:
    """No port for the flow: what comes back is the ICMP error a NAT out of
    ports sends (type 3, code 13), nothing translated."""
    got = exchange(flow, 1, timeout=1.0)
    eq(
        [(p[IP].src, p[ICMP].type, p[ICMP].code) for p in got if ICMP in p],
        [("192.0.2.1", 3, 13)],
        what,
    )
    eq(len(got), 1, what)


def restart_keeps_held_port(app: str, tmp: Path) -> None:
    """A session the switch learned and an operator deleted holds its port
    until the switch's lease ends; a process that takes the state file over
    (kill -9, then --state) holds it as long, and so does the next one: with
    the pool's only port held, a new flow gets none (drop_pool_exhausted,
    not the quiet period: nothing was lost), then gets that very port once
    the lease is over. The first process runs one worker and the next ones
    two, so the hold moves to the worker that owns the port now (the other
    owns no port of this pool): four hosts ask, so that at least one lands
    on the owner (the last step proves it: one of them gets the port)."""
    state = tmp / "held.state"
    extra = ("--state", str(state))
    flow = [inside(HOSTS[3], UDP(sport=7300, dport=53))]
    others = [[inside(h, UDP(sport=7400, dport=53))] for h in HOSTS[4:8]]
    procs: list[Nat] = []
    try:
        one = (*extra, "--lcores-workers", "1")
        procs.append(Nat(app, tmp, HELD_COMMANDS, devices=(SLOW,), extra=one, name="a"))
        eq(procs[0].lines("offload fresh")[-1], "ok", "offload fresh: no lease of ours")
        got = exchange(flow, 1)
        eq(len(got), 1, "translated")
        tagged_at = time.monotonic()
        fields, ip = learn_tag(got[0])
        eq((ip.src, ip[UDP].sport), (str(POOL[1]), HELD_PORT), "the pool's one port")
        eq(fields[4], UDP_CLASS, "the UDP lease class")
        answer = procs[0].lines(f"sessions delete src {HOSTS[3]}")
        eq(answer, ['{"deleted": 1}'], "sessions delete")
        refused(others[0], "held in the process that deleted it")
        procs[0].kill()
        two = (*extra, "--lcores-workers", "2")
        for name in ("b", "c"):
            nat = Nat(app, tmp, HELD_COMMANDS, devices=(SLOW,), extra=two, name=name)
            procs.append(nat)
            for other in others:
                refused(other, f"held after the restart ({name})")
            c = counters(nat)
            eq(c["drop_pool_exhausted"], len(others), f"{name}: the pool's port is held")
            eq(c["learn_quiet_refused"], 0, f"{name}: no quiet period (nothing lost)")
            nat.kill()
            assert "1 ports stay held until the switch's lease" in nat.log(), nat.log()
        took = time.monotonic() - tagged_at
        assert took < HELD_LEASE_S - 1, (
            f"the restarts took {took:.1f} s of the {HELD_LEASE_S} s lease"
        )
        print(f"     (two restarts within the lease: {took:.1f} s of {HELD_LEASE_S})")
        nat = Nat(app, tmp, HELD_COMMANDS, devices=(SLOW,), extra=two, name="d")
        procs.append(nat)
        time.sleep(max(0.0, tagged_at + HELD_LEASE_S + 0.5 - time.monotonic()))
        ports = []
        for other in others:
            for p in exchange(other, 1, timeout=1.0):
                if Dot1Q in p and p[Dot1Q].type == LEARN_ETHERTYPE:
                    _, ip = learn_tag(p)
                    ports.append((ip.src, ip[UDP].sport))
        eq(
            ports,
            [(str(POOL[1]), HELD_PORT)],
            "that very port, to one host, once the lease is over",
        )
    finally:
        for nat in procs:
            nat.kill()


def main() -> int:
    args = parse_args(__doc__)

    def make_links() -> None:
        make_link()
        for dev in (SLOW, SWITCH):  # the learn tag's 16 bytes (docs/swpath.md)
            sh("ip", "link", "set", dev, "mtu", str(1500 + LEARN_TAG_BYTES))

    def body(tally: Tally) -> None:
        cases_on_one_nat(
            tally,
            args.app,
            "sp-learn-",
            CASES,
            after=(restart_keeps_held_port,),
            commands=LEARN_COMMANDS,
            devices=(SLOW,),
        )

    return live_main("sp_slow_path_learn", make_links, remove_link, body)


if __name__ == "__main__":
    sys.exit(main())
