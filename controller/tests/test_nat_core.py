"""What only the Python core has: flow keys and rewrites, restore after a restart,
the session listing, timeouts by configuration. The behaviour both cores share
is in the NAT vectors (tests/vectors/nat/)."""

from __future__ import annotations

import random

import configs
import pytest
from quicknat.addr import parse_ipv4 as ip
from quicknat.config import parse_config
from quicknat.config.model import Zone
from quicknat.nat.allocator import Endpoint
from quicknat.nat.core import Nat, Refusal, Refused
from quicknat.nat.session import FlowKey, Origin, Rewrite

TCP, UDP, ICMP = 6, 17, 1
BASE = (
    configs.text("zones", "snat_pool_ten_ports")
    + """
[[rule]]
type = "dnat"
prefix = "203.0.113.80"
port = 80
protocol = "tcp"
to = "10.0.0.5"
to_port = 8080
[[rule]]
type = "dnat"
prefix = "203.0.113.96/30"
to = "10.0.0.96/30"
"""
)


def nat(extra: str = "") -> Nat:
    return Nat(parse_config(BASE + extra), rng=random.Random(1))


def out(src: str, sport: int, dst: str, dport: int, proto: int = UDP) -> FlowKey:
    return FlowKey(proto, ip(src), ip(dst), sport, dport)


def test_outbound_flow_gets_both_directions() -> None:
    n = nat()
    s = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "198.51.100.9", 53), now=0)
    assert s.origin is Origin.SNAT and s.rule_id == 1
    assert s.in2out == out("10.0.0.7", 5000, "198.51.100.9", 53)
    assert s.external.address == ip("203.0.113.1") and 2000 <= s.external.port <= 2009
    assert s.out2in == FlowKey(UDP, ip("198.51.100.9"), ip("203.0.113.1"), 53, s.external.port)
    assert s.in2out_rewrite == Rewrite(src=s.external)
    assert s.out2in_rewrite == Rewrite(dst=Endpoint(ip("10.0.0.7"), 5000))
    assert n.session_for(s.out2in) is s and n.session_for(s.in2out) is s


RST, ACK, SYN = 0x04, 0x10, 0x02


def test_refusals_are_reasons_not_crashes() -> None:
    n = nat("[limits]\nsessions_per_host = 2\n")
    with pytest.raises(Refused) as info:
        n.new_flow(Zone.INSIDE, out("10.9.0.1", 1, "8.8.8.8", 53), 0)
    assert info.value.reason is Refusal.NO_RULE
    with pytest.raises(Refused) as info:
        n.new_flow(Zone.INSIDE, FlowKey(47, ip("10.0.0.7"), ip("8.8.8.8"), 0, 0), 0)
    assert info.value.reason is Refusal.UNSUPPORTED
    n.new_flow(Zone.INSIDE, out("10.0.0.7", 1, "8.8.8.8", 53), 0)
    n.new_flow(Zone.INSIDE, out("10.0.0.7", 2, "8.8.8.8", 53), 0)
    with pytest.raises(Refused) as info:
        n.new_flow(Zone.INSIDE, out("10.0.0.7", 3, "8.8.8.8", 53), 0)
    assert info.value.reason is Refusal.SESSION_LIMIT


def test_removing_the_last_session_frees_the_mapping_and_its_port() -> None:
    n = nat()
    a = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "198.51.100.9", 53), 0)
    b = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "192.0.2.1", 53), 0)
    n.remove(a, 10)
    assert n.mapping_for(UDP, a.internal) is not None  # b still uses it
    n.remove(b, 10)
    assert n.mapping_for(UDP, a.internal) is None and n.session_count == 0
    assert n.session_for(a.out2in) is None
    assert n.allocators["public"].ports_held(ip("10.0.0.7")) == 0


def test_timeouts_follow_configuration() -> None:
    n = nat("[timeouts]\nudp = 30\nicmp = 10\n")
    s = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "198.51.100.9", 53), 0)
    assert n.timeout(s) == 30
    t = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "198.51.100.9", 53, TCP), 0)
    assert n.timeout(t) == 240  # no SYN/ACK exchange seen yet: transitory


SYN, ACK, FIN, RST = 0x02, 0x10, 0x01, 0x04


def test_tcp_simultaneous_open_and_mid_flow_pickup_are_established() -> None:
    n = nat()
    key = out("10.0.0.7", 5002, "198.51.100.9", 443, TCP)
    s = n.new_flow(Zone.INSIDE, key, 0)
    n.tcp_segment(s, key, SYN)
    n.tcp_segment(s, s.out2in, SYN)  # the peer's own SYN, not a SYN-ACK
    assert n.timeout(s) == 7440
    key = out("10.0.0.7", 5003, "198.51.100.9", 443, TCP)
    t = n.new_flow(Zone.INSIDE, key, 0)
    n.tcp_segment(t, key, ACK)
    assert n.timeout(t) == 240  # one direction only
    n.tcp_segment(t, t.out2in, ACK)
    assert n.timeout(t) == 7440


# -- hairpinning (RFC 4787 REQ-9, RFC 5382 REQ-8, RFC 5508 sec. 6) -----------------


def test_restored_hairpin_sessions_are_linked_again() -> None:
    n = nat()
    a = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "203.0.113.80", 80, TCP), 0)
    server = n.open_hairpin(a, 0)
    fresh = nat()
    # Entries come back in any order.
    b = fresh.restore(server.in2out, server.external, 5)
    c = fresh.restore(a.in2out, a.external, 5)
    assert b is not None and c is not None
    assert b.partner is c and c.partner is b
    assert c.in2out_rewrite == a.in2out_rewrite


def test_sessions_lists_each_live_session_once() -> None:
    n = nat('[filtering]\nudp = "endpoint-independent"\n')
    made = [
        n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000 + i, "198.51.100.9", 53), 0) for i in range(4)
    ]
    made.append(n.new_flow(Zone.INSIDE, out("10.0.0.7", 9, "198.51.100.9", 9, ICMP), 0))
    made.append(n.new_flow(Zone.OUTSIDE, out("198.51.100.9", 4000, "203.0.113.80", 80, TCP), 0))
    to_h2 = n.new_flow(Zone.INSIDE, out("10.0.0.8", 4000, "203.0.113.1", made[0].external.port), 0)
    made += [to_h2, n.open_hairpin(to_h2, 0)]
    n.remove(made.pop(1), 1)
    made.append(n.new_flow(Zone.INSIDE, out("10.0.0.9", 5001, "198.51.100.9", 53), 2))
    listed = list(n.sessions())
    assert len(listed) == len({id(s) for s in listed}) == n.session_count == len(made)
    assert {id(s) for s in listed} == {id(s) for s in made}
