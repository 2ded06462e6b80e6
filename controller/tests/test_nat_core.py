"""New-flow decisions: EIM, filtering, DNAT, refusals, removal (no I/O)."""

from __future__ import annotations

import random

import pytest
from quicknat.addr import parse_ipv4 as ip
from quicknat.config import parse_config
from quicknat.config.model import Zone
from quicknat.nat.allocator import Endpoint, PortPolicy
from quicknat.nat.core import Nat, Refusal, Refused
from quicknat.nat.session import FlowKey, Origin, Rewrite

TCP, UDP, ICMP = 6, 17, 1
BASE = """
[[interface]]
name = "in0"
zone = "inside"
[[interface]]
name = "out0"
zone = "outside"
[[pool]]
name = "public"
addresses = ["203.0.113.1"]
ports = "2000-2009"
[[rule]]
type = "snat"
prefix = "10.0.0.0/24"
pool = "public"
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


def test_endpoint_independent_mapping() -> None:
    n = nat()
    a = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "198.51.100.9", 53), 0)
    b = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "192.0.2.44", 9999), 0)
    assert a.external == b.external and a.id != b.id
    c = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5001, "192.0.2.44", 9999), 0)
    assert c.external != a.external


def test_same_first_packet_twice_is_one_session() -> None:
    n = nat()
    key = out("10.0.0.7", 5000, "198.51.100.9", 53)
    assert n.new_flow(Zone.INSIDE, key, 0) is n.new_flow(Zone.INSIDE, key, 1)
    assert n.session_count == 1


def test_icmp_echo_identifier_is_mapped_like_a_port() -> None:
    n = nat()
    s = n.new_flow(Zone.INSIDE, FlowKey(ICMP, ip("10.0.0.7"), ip("8.8.8.8"), 77, 77), 0)
    assert s.in2out == FlowKey(ICMP, ip("10.0.0.7"), ip("8.8.8.8"), 77, 77)
    ext = s.external.port
    assert s.out2in == FlowKey(ICMP, ip("8.8.8.8"), ip("203.0.113.1"), ext, ext)


@pytest.mark.parametrize(
    ("mode", "same_address_other_port", "other_address"),
    [
        ("endpoint-independent", True, True),
        ("address-dependent", True, False),
        ("address-and-port-dependent", False, False),
    ],
)
def test_inbound_filtering(mode: str, same_address_other_port: bool, other_address: bool) -> None:
    n = nat(f'[filtering]\nudp = "{mode}"\n')
    s = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "198.51.100.9", 53), 0)
    ext = s.external

    def inbound(src: str, sport: int) -> bool:
        try:
            got = n.new_flow(Zone.OUTSIDE, FlowKey(UDP, ip(src), ext.address, sport, ext.port), 1)
        except Refused as exc:
            assert exc.reason is Refusal.FILTERED
            return False
        assert got.origin is Origin.INBOUND and got.internal == Endpoint(ip("10.0.0.7"), 5000)
        return True

    assert inbound("198.51.100.9", 54) is same_address_other_port
    assert inbound("192.0.2.1", 53) is other_address


def test_unsolicited_inbound_never_creates_a_mapping() -> None:
    n = nat('[filtering]\nudp = "endpoint-independent"\n')
    with pytest.raises(Refused) as info:
        n.new_flow(Zone.OUTSIDE, out("198.51.100.9", 53, "203.0.113.1", 2005), 0)
    assert info.value.reason is Refusal.UNSOLICITED
    assert n.session_count == 0


RST, ACK, SYN = 0x04, 0x10, 0x02


def test_a_tcp_rst_finds_its_session_but_opens_none() -> None:
    n = nat('[filtering]\ntcp = "endpoint-independent"\n')
    key = out("10.0.0.7", 40000, "198.51.100.9", 443, TCP)
    for flags in (RST, RST | ACK):
        with pytest.raises(Refused) as info:
            n.new_flow(Zone.INSIDE, key, 0, flags)
        assert info.value.reason is Refusal.RST_NO_SESSION
    # at a DNAT rule, where any other first packet opens a session
    with pytest.raises(Refused) as info:
        n.new_flow(Zone.OUTSIDE, out("198.51.100.9", 40000, "203.0.113.80", 80, TCP), 0, RST)
    assert info.value.reason is Refusal.RST_NO_SESSION
    assert n.session_count == 0 and n.mapping_for(TCP, Endpoint(ip("10.0.0.7"), 40000)) is None
    # through a mapping the filtering would let the remote in by
    s = n.new_flow(Zone.INSIDE, key, 0, SYN)
    other = FlowKey(TCP, ip("192.0.2.1"), s.external.address, 999, s.external.port)
    with pytest.raises(Refused) as info:
        n.new_flow(Zone.OUTSIDE, other, 1, RST)
    assert info.value.reason is Refusal.RST_NO_SESSION and n.session_count == 1
    # a RST of a session gets that session, from either side
    assert n.new_flow(Zone.INSIDE, key, 2, RST) is s
    assert n.new_flow(Zone.OUTSIDE, s.out2in, 2, RST | ACK) is s
    # the flags mean nothing for other protocols
    udp = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "198.51.100.9", 53), 3, RST)
    assert udp.origin is Origin.SNAT and n.session_count == 2


def test_dnat_port_forwarding_and_one_to_one() -> None:
    n = nat()
    s = n.new_flow(Zone.OUTSIDE, out("198.51.100.9", 40000, "203.0.113.80", 80, TCP), 0)
    assert s.origin is Origin.DNAT and s.internal == Endpoint(ip("10.0.0.5"), 8080)
    assert s.in2out == FlowKey(TCP, ip("10.0.0.5"), ip("198.51.100.9"), 8080, 40000)
    assert s.in2out_rewrite.src == Endpoint(ip("203.0.113.80"), 80)
    t = n.new_flow(Zone.OUTSIDE, out("198.51.100.9", 40000, "203.0.113.98", 22, TCP), 0)
    assert t.internal == Endpoint(ip("10.0.0.98"), 22)


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


def test_pool_exhaustion_refuses_new_flows_and_keeps_existing_ones() -> None:
    n = nat()
    held = [n.new_flow(Zone.INSIDE, out("10.0.0.7", 100 + i, "8.8.8.8", 53), 0) for i in range(10)]
    with pytest.raises(Refused) as info:
        n.new_flow(Zone.INSIDE, out("10.0.0.8", 1, "8.8.8.8", 53), 0)
    assert info.value.reason is Refusal.POOL_EXHAUSTED
    assert all(n.session_for(s.out2in) is s for s in held)  # nothing evicted (RFC 6888 REQ-5)


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


def test_tcp_handshake_makes_a_session_established_and_fin_or_rst_transitory() -> None:
    n = nat()
    syn = out("10.0.0.7", 5000, "198.51.100.9", 443, TCP)
    s = n.new_flow(Zone.INSIDE, syn, 0)
    assert n.tcp_segment(s, syn, SYN) == []  # transitory before and after
    assert n.timeout(s) == 240
    assert n.tcp_segment(s, s.out2in, SYN | ACK) == [s]  # both SYNs: established
    assert n.timeout(s) == 7440
    assert n.tcp_segment(s, syn, ACK) == []
    assert n.tcp_segment(s, s.out2in, FIN | ACK) == [s]  # closing (RFC 7857 sec. 2.2)
    assert n.timeout(s) == 240


def test_tcp_rst_leaves_a_session_at_most_the_transitory_timeout() -> None:
    n = nat()
    key = out("10.0.0.7", 5001, "198.51.100.9", 443, TCP)
    s = n.new_flow(Zone.INSIDE, key, 0)
    n.tcp_segment(s, key, SYN)
    n.tcp_segment(s, s.out2in, SYN | ACK)
    assert n.tcp_segment(s, key, RST) == [s]
    assert n.timeout(s) == 240


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


def test_rules_naming_one_fixed_address_share_its_ports() -> None:
    config = parse_config(
        BASE
        + '[[rule]]\ntype = "snat"\nprefix = "10.5.0.0/24"\nto = "203.0.113.50"\n'
        + '[[rule]]\ntype = "snat"\nprefix = "10.6.0.0/24"\nto = "203.0.113.50"\n'
    )
    n = Nat(config, rng=random.Random(1))
    for allocator in n.allocators.values():  # port 4000 asked for by both hosts
        allocator.policy = PortPolicy(preserve_port=True)
    a = n.new_flow(Zone.INSIDE, out("10.5.0.1", 4000, "8.8.8.8", 53), 0)
    b = n.new_flow(Zone.INSIDE, out("10.6.0.1", 4000, "8.8.8.8", 53), 0)
    assert a.external.address == b.external.address == ip("203.0.113.50")
    assert a.external.port == 4000 and b.external.port != 4000  # RFC 4787 REQ-3


def test_mapping_events_created_and_deleted_once_per_mapping() -> None:
    events: list[tuple[str, Endpoint, Endpoint]] = []
    n = Nat(
        parse_config(BASE),
        rng=random.Random(1),
        on_mapping=lambda e, m, now: events.append((e, m.internal, m.external)),
    )
    a = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "198.51.100.9", 53), 0)
    b = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "192.0.2.1", 53), 0)  # same mapping
    n.remove(a, 1)
    assert [e[0] for e in events] == ["created"]
    n.remove(b, 2)
    assert events == [("created", a.internal, a.external), ("deleted", a.internal, a.external)]


def test_quota_event_once_per_episode() -> None:
    """RFC 6888 REQ-4/5 (swpath: test_sp_nat.c::test_quota_events_once_per_episode):
    one event when a host is first refused at a limit, none for the refusals
    after it, and a new one once a session of the host has closed."""
    events: list[tuple[str, int, int]] = []
    n = Nat(
        parse_config(BASE + "[limits]\nsessions_per_host = 2\nports_per_host = 3\n"),
        rng=random.Random(1),
        on_quota=lambda limit, host, value, now: events.append((limit, host, value)),
    )
    host = ip("10.0.0.7")
    first = n.new_flow(Zone.INSIDE, out("10.0.0.7", 1, "8.8.8.8", 53), 0)
    n.new_flow(Zone.INSIDE, out("10.0.0.7", 2, "8.8.8.8", 53), 0)
    for sport in range(3, 50):
        with pytest.raises(Refused):
            n.new_flow(Zone.INSIDE, out("10.0.0.7", sport, "8.8.8.8", 53), 0)
    assert events == [("sessions_per_host", host, 2)]
    n.remove(first, 1)
    n.new_flow(Zone.INSIDE, out("10.0.0.7", 3, "8.8.8.8", 53), 1)
    with pytest.raises(Refused):
        n.new_flow(Zone.INSIDE, out("10.0.0.7", 4, "8.8.8.8", 53), 1)
    assert events == [("sessions_per_host", host, 2)] * 2
    # the port quota is its own event
    m = Nat(
        parse_config(BASE + "[limits]\nports_per_host = 1\n"),
        rng=random.Random(1),
        on_quota=lambda limit, host, value, now: events.append((limit, host, value)),
    )
    m.new_flow(Zone.INSIDE, out("10.0.0.7", 1, "8.8.8.8", 53), 0)
    for sport in (2, 3):
        with pytest.raises(Refused) as info:
            m.new_flow(Zone.INSIDE, out("10.0.0.7", sport, "8.8.8.8", 53), 0)
        assert info.value.reason is Refusal.QUOTA_EXCEEDED
    assert events[2:] == [("ports_per_host", host, 1)]


# -- hairpinning (RFC 4787 REQ-9, RFC 5382 REQ-8, RFC 5508 sec. 6) -----------------


def test_hairpin_to_a_published_server_translates_both_ends() -> None:
    n = nat()
    a = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "203.0.113.80", 80, TCP), 0)
    assert a.hairpin and a.partner is None and a.in2out_rewrite is None
    server = n.open_hairpin(a, 0)
    assert server.origin is Origin.DNAT and server.internal == Endpoint(ip("10.0.0.5"), 8080)
    assert a.partner is server and server.partner is a
    # The server sees the client's external endpoint; the client, the published one.
    assert a.in2out_rewrite == Rewrite(src=a.external, dst=server.internal)
    assert server.in2out_rewrite == Rewrite(
        src=Endpoint(ip("203.0.113.80"), 80), dst=Endpoint(ip("10.0.0.7"), 5000)
    )
    assert server.remote == a.external and n.open_hairpin(a, 0) is server


def test_hairpin_between_mappings_follows_the_peer_filtering() -> None:
    """UDP hole punching behind one NAT: the first packet to the peer's mapping is
    refused (address-dependent filtering), but it lets the peer's packet in."""
    n = nat()
    rendezvous = "198.51.100.9"
    h1 = n.new_flow(Zone.INSIDE, out("10.0.0.7", 4000, rendezvous, 3478), 0)
    h2 = n.new_flow(Zone.INSIDE, out("10.0.0.8", 4000, rendezvous, 3478), 0)
    e1, e2 = h1.external, h2.external
    to_h2 = n.new_flow(Zone.INSIDE, out("10.0.0.7", 4000, "203.0.113.1", e2.port), 0)
    assert to_h2.external == e1 and to_h2.hairpin
    with pytest.raises(Refused) as refused:
        n.open_hairpin(to_h2, 0)
    assert refused.value.reason is Refusal.FILTERED and to_h2.in2out_rewrite is None
    to_h1 = n.new_flow(Zone.INSIDE, out("10.0.0.8", 4000, "203.0.113.1", e1.port), 0)
    assert n.open_hairpin(to_h1, 0) is to_h2  # enters by to_h2's out2in key
    assert to_h1.in2out_rewrite == Rewrite(src=e2, dst=Endpoint(ip("10.0.0.7"), 4000))
    assert to_h2.in2out_rewrite == Rewrite(src=e1, dst=Endpoint(ip("10.0.0.8"), 4000))
    # Removing one half leaves the other waiting again, never pointing at a freed port.
    n.remove(to_h1, 1)
    assert to_h2.partner is None and to_h2.in2out_rewrite is None


def test_hairpin_with_endpoint_independent_filtering_opens_at_once() -> None:
    n = nat('[filtering]\nudp = "endpoint-independent"\n')
    h2 = n.new_flow(Zone.INSIDE, out("10.0.0.8", 4000, "198.51.100.9", 3478), 0)
    to_h2 = n.new_flow(Zone.INSIDE, out("10.0.0.7", 4000, "203.0.113.1", h2.external.port), 0)
    inbound = n.open_hairpin(to_h2, 0)
    assert inbound.origin is Origin.INBOUND and inbound.mapping is h2.mapping
    assert inbound.remote == to_h2.external and inbound.hairpin


def test_a_hairpinned_rst_opens_no_second_half() -> None:
    """As swpath's second pass, where the RST enters from outside and meets no
    session: a RST of the first half does not open the second."""
    n = nat()
    a = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "203.0.113.80", 80, TCP), 0, SYN)
    with pytest.raises(Refused) as refused:
        n.open_hairpin(a, 0, RST)
    assert refused.value.reason is Refusal.RST_NO_SESSION and a.partner is None
    server = n.open_hairpin(a, 1, SYN)
    assert server.origin is Origin.DNAT and n.open_hairpin(a, 2, RST) is server


def test_hairpin_to_nothing_is_unsolicited() -> None:
    n = nat()
    s = n.new_flow(Zone.INSIDE, out("10.0.0.7", 4000, "203.0.113.1", 2005), 0)
    with pytest.raises(Refused) as refused:
        n.open_hairpin(s, 0)
    assert refused.value.reason is Refusal.UNSOLICITED and s.partner is None


def test_hairpinned_tcp_segments_move_both_sessions() -> None:
    n = nat()
    a = n.new_flow(Zone.INSIDE, out("10.0.0.7", 5000, "203.0.113.80", 80, TCP), 0)
    server = n.open_hairpin(a, 0)
    assert n.tcp_segment(a, a.in2out, SYN) == []
    assert n.tcp_segment(server, server.in2out, SYN | ACK) == [server, a]
    assert n.timeout(a) == n.timeout(server) == 7440


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


def test_each_pool_allocates_with_its_configured_port_policy() -> None:
    n = nat(
        '[[pool]]\nname = "sip"\naddresses = ["203.0.113.2"]\npreserve_port = true\n'
        + '[[rule]]\ntype = "snat"\nprefix = "10.0.1.0/24"\npool = "sip"\n'
    )
    kept = n.new_flow(Zone.INSIDE, out("10.0.1.7", 5060, "198.51.100.9", 5060), 0)
    assert kept.external == Endpoint(ip("203.0.113.2"), 5060)
    for sport in range(5000, 5009):  # "public": parity (the default), not the port
        s = n.new_flow(Zone.INSIDE, out("10.0.0.7", sport, "198.51.100.9", 53), 0)
        assert s.external.port % 2 == sport % 2 and 2000 <= s.external.port <= 2009
