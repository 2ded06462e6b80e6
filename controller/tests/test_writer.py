"""The one writer of sessions' entries (quicknat/controller/writer.py), for
either mode, against a switch stub whose writes can be held and failed:
group commit, DELETE before an INSERT of the same key, the error policy,
and the target's capabilities (target.py) in what is written."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

from finsy.proto import p4r
from quicknat.addr import parse_ipv4
from quicknat.controller.context import WriterOptions
from quicknat.controller.install_state import Held, InstallState
from quicknat.controller.program import NatEntries, Pipeline
from quicknat.controller.stats import Stats
from quicknat.controller.target import RESOURCE_EXHAUSTED, UNKNOWN, TargetCapabilities, bmv2
from quicknat.controller.writer import SwitchWriter
from quicknat.nat.allocator import Endpoint
from quicknat.nat.session import Origin, Session
from quicknat.p4rt.client import UpdateError
from stub_controller import decoded

P4INFO = Pipeline.load().p4info
INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE
INVALID_ARGUMENT = 3


class Switch:
    """Records writes; a write waits while `hold` is set; `fail` maps an
    update's index in the next write to the code it fails with."""

    def __init__(self) -> None:
        self.writes: list[list[p4r.Update]] = []
        self.hold: asyncio.Event | None = None
        self.fail: dict[int, int] = {}

    async def write(self, updates: Sequence[bytes]) -> list[UpdateError]:
        self.writes.append([decoded(u) for u in updates])
        fail, self.fail = self.fail, {}
        while self.hold is not None:
            await self.hold.wait()
        return [UpdateError(i, code, "no") for i, code in fail.items() if i < len(updates)]

    def kinds(self) -> list[list[int]]:
        return [[u.type for u in write] for write in self.writes]


class Mode:
    """The writer's outcomes, recorded."""

    def __init__(self) -> None:
        self.installed_: list[int] = []
        self.refused_: list[tuple[int, bool]] = []
        self.deleted_: list[int] = []

    def timeout(self, session: Session) -> int:
        return 300

    def installed(self, done: Sequence[tuple[Session, list[Held]]]) -> None:
        self.installed_ += [s.id for s, _ in done]

    def refused(self, session: Session, packets: list[Held], full: bool) -> None:
        self.refused_.append((session.id, full))

    def deleted(self, session: Session, revived: bool) -> None:
        self.deleted_.append(session.id)

    def rewritten(self, session: Session, packets: list[Held]) -> None:
        pass


def session(sid: int, port: int = 5000) -> Session:
    return Session(
        id=sid,
        rule_id=1,
        origin=Origin.SNAT,
        protocol=17,
        internal=Endpoint(parse_ipv4("10.0.0.10"), port),
        external=Endpoint(parse_ipv4("203.0.113.1"), 20000 + sid),
        remote_address=parse_ipv4("198.51.100.10"),
        remote_port=53,
        created=0.0,
    )


class Rig:
    def __init__(self, target: TargetCapabilities | None = None, batch_max: int = 256) -> None:
        self.switch = Switch()
        self.mode = Mode()
        self.stats = Stats()
        self.clock = 0.0
        self.writer: SwitchWriter[Session] = SwitchWriter(
            self.switch.write,  # type: ignore[arg-type]
            NatEntries(P4INFO),
            target or bmv2(P4INFO),
            self.stats,
            WriterOptions(batch_max=batch_max),
            self.mode,
            lambda: self.clock,
        )


def run(scenario: object) -> None:
    asyncio.run(scenario)  # type: ignore[arg-type]


def test_nothing_is_written_offline_and_the_work_waits() -> None:
    async def scenario() -> None:
        rig = Rig()
        rig.writer.queue(session(1))
        rig.writer.flush()
        await rig.writer.settle()
        assert rig.switch.writes == []
        rig.writer.online()
        await rig.writer.settle()
        assert rig.switch.kinds() == [[INSERT, INSERT]]
        assert rig.mode.installed_ == [1]

    run(scenario())


def test_sessions_that_come_during_a_write_share_the_next() -> None:
    async def scenario() -> None:
        rig = Rig()
        rig.writer.online()
        rig.switch.hold = asyncio.Event()
        rig.writer.queue(session(1))
        rig.writer.flush()  # a lone session goes at once
        for sid in (2, 3, 4):
            rig.writer.queue(session(sid, 5000 + sid))
            rig.writer.flush()  # one write out: they wait
        await asyncio.sleep(0)
        assert len(rig.switch.writes) == 1
        hold, rig.switch.hold = rig.switch.hold, None
        hold.set()
        await rig.writer.settle()
        assert [len(w) for w in rig.switch.writes] == [2, 6]
        assert rig.stats["install_writes"] == 2 and rig.stats["sessions_installed"] == 4

    run(scenario())


def test_an_insert_waits_for_the_delete_of_its_key() -> None:
    """P4Runtime orders nothing between concurrent writes (spec 12.2): a new
    session with the key of one whose DELETE is out (offload mode: its
    instance closed it and opened the flow again) goes after it."""

    async def scenario() -> None:
        rig = Rig()
        rig.writer.online()
        old = session(1)
        rig.writer.queue(old)
        rig.writer.flush()
        await rig.writer.settle()
        rig.switch.hold = asyncio.Event()
        rig.writer.expire(old)
        rig.writer.flush()
        await asyncio.sleep(0)
        again = replace(session(2), internal=old.internal)  # the same in2out key
        rig.writer.queue(again)
        rig.writer.flush()
        await asyncio.sleep(0)
        assert rig.switch.kinds()[1:] == [[DELETE, DELETE]], "the INSERT went before the DELETE"
        hold, rig.switch.hold = rig.switch.hold, None
        hold.set()
        await rig.writer.settle()
        assert rig.switch.kinds()[1:] == [[DELETE, DELETE], [INSERT, INSERT]]
        assert rig.mode.deleted_ == [1] and rig.writer.state(again) is InstallState.INSTALLED

    run(scenario())


def test_a_full_table_is_the_target_s_codes_and_backs_off() -> None:
    """BMv2 answers a full table with UNKNOWN, as well as the RESOURCE_EXHAUSTED
    the specification asks for: both are a full table (the session refused,
    no place offered for the back-off); another code is an install failure.
    Either way whichever of its two entries got in is deleted."""

    async def scenario() -> None:
        for code, full in ((RESOURCE_EXHAUSTED, True), (UNKNOWN, True), (INVALID_ARGUMENT, False)):
            rig = Rig()
            rig.writer.online()
            rig.switch.fail = {2: code}  # the second session's in2out entry
            for sid in (1, 2):
                rig.writer.queue(session(sid, 5000 + sid))
            rig.writer.flush()
            await rig.writer.settle()
            assert rig.mode.installed_ == [1]
            assert rig.mode.refused_ == [(2, full)]
            assert rig.switch.kinds()[-1] == [DELETE, DELETE]
            assert rig.stats["install_failed"] == (0 if full else 1)
            assert (rig.writer.free_slots() == 0) is full
            rig.clock = 1.5  # the back-off is over
            assert rig.writer.free_slots() == rig.writer.capacity - 1

    run(scenario())


def test_a_target_s_limits_shape_the_writes() -> None:
    """A target that takes 4 updates a write (batches of 2 sessions) and
    notifies no idle entries (none get a timeout)."""

    async def scenario() -> None:
        target = replace(bmv2(P4INFO), max_updates_per_write=4, idle_timeout_notifications=False)
        rig = Rig(target)
        assert rig.writer.batch_max == 2
        rig.writer.online()
        sessions = [session(sid, 5000 + sid) for sid in (1, 2, 3)]
        for s in sessions:
            rig.writer.queue(s)
        rig.writer.flush()
        await rig.writer.settle()
        assert [len(w) for w in rig.switch.writes] == [4, 2]
        assert all(u.entity.table_entry.idle_timeout_ns == 0 for w in rig.switch.writes for u in w)
        # a longer DELETE is split, each error keeping its index in the whole
        rig.switch.writes.clear()
        for s in sessions:
            rig.writer.expire(s)
        rig.switch.fail = {1: INVALID_ARGUMENT}
        rig.writer.flush()
        await rig.writer.settle()
        assert [len(w) for w in rig.switch.writes] == [4, 2]
        assert rig.stats["delete_failed"] == 1
        assert rig.mode.deleted_ == [1, 2, 3]

    run(scenario())


def test_entries_no_session_owns_are_swept_by_the_delete_writes() -> None:
    async def scenario() -> None:
        rig = Rig()
        rig.writer.online()
        stray = session(9)
        rig.writer.sweep("nat_in2out", stray.in2out)
        rig.writer.sweep("nat_out2in", stray.out2in)
        rig.writer.queue(replace(session(1), internal=stray.internal))  # its key
        rig.writer.flush()
        await rig.writer.settle()
        assert rig.switch.kinds() == [[DELETE, DELETE], [INSERT, INSERT]]
        assert rig.stats["stale_entries_deleted"] == 2

    run(scenario())
