#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Live tests of quicknat-swpath as a slow-path instance (offload mode): one
veth pair, DPDK (net_af_packet, two workers, software RSS) on one end, and on
the other scapy playing the P4 switch as p4src/README.md specifies it.

The switch sends each miss as it arrived, tagged 802.1Q with the zone it
arrived from (VID 1 inside, 2 outside) and addressed to the switch's own MACs;
swpath must see the two zones as two sub-interfaces of the one port, translate
as it does on two ports, and send back tagged with the zone the packet leaves
to, addressed to the switch's slow-path port (a static neighbour).

Run as root: sp_slow_path.py --app PATH/quicknat-swpath. Ends with
"N passed, M failed" (skipped without root or veth support).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from ipaddress import ip_address, ip_network

from live_frame import Tally, live_main, parse_args
from quicknat.addr import format_ipv4
from quicknat.controller.status import query
from quicknat.nat.allocator import Endpoint
from quicknat.offload.stream import SessionEvent, parse_event
from quicknat.p4.constants import (
    SLOW_PATH_VID_HANDOFF,
    SLOW_PATH_VID_PEER_MIN,
    SLOW_PATH_VID_RELAY,
)
from scapy.layers.inet import ICMP, IP, TCP, UDP, UDPerror
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw
from scapy.sendrecv import sendp
from sp_live import Nat, captured, cases_on_one_nat, eq, sh

TAG = f"s{os.getpid() % 100000}"
SLOW, SWITCH = f"{TAG}p", f"{TAG}sw"  # swpath's port, the switch's port
ZONE_INSIDE, ZONE_OUTSIDE = 1, 2  # the VIDs: p4src/include/header.p4 ZONE_*
# The switch's router MACs on its inside and outside ports (what hosts and the
# gateway address), and on its slow-path port (swpath's next hop both ways).
SWITCH_IN_MAC, SWITCH_OUT_MAC, SWITCH_SP_MAC = (
    "02:00:00:00:00:01",
    "02:00:00:00:00:02",
    "02:00:00:00:00:0f",
)
SP_IN_MAC, SP_OUT_MAC = "02:00:00:00:0a:01", "02:00:00:00:0a:02"
GATEWAY_MAC = "02:00:00:00:00:fe"
POOL = ip_network("203.0.113.0/29")
# Two instances behind the switch (peer.h): this one owns ports 1024-40000
# of the pool, its peer (VIDs 18 for hairpins, 19 for what is relayed from
# the outside link) the rest; the switch hands a peer's packets over with
# VID 4 (a hairpin's second pass) or 5 (relayed).
OWN_BLOCK, PEER_BLOCK = (1024, 40000), (40001, 65535)
SELF_VID, PEER_VID = SLOW_PATH_VID_PEER_MIN, SLOW_PATH_VID_PEER_MIN + 2
HANDOFF_VID, RELAY_VID = SLOW_PATH_VID_HANDOFF, SLOW_PATH_VID_RELAY
HOSTS = [f"10.0.0.{i}" for i in range(10, 26)]
REMOTE = "198.51.100.10"


def host_mac(ip: str) -> str:
    return f"02:00:00:00:10:{int(ip.rsplit('.', 1)[1]):02x}"


COMMANDS = (
    f"interface inside zone inside port 0 vlan {ZONE_INSIDE} slow_path true"
    f" address 192.0.2.1/30 mac {SP_IN_MAC}\n"
    f"interface outside zone outside port 0 vlan {ZONE_OUTSIDE} slow_path true"
    f" address 192.0.2.5/30 mac {SP_OUT_MAC}\n"
    "route 10.0.0.0/8 dev inside via 192.0.2.2\n"
    "route 0.0.0.0/0 dev outside via 192.0.2.6\n"
    f"neighbor 192.0.2.2 mac {SWITCH_SP_MAC} dev inside\n"
    f"neighbor 192.0.2.6 mac {SWITCH_SP_MAC} dev outside\n"
    f"pool public ports {OWN_BLOCK[0]}-{OWN_BLOCK[1]} addresses {POOL}\n"
    f"peer vid {SELF_VID} ports {OWN_BLOCK[0]}-{OWN_BLOCK[1]} self\n"
    f"peer vid {PEER_VID} ports {PEER_BLOCK[0]}-{PEER_BLOCK[1]}\n"
    "rule add id 1 type snat prefix 10.0.0.0/24 protocol any pool public\n"
    # endpoint-independent for UDP: case_hairpin sends to another host's mapping
    "filtering udp endpoint-independent tcp address-dependent icmp address-dependent\n"
)


def make_link() -> None:
    sh("ip", "link", "add", SLOW, "type", "veth", "peer", "name", SWITCH)
    for dev in (SLOW, SWITCH):
        subprocess.run(
            ["sysctl", "-q", "-w", f"net.ipv6.conf.{dev}.disable_ipv6=1"], capture_output=True
        )
        # tags stay in the frames both ways (no VLAN offload into metadata)
        offloads = ["rxvlan", "off", "txvlan", "off"]
        subprocess.run(["ethtool", "-K", dev, *offloads], capture_output=True)
        sh("ip", "link", "set", dev, "up")


def remove_link() -> None:
    subprocess.run(["ip", "link", "del", SLOW], capture_output=True)


def from_switch(vid: int, dst_mac: str, src_mac: str, pkt: Packet) -> Packet:
    """A miss as the switch sends it: as it arrived, tagged with its zone."""
    return Ether(src=src_mac, dst=dst_mac) / Dot1Q(vlan=vid) / pkt


def exchange(pkts: list[Packet], want: int, timeout: float = 3.0) -> list[Packet]:
    """Sends pkts as the switch; returns the frames swpath sends back."""
    return captured(
        lambda: sendp(pkts, iface=SWITCH),
        SWITCH,
        lambda p: p[Ether].src in (SP_IN_MAC, SP_OUT_MAC),
        want,
        timeout,
    )


def checksums_hold(p: Packet) -> bool:
    """The IPv4 and UDP checksums swpath wrote are the ones scapy computes."""
    ip = p[IP]
    fresh = IP(bytes(ip.copy()))
    del ip.chksum
    del ip[UDP].chksum
    again = IP(bytes(ip))
    return (fresh.chksum, fresh[UDP].chksum) == (again.chksum, again[UDP].chksum)


MAPPINGS: dict[str, tuple[str, int]] = {}


def case_inside_misses_leave_tagged_outside(nat: Nat) -> None:
    got = exchange(
        [
            from_switch(
                ZONE_INSIDE,
                SWITCH_IN_MAC,
                host_mac(h),
                IP(src=h, dst=REMOTE, ttl=64) / UDP(sport=5000 + i, dport=53) / Raw(h.encode()),
            )
            for i, h in enumerate(HOSTS)
        ],
        len(HOSTS),
    )
    eq(len(got), len(HOSTS), "translated")
    for p in got:
        assert Dot1Q in p, p.summary()
        eq(p[Dot1Q].vlan, ZONE_OUTSIDE, "VID: the zone it leaves to")
        eq(p[Dot1Q].type, 0x0800, "802.1Q type: IPv4 (no learn tag: learn mode is off)")
        eq((p[Ether].src, p[Ether].dst), (SP_OUT_MAC, SWITCH_SP_MAC), "MACs")
        eq((p[IP].dst, p[UDP].dport, p[IP].ttl), (REMOTE, 53, 63))
        assert ip_address(p[IP].src) in POOL, p[IP].src
        assert checksums_hold(p), p.summary()
        MAPPINGS[bytes(p[UDP].payload).decode()] = (p[IP].src, p[UDP].sport)
    eq(len(MAPPINGS), len(HOSTS), "one mapping per host")


def case_replies_come_back_tagged_inside(nat: Nat) -> None:
    got = exchange(
        [
            from_switch(
                ZONE_OUTSIDE,
                SWITCH_OUT_MAC,
                GATEWAY_MAC,
                IP(src=REMOTE, dst=ext, ttl=60) / UDP(sport=53, dport=port) / Raw(h.encode()),
            )
            for h, (ext, port) in MAPPINGS.items()
        ],
        len(MAPPINGS),
    )
    eq(len(got), len(MAPPINGS), "replies")
    for p in got:
        h = bytes(p[UDP].payload).decode()
        eq(p[Dot1Q].vlan, ZONE_INSIDE, "VID")
        eq(p[Dot1Q].type, 0x0800, "802.1Q type: IPv4 (no learn tag)")
        eq((p[Ether].src, p[Ether].dst), (SP_IN_MAC, SWITCH_SP_MAC), "MACs")
        eq((p[IP].src, p[IP].dst, p[UDP].dport, p[IP].ttl), (REMOTE, h, 5000 + HOSTS.index(h), 59))
        assert checksums_hold(p), p.summary()
    stats = nat.stats()
    eq((stats["workers"], stats["dispatch"]), (2, "software"))
    assert all(lc["sessions"] > 0 for lc in stats["lcores"]), stats["lcores"]
    # both workers had packets: each counted the time they took (busy_us),
    # which on this idle link is far from the time it has polled (a bound
    # relative to it holds at ThreadSanitizer's pace too: make test-threads)
    polled_us = (time.monotonic() - nat.started) * 1e6
    assert all(0 < lc["busy_us"] < polled_us / 4 for lc in stats["lcores"]), (
        polled_us,
        stats["lcores"],
    )
    c = stats["counters"]
    eq((c["in2out"], c["out2in"]), (len(HOSTS), len(HOSTS)), "translated")
    eq(c["handoff"], 0, "each flow on one worker both ways")


def case_hairpin_between_two_hosts(nat: Nat) -> None:
    a, b = HOSTS[0], HOSTS[1]
    ext_b, port_b = MAPPINGS[b]
    got = exchange(
        [
            from_switch(
                ZONE_INSIDE,
                SWITCH_IN_MAC,
                host_mac(a),
                IP(src=a, dst=ext_b, ttl=64) / UDP(sport=5000, dport=port_b) / Raw(b"hp"),
            )
        ],
        1,
    )
    eq(len(got), 1, "hairpinned")
    p = got[0]
    # back into the inside zone, from a's external endpoint (RFC 4787 REQ-9)
    eq(p[Dot1Q].vlan, ZONE_INSIDE, "VID")
    eq((p[IP].dst, p[UDP].dport), (b, 5000 + HOSTS.index(b)))
    eq((p[IP].src, p[UDP].sport), MAPPINGS[a], "source: a's mapping")
    eq(nat.stats()["counters"]["hairpin"], 1)


def case_bad_tags_dropped_and_counted(nat: Nat) -> None:
    before = nat.stats()["counters"]
    pkt = IP(src=HOSTS[2], dst=REMOTE) / UDP(sport=6000, dport=53)
    got = exchange(
        [
            Ether(src=host_mac(HOSTS[2]), dst=SWITCH_IN_MAC) / pkt,  # no tag
            from_switch(7, SWITCH_IN_MAC, host_mac(HOSTS[2]), pkt),  # no such VID
            from_switch(3, SWITCH_IN_MAC, host_mac(HOSTS[2]), pkt),  # the slow path's own zone
        ],
        0,
        timeout=1.0,
    )
    eq(got, [], "nothing sent")
    after = nat.stats()["counters"]
    eq(after["drop_slow_path_tag"] - before.get("drop_slow_path_tag", 0), 3, "drop_slow_path_tag")
    eq(after["in2out"], before["in2out"], "in2out")


def case_not_slow_path_checks_the_mac(nat: Nat) -> None:
    """What makes a slow-path link one: on it, frames to other MACs are the
    switch's misses (above). The same frame to swpath's own MAC works too."""
    got = exchange(
        [
            from_switch(
                ZONE_INSIDE,
                SP_IN_MAC,
                host_mac(HOSTS[3]),
                IP(src=HOSTS[3], dst=REMOTE) / UDP(sport=5003, dport=53) / Raw(b"own"),
            )
        ],
        1,
    )
    eq(len(got), 1, "translated")
    eq(got[0][UDP].sport, MAPPINGS[HOSTS[3]][1], "the host's mapping again")


def case_icmp_error_for_a_peer_goes_to_it(nat: Nat) -> None:
    """The switch sends every ICMP error from outside to the default instance
    (it does not read the quoted port); one about a port of the peer's block
    goes on to the peer, relayed through the switch as it came."""
    before = nat.stats()["counters"]
    quoted = IP(src="203.0.113.2", dst=REMOTE, ttl=3) / UDP(sport=50000, dport=53)
    err = IP(src="198.51.100.99", dst="203.0.113.2", ttl=30) / ICMP(type=11, code=0) / quoted
    got = exchange([from_switch(ZONE_OUTSIDE, SWITCH_OUT_MAC, GATEWAY_MAC, err)], 1)
    eq(len(got), 1, "handed on")
    p = got[0]
    eq(p[Dot1Q].vlan, PEER_VID + 1, "VID: the peer's relay VID")
    eq(p[Ether].src, SP_OUT_MAC, "from the outside sub-interface")
    eq((p[IP].src, p[IP].dst, p[IP].ttl), ("198.51.100.99", "203.0.113.2", 30))
    eq((p[ICMP].type, p[UDPerror].sport), (11, 50000), "quote untouched")
    eq(bytes(p[IP]), bytes(err), "as it came")
    after = nat.stats()["counters"]
    eq(after["peer_handoff"] - before.get("peer_handoff", 0), 1, "peer_handoff")
    eq(after["icmp_error_out2in"], before["icmp_error_out2in"], "not translated here")


def case_hairpin_to_a_peers_mapping(nat: Nat) -> None:
    """A host here sends to a mapping of the peer's block: the source is
    translated here (a hairpin's first pass), the rest is the peer's."""
    a = HOSTS[4]
    before = nat.stats()["counters"]
    got = exchange(
        [
            from_switch(
                ZONE_INSIDE,
                SWITCH_IN_MAC,
                host_mac(a),
                IP(src=a, dst="203.0.113.3", ttl=64) / UDP(sport=5004, dport=45000) / Raw(b"x"),
            )
        ],
        1,
    )
    eq(len(got), 1, "handed on")
    p = got[0]
    eq(p[Dot1Q].vlan, PEER_VID, "VID: the peer's")
    eq((p[IP].src, p[UDP].sport), MAPPINGS[a], "source: a's mapping")
    eq((p[IP].dst, p[UDP].dport, p[IP].ttl), ("203.0.113.3", 45000, 63))
    assert checksums_hold(p), p.summary()
    after = nat.stats()["counters"]
    eq(after["peer_handoff"] - before["peer_handoff"], 1, "peer_handoff")
    eq(after["hairpin"] - before["hairpin"], 1, "hairpin")


def case_handed_over_by_a_peer(nat: Nat) -> None:
    """What the switch hands over with VID 4 is a hairpin's second pass:
    from one of our own addresses, which a packet from a link may not be, to
    a mapping here, and out to the host. What it relays (VID 5) about a
    peer's port is never passed on again (no loop between instances), with
    either tag."""
    b = HOSTS[5]
    ext_b, port_b = MAPPINGS[b]
    before = nat.stats()["counters"]
    hp = IP(src="203.0.113.4", dst=ext_b, ttl=63) / UDP(sport=45001, dport=port_b) / Raw(b"y")
    quoted = IP(src="203.0.113.2", dst=REMOTE) / UDP(sport=50001, dport=53)
    err = IP(src="198.51.100.99", dst="203.0.113.2") / ICMP(type=3, code=3) / quoted
    got = exchange(
        [
            from_switch(HANDOFF_VID, SWITCH_SP_MAC, SWITCH_SP_MAC, hp),
            from_switch(HANDOFF_VID, SWITCH_SP_MAC, SWITCH_SP_MAC, err),
            from_switch(RELAY_VID, SWITCH_SP_MAC, SWITCH_SP_MAC, err),
        ],
        1,
    )
    eq(len(got), 1, "the hairpin only")
    p = got[0]
    eq(p[Dot1Q].vlan, ZONE_INSIDE, "VID")
    eq((p[IP].src, p[UDP].sport), ("203.0.113.4", 45001), "the peer's mapping")
    eq((p[IP].dst, p[UDP].dport, p[IP].ttl), (b, 5000 + HOSTS.index(b), 63))
    assert checksums_hold(p), p.summary()
    after = nat.stats()["counters"]
    eq(after["peer_received"] - before.get("peer_received", 0), 3, "peer_received")
    eq(after["peer_handoff"], before["peer_handoff"], "nothing passed on again")
    eq(after["drop_icmp_error"] - before.get("drop_icmp_error", 0), 2, "drop_icmp_error")
    eq(after["drop_martian"], before.get("drop_martian", 0), "no link checks")


class Stream:
    """A `subscribe sessions` connection, read line by line (bounded waits)."""

    def __init__(self, nat: Nat) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(str(nat.sock))
        self.sock.sendall(b"subscribe sessions\n")
        self.file = self.sock.makefile("rb")

    def until(
        self, done: Callable[[SessionEvent], bool], timeout: float = 5.0
    ) -> list[SessionEvent]:
        """Events up to and including the first that is done (AssertionError
        after timeout)."""
        events: list[SessionEvent] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                line = self.file.readline()
            except TimeoutError:
                break
            if not line:
                raise AssertionError(f"the stream ended after {events}")
            events.append(parse_event(line))
            if done(events[-1]):
                return events
        raise AssertionError(f"no such event within {timeout} s; got {events}")

    def until_kind(self, kind: str, n: int, timeout: float = 5.0) -> list[SessionEvent]:
        """The first n events of one kind (others skipped)."""
        seen: list[SessionEvent] = []

        def done(e: SessionEvent) -> bool:
            if e.kind == kind:
                seen.append(e)
            return len(seen) == n

        self.until(done, timeout)
        return seen

    def until_closed(self, ids: set[int], timeout: float) -> list[SessionEvent]:
        """The closed events of every session in ids (others' events skipped)."""
        closed: dict[int, SessionEvent] = {}

        def done(e: SessionEvent) -> bool:
            if e.kind == "closed" and e.id in ids:
                closed[e.id] = e
            return closed.keys() >= ids

        self.until(done, timeout)
        return list(closed.values())

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def text(endpoint: Endpoint | None) -> str:
    assert endpoint is not None
    return f"{format_ipv4(endpoint.address)}:{endpoint.port}"


def case_stream_snapshot_then_tcp_life(nat: Nat) -> None:
    """The offload manager's feed: a snapshot of what is open, then a TCP
    session's open, state changes and deletion, as they happen."""
    stream = Stream(nat)
    try:
        listed = query(nat.sock, "sessions")
        assert isinstance(listed, list)
        snapshot = stream.until(lambda e: e.kind == "synced")
        opened = [e for e in snapshot if e.kind == "opened"]
        assert all(e.snapshot for e in opened), opened
        eq(sorted(e.id for e in opened), sorted(r["id"] for r in listed), "snapshot ids")
        eq(snapshot[-1].count, len(listed), "synced count")
        by_id = {r["id"]: r for r in listed}
        for e in opened:
            row = by_id[e.id]
            eq(
                (text(e.internal), text(e.external), text(e.remote)),
                (row["internal"], row["external"], row["remote"]),
                f"session {e.id}",
            )

        host = HOSTS[5]
        syn = IP(src=host, dst=REMOTE, ttl=64) / TCP(sport=40000, dport=443, flags="S", seq=1)
        out = exchange([from_switch(ZONE_INSIDE, SWITCH_IN_MAC, host_mac(host), syn)], 1)
        eq(len(out), 1, "SYN translated")
        ext, ext_port = out[0][IP].src, out[0][TCP].sport
        (new,) = stream.until(lambda e: e.kind == "opened")
        eq(
            (new.protocol, new.origin, new.rule, new.tcp_state, new.snapshot),
            (6, "snat", 1, "opening", False),
        )
        eq(
            (text(new.internal), text(new.external), text(new.remote)),
            (f"{host}:40000", f"{ext}:{ext_port}", f"{REMOTE}:443"),
        )

        def segment(flags: str, inbound: bool) -> Packet:
            if inbound:
                pkt = IP(src=REMOTE, dst=ext, ttl=60) / TCP(sport=443, dport=ext_port, flags=flags)
                return from_switch(ZONE_OUTSIDE, SWITCH_OUT_MAC, GATEWAY_MAC, pkt)
            pkt = IP(src=host, dst=REMOTE, ttl=64) / TCP(sport=40000, dport=443, flags=flags)
            return from_switch(ZONE_INSIDE, SWITCH_IN_MAC, host_mac(host), pkt)

        # SYN-ACK: established; ACKs change nothing; a FIN: closing
        exchange([segment("SA", True), segment("A", False), segment("A", True)], 3)
        (state,) = stream.until(lambda e: e.kind == "state")
        eq((state.id, state.tcp_state), (new.id, "established"))
        exchange([segment("FA", False)], 1)
        (state,) = stream.until(lambda e: e.kind == "state")
        eq((state.id, state.tcp_state), (new.id, "closing"))

        eq(query(nat.sock, "sessions delete proto tcp"), {"deleted": 1})
        (closed,) = stream.until(lambda e: e.kind == "closed")
        eq(
            (closed.id, closed.reason, text(closed.external)),
            (new.id, "deleted", f"{ext}:{ext_port}"),
        )
        c = nat.stats()["counters"]
        eq(c["stream_dropped"], 0, "stream_dropped")
    finally:
        stream.close()


def case_session_offload_command(nat: Nat) -> None:
    """The offload manager marks a session the switch now holds; a command
    about a session that is not there is counted, not applied."""
    rows = query(nat.sock, "sessions src " + HOSTS[0])
    assert isinstance(rows, list)
    (row,) = [r for r in rows if r["remote"] == f"{REMOTE}:53"]
    eq(row["offloaded"], False)
    line = f"session offload {row['id']} udp {row['internal']} {row['remote']}"
    eq(
        nat.lines(
            line, f"session offload {row['id'] + 1000} udp {row['internal']} {row['remote']}"
        ),
        ["ok", "ok"],
    )
    deadline = time.monotonic() + 2
    while nat.stats()["counters"]["offload_unknown"] < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    c = nat.stats()["counters"]
    eq((c["sessions_offloaded"], c["offload_unknown"]), (1, 1), "counters")
    rows = query(nat.sock, "sessions src " + HOSTS[0])
    assert isinstance(rows, list)
    eq([r["offloaded"] for r in rows if r["id"] == row["id"]], [True])


def case_stream_after_packets(nat: Nat) -> None:
    """`offload after_packets 2`: a one-packet flow is never announced (it
    never costs the switch a write); a flow is announced at its second
    packet, and a new subscriber's snapshot leaves the first kind out."""
    eq(nat.lines("offload after_packets 2"), ["ok"])
    stream = Stream(nat)
    try:
        (run,) = [e.run for e in stream.until(lambda e: e.kind == "synced")[-1:]]
        assert run != 0, "synced carries the process's run"

        def flow(host: str, sport: int) -> Packet:
            pkt = IP(src=host, dst=REMOTE, ttl=64) / UDP(sport=sport, dport=53)
            return from_switch(ZONE_INSIDE, SWITCH_IN_MAC, host_mac(host), pkt)

        one, two = flow(HOSTS[6], 8000), flow(HOSTS[7], 8000)
        exchange([one, two], 2)
        later = Stream(nat)
        try:
            snapshot = later.until(lambda e: e.kind == "synced")
            eq(snapshot[-1].run, run, "one process, one run")
            opened = [e for e in snapshot if e.kind == "opened"]
            assert not [e for e in opened if text(e.internal).endswith(":8000")], opened
        finally:
            later.close()
        exchange([two], 1)
        (opened,) = stream.until_kind("opened", 1)
        eq(text(opened.internal), f"{HOSTS[7]}:8000", "announced at its second packet")
        rows = query(nat.sock, "sessions")
        assert isinstance(rows, list)
        eq(len([r for r in rows if r["internal"].endswith(":8000")]), 2, "both sessions open")
    finally:
        eq(nat.lines("offload after_packets 1"), ["ok"])
        stream.close()


def case_stream_expiry(nat: Nat) -> None:
    """Sessions that age out close on the stream, reason expired; a second
    subscriber gets the same events. (A timeout applies to sessions opened
    after it is set: the others are on the timer wheel for their old one.)"""
    eq(nat.lines("timeouts udp 2"), ["ok"])
    first, second = Stream(nat), Stream(nat)
    try:
        first.until(lambda e: e.kind == "synced")
        second.until(lambda e: e.kind == "synced")
        hosts = HOSTS[8:12]
        exchange(
            [
                from_switch(
                    ZONE_INSIDE,
                    SWITCH_IN_MAC,
                    host_mac(h),
                    IP(src=h, dst=REMOTE, ttl=64) / UDP(sport=7000, dport=53),
                )
                for h in hosts
            ],
            len(hosts),
        )
        for stream in (first, second):
            opened = stream.until_kind("opened", len(hosts))
            eq(sorted(text(e.internal) for e in opened), sorted(f"{h}:7000" for h in hosts))
            ids = {e.id for e in opened}
            closed = stream.until_closed(ids, timeout=15)
            eq({e.reason for e in closed}, {"expired"}, "reason")
        left = query(nat.sock, "sessions")
        assert isinstance(left, list)
        eq([r for r in left if r["internal"].endswith(":7000")], [], "aged out")
    finally:
        eq(nat.lines("timeouts udp 300"), ["ok"])
        first.close()
        second.close()


CASES: list[Callable[[Nat], None]] = [
    case_inside_misses_leave_tagged_outside,
    case_replies_come_back_tagged_inside,
    case_hairpin_between_two_hosts,
    case_bad_tags_dropped_and_counted,
    case_not_slow_path_checks_the_mac,
    case_icmp_error_for_a_peer_goes_to_it,
    case_hairpin_to_a_peers_mapping,
    case_handed_over_by_a_peer,
    case_stream_snapshot_then_tcp_life,
    case_session_offload_command,
    case_stream_after_packets,
    case_stream_expiry,  # last: every session ages out
]


def main() -> int:
    args = parse_args(__doc__)

    def body(tally: Tally) -> None:
        cases_on_one_nat(
            tally, args.app, "sp-slow-path-", CASES, commands=COMMANDS, devices=(SLOW,)
        )

    return live_main("sp_slow_path", make_link, remove_link, body)


if __name__ == "__main__":
    sys.exit(main())
