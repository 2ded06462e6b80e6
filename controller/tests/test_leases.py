"""The lease a learning switch gives each kind of session (config/leases.py):
the longest timeout class at most half the kind's idle timeout, else the
shortest; with the default timeouts and p4c-dpdk's classes."""

from __future__ import annotations

import pytest
from quicknat.config.leases import KINDS, Lease, lease_for, leases
from quicknat.config.model import P4C_DPDK_LEARN_TIMEOUTS, Timeouts


def test_defaults_with_p4c_dpdk_classes() -> None:
    got = leases(Timeouts(), P4C_DPDK_LEARN_TIMEOUTS)
    assert got == {
        "icmp": Lease(1, 30),  # 60 s: 30 fits, 60 does not
        "udp": Lease(3, 120),  # 300 s: 120 (class 3, not 6 or 7)
        "tcp_transitory": Lease(3, 120),  # 240 s
        "tcp_established": Lease(4, 300),  # 7,440 s: 43,200 is past half
    }
    assert set(got) == set(KINDS)


def test_shortest_class_when_none_fits() -> None:
    # a lab's 2 s UDP timeout with classes of 10 s and more: the shortest
    assert lease_for(P4C_DPDK_LEARN_TIMEOUTS, 2) == Lease(0, 10)
    assert lease_for((5, 3, 9), 4) == Lease(1, 3)


def test_exactly_half_fits() -> None:
    assert lease_for((2, 4, 8), 8) == Lease(1, 4)
    assert lease_for((2, 4, 8), 7) == Lease(0, 2)


def test_no_class_is_an_error() -> None:
    with pytest.raises(ValueError):
        lease_for((), 60)


def test_the_switch_gets_the_classes_with_its_program() -> None:
    """A learning target's program carries [offload] learn_timeouts as the
    device config's first line (quicknat-swx applies it), under a cookie of
    its own; the program is otherwise the committed one."""
    from quicknat.controller.program import LEARN_TIMEOUTS_LINE, Pipeline

    pna = Pipeline.of_target("swx")
    learning = pna.with_learn_timeouts((2, 3, 4))
    first, rest = learning.device_config.split(b"\n", 1)
    assert first == LEARN_TIMEOUTS_LINE.rstrip() + b" 2,3,4"
    assert rest == pna.device_config
    assert learning.cookie != pna.cookie
    assert pna.with_learn_timeouts((2, 3, 4)).cookie == learning.cookie
    assert pna.with_learn_timeouts((2, 3, 5)).cookie != learning.cookie
