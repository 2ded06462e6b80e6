"""The install state machine (controller/install_state.py), transition by
transition; the races it exists for run through the controller in
test_controller_expiry.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from quicknat.controller.install_state import Installs, InstallState, TransitionError

P1, P2, P3 = (b"one", 1), (b"two", 1), (b"three", 2)


@dataclass(eq=False)
class S:
    id: int
    install: Any = None


def installed(installs: Installs[S], s: S) -> Installs[S]:
    installs.queue(s)
    installs.take_batch(10)
    installs.installed(s)
    return installs


def test_a_new_session_is_queued_then_installing_then_installed_with_its_packets() -> None:
    i: Installs[S] = Installs()
    s = S(1)
    assert i.queue(s, P1) is True
    assert s.install is InstallState.QUEUED and i.queued() == 1
    i.hold(s, P2)
    assert i.take_batch(10) == [s] and s.install is InstallState.INSTALLING
    i.hold(s, P3)
    assert i.installed(s) == [P1, P2, P3]
    assert s.install is InstallState.INSTALLED and i.in_switch(s)
    assert i.installed_count() == 1 and i.held_packets() == 0


def test_batches_take_at_most_the_limit_in_order() -> None:
    i: Installs[S] = Installs()
    sessions = [S(sid) for sid in range(1, 6)]
    for s in sessions:
        i.queue(s)
    assert i.take_batch(2) == sessions[:2]
    assert i.take_batch(2) == sessions[2:4]
    assert i.count(InstallState.INSTALLING) == 4 and i.count(InstallState.QUEUED) == 1


def test_a_failed_install_forgets_the_session_and_returns_its_packets() -> None:
    i: Installs[S] = Installs()
    s = S(1)
    i.queue(s, P1)
    i.take_batch(1)
    assert i.failed(s) == [P1]
    assert s.install is None and i.installed_count() == 0


def test_a_stale_install_is_rewritten_before_its_packets_go() -> None:
    i: Installs[S] = Installs()
    s = S(1)
    i.queue(s, P1)
    i.take_batch(1)
    assert i.installed(s, stale=True) == []
    assert s.install is InstallState.REWRITING and i.in_switch(s)
    assert i.take_rewrites() == [s]
    assert i.rewritten(s) == [P1] and s.install is InstallState.INSTALLED


def test_a_rewrite_asked_while_one_is_in_flight_waits_for_it() -> None:
    s = S(1)
    i = installed(Installs(), s)
    assert i.want_rewrite(s)
    assert i.take_rewrites() == [s]
    i.hold(s, P1)
    assert i.want_rewrite(s)
    assert i.take_rewrites() == [], "two MODIFYs of one entry in flight"
    assert i.rewritten(s) == [], "its packets wait for the second rewrite"
    assert s.install is InstallState.REWRITING
    assert i.take_rewrites() == [s]
    assert i.rewritten(s) == [P1] and s.install is InstallState.INSTALLED


def test_only_entries_in_the_switch_are_rewritten_or_expired() -> None:
    i: Installs[S] = Installs()
    s, other = S(1), S(9)
    i.queue(s)
    assert not i.want_rewrite(s) and not i.idle(s)
    assert not i.want_rewrite(other) and not i.idle(other)
    i.take_batch(1)
    assert not i.want_rewrite(s) and not i.idle(s)
    i.installed(s)
    assert i.idle(s) and not i.idle(s), "expired twice"
    assert not i.want_rewrite(s), "rewriting an entry on its way out"


def test_idle_then_deleted_forgets_the_session() -> None:
    s = S(1)
    i = installed(Installs(), s)
    i.idle(s)
    assert s.install is InstallState.EXPIRING and i.in_switch(s)
    assert i.take_expiring() == [s] and s.install is InstallState.DELETING
    assert not i.in_switch(s)
    assert i.deleted(s) is False and s.install is None


def test_in_use_counts_every_place_taken_or_promised_but_deletes() -> None:
    """The switch's places a new flow weighs against its size: installed,
    expiring (still there), queued and being written; not being deleted."""
    i: Installs[S] = Installs()
    a, b, c, d = S(1), S(2), S(3), S(4)
    installed(i, a)
    installed(i, b)
    i.queue(c)
    assert i.in_use() == 3
    i.take_batch(10)  # c INSTALLING
    i.idle(a)  # EXPIRING: its entries are still there
    assert i.in_use() == 3
    i.take_expiring()  # a DELETING
    assert i.in_use() == 2
    i.queue(d)
    i.forget(b)
    assert i.in_use() == 2  # c, d
    i.deleted(a)
    i.failed(c)
    assert i.in_use() == 1 and i.count(*InstallState) == 1


def test_a_packet_during_the_delete_revives_the_session_after_it() -> None:
    s = S(1)
    i = installed(Installs(), s)
    i.idle(s)
    i.take_expiring()
    assert i.queue(s, P1) is False, "an INSERT would overtake the DELETE"
    assert i.queued() == 0 and s.install is InstallState.DELETING
    assert i.deleted(s) is True
    assert s.install is InstallState.QUEUED and i.take_batch(1) == [s]
    assert i.installed(s) == [P1]


def test_an_idle_entry_being_rewritten_expires_and_its_packets_go() -> None:
    """Its DELETE waits for the MODIFY out: the switch may apply two writes
    out at once in either order (P4Runtime spec sec. 12.2)."""
    s, other = S(1), S(2)
    i = installed(Installs(), s)
    installed(i, other)
    i.want_rewrite(s)
    i.take_rewrites()
    i.hold(s, P1)
    i.idle(s)
    i.idle(other)
    assert i.take_expiring() == [other], "a DELETE while its MODIFY is out"
    assert i.rewritten(s) == [P1], "the entry is still there until the DELETE"
    assert s.install is InstallState.EXPIRING
    assert i.take_expiring() == [s] and s.install is InstallState.DELETING


def test_illegal_transitions_raise() -> None:
    s = S(1)
    i = installed(Installs(), s)
    with pytest.raises(TransitionError):
        i.queue(s)  # installed already
    with pytest.raises(TransitionError):
        i.hold(s, P1)  # its entries are there: send it
    with pytest.raises(TransitionError):
        i.installed(s)
    with pytest.raises(TransitionError):
        i.deleted(s)


def test_adopt_and_lose_all() -> None:
    i: Installs[S] = Installs()
    a, b = S(1), S(2)
    i.adopt(a)
    i.queue(b, P1)
    assert i.installed_count() == 1 and a.install is InstallState.INSTALLED
    assert i.lose_all([a, b]) == [P1]
    assert a.install is None and b.install is None and i.queued() == 0
    assert i.installed_count() == 0


def test_drop_held_counts_what_the_connection_took() -> None:
    i: Installs[S] = Installs()
    s = S(1)
    i.queue(s, P1)
    i.hold(s, P2)
    assert i.drop_held() == 2 and i.held_packets() == 0
