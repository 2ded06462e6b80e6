"""The PTF harness's shared NAT (ptf-tests/harness/shared_nat.py): when a
scenario runs on the NAT of the one before, when it gets its own, and the
counters a shared NAT reads from the scenario's start (Target.since_start).
The suites themselves (make ptf-*) show that the scenarios pass on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from harness.shared_nat import NAT_LOG, SharedNat
from harness.targets import COUNTERS, Target


class FakeTarget(Target):
    """A target whose processes are a flag, its counters a dict."""

    name = "fake"
    counters: ClassVar[dict[str, str]] = {name: name for name in COUNTERS}
    rate_limited = "rate_limited"

    def __init__(self, workdir: Path, config: str = "base") -> None:
        path = workdir / f"{config}.toml"
        path.write_text("")
        super().__init__({"workdir": str(workdir), "config": str(path)})
        self.running = False
        self.cleared = 0
        self.clear_fails = False
        self.raw: dict[str, int] = {}

    def start_processes(self, reset: bool) -> None:
        self.running = True

    def stop_nat(self) -> None:
        super().stop_nat()
        self.running = False

    def clear(self) -> None:
        if self.clear_fails:
            raise AssertionError("fake: the sessions flushed did not happen")
        self.cleared += 1

    def stats(self) -> dict[str, Any]:
        return {"counters": self.since_start(str(self.socket), dict(self.raw))}


def decisions(workdir: Path) -> list[str]:
    return [line.split("\t")[1] for line in (workdir / NAT_LOG).read_text().splitlines()]


def test_the_same_configuration_shares_the_cleared_nat(tmp_path: Path) -> None:
    nat = SharedNat()
    first = FakeTarget(tmp_path)
    assert nat.acquire("t1", first, None) is first and first.running
    nat.release(failed=False)
    second = FakeTarget(tmp_path)
    assert nat.acquire("t2", second, None) is first
    assert first.cleared == 1 and not second.running
    assert decisions(tmp_path) == ["fresh: none started yet", "shared"]


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        (lambda nat, t: nat.release(failed=True), "the scenario before failed"),
        (lambda nat, t: (t.stop_nat(), nat.release(False)), "stopped"),
        (
            lambda nat, t: (
                setattr(t, "dirty", "quicknat rule at run time"),
                nat.release(False),
            ),
            "quicknat rule at run time",
        ),
    ],
)
def test_a_scenario_that_failed_or_changed_the_nat_leaves_it(
    tmp_path: Path, spoil: Any, why: str
) -> None:
    nat = SharedNat()
    first = FakeTarget(tmp_path)
    nat.acquire("t1", first, None)
    spoil(nat, first)
    second = FakeTarget(tmp_path)
    assert nat.acquire("t2", second, None) is second and second.running
    assert decisions(tmp_path)[-1] == f"fresh: {why}"


def test_another_configuration_or_a_fresh_scenario_stops_the_running_nat(tmp_path: Path) -> None:
    nat = SharedNat()
    first = FakeTarget(tmp_path)
    nat.acquire("t1", first, None)
    nat.release(False)
    other = FakeTarget(tmp_path, config="variant")
    assert nat.acquire("t2", other, None) is other and not first.running
    nat.release(False)
    fresh = FakeTarget(tmp_path, config="variant")
    assert nat.acquire("t3", fresh, "it restarts") is fresh and not other.running
    assert decisions(tmp_path)[1:] == ["fresh: another configuration", "fresh: it restarts"]


def test_what_a_flush_does_not_undo_leaves_the_nat(tmp_path: Path) -> None:
    nat = SharedNat()
    first = FakeTarget(tmp_path)
    nat.acquire("t1", first, None)
    first.raw = {"fragment_held": 1}
    nat.release(False)
    assert nat.acquire("t2", FakeTarget(tmp_path), None) is not first
    running = nat.running
    assert isinstance(running, FakeTarget)
    running.raw = {"icmp_time_exceeded_sent": 6, "icmp_prohibited_sent": 4}
    nat.release(False)
    assert nat.acquire("t3", FakeTarget(tmp_path), None) is not running
    assert decisions(tmp_path)[1:] == [
        "fresh: fragments held for reassembly",
        "fresh: ICMP errors' token bucket drawn on (10 sent)",
    ]


def test_a_nat_that_will_not_clear_is_not_shared(tmp_path: Path) -> None:
    nat = SharedNat()
    first = FakeTarget(tmp_path)
    nat.acquire("t1", first, None)
    nat.release(False)
    first.clear_fails = True
    second = FakeTarget(tmp_path)
    assert nat.acquire("t2", second, None) is second and not first.running
    assert decisions(tmp_path)[1:] == [
        "fresh: clear failed: fake: the sessions flushed did not happen"
    ]


def test_a_shared_nat_counts_from_the_scenario_start(tmp_path: Path) -> None:
    target = FakeTarget(tmp_path)
    target.start_nat()
    target.raw = {"new_flows": 5, "sessions_deleted": 2}
    target.start_counting()
    target.raw = {"new_flows": 7, "sessions_deleted": 2, "filtered": 1}
    assert (target.counter("new_flows"), target.counter("sessions_deleted")) == (2, 0)
    assert target.counter("filtered") == 1
    target.start_nat(reset=True)  # a process started counts from zero itself
    assert target.counter("new_flows") == 7
