"""The install state machine (controller/install_state.py), transition by
transition; the races it exists for run through the controller in
test_controller_expiry.py."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from quicknat.controller.install_state import Installs, InstallState, TransitionError

P1, P2, P3 = (b"one", 1), (b"two", 1), (b"three", 2)


@dataclass(frozen=True)
class S:
    id: int


def installed(installs: Installs[S], sid: int) -> Installs[S]:
    installs.queue(sid, S(sid))
    installs.take_batch(10)
    installs.installed(sid)
    return installs


def test_a_new_session_is_queued_then_installing_then_installed_with_its_packets() -> None:
    i: Installs[S] = Installs()
    assert i.queue(1, S(1), P1) is True
    assert i.state(1) is InstallState.QUEUED and i.queued() == 1
    i.hold(1, P2)
    assert i.take_batch(10) == [S(1)] and i.state(1) is InstallState.INSTALLING
    i.hold(1, P3)
    assert i.installed(1) == [P1, P2, P3]
    assert i.state(1) is InstallState.INSTALLED and i.in_switch(1)
    assert i.installed_count() == 1 and i.held_packets() == 0


def test_batches_take_at_most_the_limit_in_order() -> None:
    i: Installs[S] = Installs()
    for sid in range(1, 6):
        i.queue(sid, S(sid))
    assert [s.id for s in i.take_batch(2)] == [1, 2]
    assert [s.id for s in i.take_batch(2)] == [3, 4]
    assert i.count(InstallState.INSTALLING) == 4 and i.count(InstallState.QUEUED) == 1


def test_a_failed_install_forgets_the_session_and_returns_its_packets() -> None:
    i: Installs[S] = Installs()
    i.queue(1, S(1), P1)
    i.take_batch(1)
    assert i.failed(1) == [P1]
    assert i.state(1) is None and i.installed_count() == 0


def test_a_stale_install_is_rewritten_before_its_packets_go() -> None:
    i: Installs[S] = Installs()
    i.queue(1, S(1), P1)
    i.take_batch(1)
    assert i.installed(1, stale=True) == []
    assert i.state(1) is InstallState.REWRITING and i.in_switch(1)
    assert i.take_rewrites() == [S(1)]
    assert i.rewritten(1) == [P1] and i.state(1) is InstallState.INSTALLED


def test_a_rewrite_asked_while_one_is_in_flight_waits_for_it() -> None:
    i = installed(Installs(), 1)
    assert i.want_rewrite(1)
    assert i.take_rewrites() == [S(1)]
    i.hold(1, P1)
    assert i.want_rewrite(1)
    assert i.take_rewrites() == [], "two MODIFYs of one entry in flight"
    assert i.rewritten(1) == [], "its packets wait for the second rewrite"
    assert i.state(1) is InstallState.REWRITING
    assert i.take_rewrites() == [S(1)]
    assert i.rewritten(1) == [P1] and i.state(1) is InstallState.INSTALLED


def test_only_entries_in_the_switch_are_rewritten_or_expired() -> None:
    i: Installs[S] = Installs()
    i.queue(1, S(1))
    assert not i.want_rewrite(1) and not i.idle(1)
    assert not i.want_rewrite(9) and not i.idle(9)
    i.take_batch(1)
    assert not i.want_rewrite(1) and not i.idle(1)
    i.installed(1)
    assert i.idle(1) and not i.idle(1), "expired twice"
    assert not i.want_rewrite(1), "rewriting an entry on its way out"


def test_idle_then_deleted_forgets_the_session() -> None:
    i = installed(Installs(), 1)
    i.idle(1)
    assert i.state(1) is InstallState.EXPIRING and i.in_switch(1)
    assert i.take_expiring() == [S(1)] and i.state(1) is InstallState.DELETING
    assert not i.in_switch(1)
    assert i.deleted(1) is False and i.state(1) is None


def test_a_packet_during_the_delete_revives_the_session_after_it() -> None:
    i = installed(Installs(), 1)
    i.idle(1)
    i.take_expiring()
    assert i.queue(1, S(1), P1) is False, "an INSERT would overtake the DELETE"
    assert i.queued() == 0 and i.state(1) is InstallState.DELETING
    assert i.deleted(1) is True
    assert i.state(1) is InstallState.QUEUED and i.take_batch(1) == [S(1)]
    assert i.installed(1) == [P1]


def test_an_idle_entry_being_rewritten_expires_and_its_packets_go() -> None:
    i = installed(Installs(), 1)
    i.want_rewrite(1)
    i.take_rewrites()
    i.hold(1, P1)
    i.idle(1)
    assert i.rewritten(1) == [P1], "the entry is still there until the DELETE"
    assert i.state(1) is InstallState.EXPIRING


def test_illegal_transitions_raise() -> None:
    i = installed(Installs(), 1)
    with pytest.raises(TransitionError):
        i.queue(1, S(1))  # installed already
    with pytest.raises(TransitionError):
        i.hold(1, P1)  # its entries are there: send it
    with pytest.raises(TransitionError):
        i.installed(1)
    with pytest.raises(TransitionError):
        i.deleted(1)


def test_adopt_and_lose_all() -> None:
    i: Installs[S] = Installs()
    i.adopt(1, S(1))
    i.queue(2, S(2), P1)
    assert i.installed_count() == 1 and i.state(1) is InstallState.INSTALLED
    assert i.lose_all() == [P1]
    assert i.state(1) is None and i.state(2) is None and i.queued() == 0
    assert i.installed_count() == 0


def test_drop_held_counts_what_the_connection_took() -> None:
    i: Installs[S] = Installs()
    i.queue(1, S(1), P1)
    i.hold(1, P2)
    assert i.drop_held() == 2 and i.held_packets() == 0
