"""The NAT core's IPFIX events (nat/core.py): sessions opened and closed,
and a pool address out of ports or a whole pool, once per episode."""

from __future__ import annotations

import random

import configs
import pytest
from quicknat.addr import parse_ipv4 as ip
from quicknat.config import parse_config
from quicknat.config.model import Zone
from quicknat.nat.allocator import Endpoint
from quicknat.nat.core import Nat, Refused
from quicknat.nat.session import FlowKey, Session

UDP = 17
TWO_ADDRESSES = """
[[pool]]
name = "public"
addresses = ["203.0.113.1", "203.0.113.2"]
ports = "2000-2000"

[[rule]]
type = "snat"
prefix = "10.0.0.0/24"
pool = "public"
"""


class Recorder:
    def __init__(self) -> None:
        self.sessions: list[tuple[str, Session]] = []
        self.exhausted: list[tuple[str, int, int, int]] = []

    def session(self, event: str, session: Session, now: float) -> None:
        self.sessions.append((event, session))

    def exhaustion(self, what: str, address: int, pool_id: int, protocol: int, now: float) -> None:
        self.exhausted.append((what, address, pool_id, protocol))


def nat(pieces: str, recorder: Recorder) -> Nat:
    return Nat(
        parse_config(pieces),
        rng=random.Random(1),
        on_session=recorder.session,
        on_exhausted=recorder.exhaustion,
    )


def flow(host: str, sport: int = 4000) -> FlowKey:
    return FlowKey(UDP, ip(host), ip("198.51.100.9"), sport, 53)


def test_each_session_opened_and_closed_once_but_not_a_restored_one() -> None:
    recorder = Recorder()
    core = nat(configs.text("zones", "snat_pool_ten_ports"), recorder)
    first = core.new_flow(Zone.INSIDE, flow("10.0.0.1"), 0)
    second = core.new_flow(Zone.INSIDE, flow("10.0.0.1", 4002), 0)
    assert core.new_flow(Zone.INSIDE, flow("10.0.0.1"), 1) is first  # no new event
    core.remove(first, 2)
    assert [(e, s.id) for e, s in recorder.sessions] == [
        ("created", first.id),
        ("created", second.id),
        ("deleted", first.id),
    ]
    recorder.sessions.clear()
    fresh = nat(configs.text("zones", "snat_pool_ten_ports"), recorder)
    assert fresh.restore(second.in2out, second.external, 3) is not None
    assert recorder.sessions == [], "a restored session was announced by its first life"


def test_ports_exhausted_once_per_episode_and_the_pool_when_all_are() -> None:
    recorder = Recorder()
    core = nat(configs.text("zones") + TWO_ADDRESSES, recorder)
    # paired pooling: 10.0.0.1 on one address, 10.0.0.2 on the other
    a = core.new_flow(Zone.INSIDE, flow("10.0.0.1"), 0)
    b = core.new_flow(Zone.INSIDE, flow("10.0.0.2"), 0)
    assert {a.external.address, b.external.address} == {ip("203.0.113.1"), ip("203.0.113.2")}
    for _ in range(3):  # a flood: one event
        with pytest.raises(Refused):
            core.new_flow(Zone.INSIDE, flow("10.0.0.1", 4002), 1)
    assert recorder.exhausted == [("ports", a.external.address, 1, UDP)]
    with pytest.raises(Refused):
        core.new_flow(Zone.INSIDE, flow("10.0.0.2", 4002), 1)
    assert recorder.exhausted[1:] == [
        ("ports", b.external.address, 1, UDP),
        ("addresses", 0, 1, UDP),
    ]
    # a's port is free again, then taken: a new episode, for the address
    # and (b's still out) for the pool
    core.remove(a, 2)
    c = core.new_flow(Zone.INSIDE, flow("10.0.0.3"), 3)
    assert c.external == Endpoint(a.external.address, 2000)
    with pytest.raises(Refused):
        core.new_flow(Zone.INSIDE, flow("10.0.0.4"), 3)
    assert recorder.exhausted[3:] == [
        ("ports", a.external.address, 1, UDP),
        ("addresses", 0, 1, UDP),
    ]
