"""Every change of a session's idle timeout reaches the switch, in any
interleaving of its INSERT, the INSERT's answer, MODIFYs and the changes
themselves (writer.py, install_state.py).

A TCP session's timeout changes with its phase (RFC 5382 REQ-5, RFC 7857
sec. 2.2: transitory until the handshake, established after it, transitory
again after a FIN or RST). Since a first packet leaves before its write
(punts.py), the answer to a SYN can change it while the INSERT is out; PTF
`OutboundRstDoesNotRefresh` on swx once found the switch's entry left at
the transitory timeout. Here a model switch holds every write until the
test applies it and then answers it, one step at a time, and a phase change
lands between any two steps (the event loop's ticks included): afterwards
the switch's entry must carry the session's timeout."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from finsy.proto import p4r
from quicknat.controller.context import WriterOptions
from quicknat.controller.install_state import Held, InstallState
from quicknat.controller.program import NatEntries
from quicknat.controller.stats import Stats
from quicknat.controller.target import NOT_FOUND, bmv2
from quicknat.controller.writer import SwitchWriter
from quicknat.nat.session import Session
from quicknat.p4rt.client import UpdateError
from stub_controller import decoded
from test_writer import P4INFO, session

ALREADY_EXISTS = 6
IN2OUT = P4INFO.table("nat_in2out").id
# The timeouts a session goes through: transitory, established, transitory
# again (nat/timeouts.py's defaults; the values only need to differ).
PHASES = (240, 7440, 240, 7440)


@dataclass
class Pending:
    """A write the model switch has received: applied, then answered."""

    updates: list[p4r.Update]
    answer: asyncio.Future[list[UpdateError]]
    applied: bool = False
    errors: list[UpdateError] = field(default_factory=list)  # once applied


@dataclass
class ModelSwitch:
    """A switch's tables as P4Runtime writes change them (an entry by table
    and match: its idle timeout), with each write held until the test lets
    it be applied and then answered."""

    entries: dict[tuple[int, bytes], int] = field(default_factory=dict)
    pending: list[Pending] = field(default_factory=list)
    # An entry written by two writes out at once, as "DELETE while MODIFY
    # out": the switch may apply those in either order (P4Runtime spec sec.
    # 12.2), so the writer must not send such.
    overlapping: list[str] = field(default_factory=list)

    async def write(self, encoded: Sequence[bytes]) -> list[UpdateError]:
        updates = [decoded(u) for u in encoded]
        out = {_key(u): u.type for p in self.pending for u in p.updates}
        self.overlapping += [
            f"{_name(u.type)} while {_name(out[_key(u)])} out" for u in updates if _key(u) in out
        ]
        pending = Pending(updates, asyncio.get_running_loop().create_future())
        self.pending.append(pending)
        return await pending.answer

    def step(self) -> bool:
        """Apply the oldest write, or answer it once applied. False: none out."""
        if not self.pending:
            return False
        oldest = self.pending[0]
        if not oldest.applied:
            oldest.applied = True
            for i, update in enumerate(oldest.updates):
                error = self._apply(i, update)
                if error is not None:
                    oldest.errors.append(error)
        else:
            self.pending.pop(0)
            oldest.answer.set_result(oldest.errors)
        return True

    def _apply(self, index: int, update: p4r.Update) -> UpdateError | None:
        key, present = _key(update), _key(update) in self.entries
        if update.type == p4r.Update.INSERT and present:
            return UpdateError(index, ALREADY_EXISTS, "exists")
        if update.type != p4r.Update.INSERT and not present:
            return UpdateError(index, NOT_FOUND, "no such entry")
        if update.type == p4r.Update.DELETE:
            del self.entries[key]
        else:
            self.entries[key] = update.entity.table_entry.idle_timeout_ns // 1_000_000_000
        return None

    def in2out_timeouts(self) -> list[int]:
        return [t for (table, _), t in self.entries.items() if table == IN2OUT]


def _name(update_type: int) -> str:
    return p4r.Update.Type.Name(update_type)  # type: ignore[arg-type]


def _key(update: p4r.Update) -> tuple[int, bytes]:
    entry = update.entity.table_entry
    return entry.table_id, b"".join(m.SerializeToString() for m in entry.match)


class PhasedMode:
    """Controller mode's part as far as timeouts go: a session's timeout is
    its TCP phase's, and a change asks the writer for a rewrite, then the
    miss loop flushes (punts.py `_track_tcp`, service.py `_consume`)."""

    def __init__(self) -> None:
        self.phase = 0

    def timeout(self, session: Session) -> int:
        return PHASES[self.phase]

    def installed(self, done: Sequence[tuple[Session, list[Held]]]) -> None:
        pass

    def refused(self, session: Session, packets: list[Held], full: bool) -> None:
        raise AssertionError(f"session {session.id} refused")

    def deleted(self, session: Session, revived: bool) -> None:
        pass

    def rewritten(self, session: Session, packets: list[Held]) -> None:
        pass


Events = dict[int, str]  # step -> "change", "idle" or "packet"


async def lifecycle(events: Events) -> tuple[ModelSwitch, PhasedMode, Session]:
    """A session queued and written; before step k, the event `events[k]`:
    its phase changes ("change", punts.py `_track_tcp`), the switch reports
    its entry idle ("idle", ControllerMode.idle), or a packet of its flow
    comes ("packet": while its DELETE is out, that revives it, as in
    punts.py `_on_new_flow`); then the miss loop flushes (service.py
    `_consume`). A step is one of the switch's (apply the oldest write, or
    answer it), then one tick of the event loop (the writer's tasks run:
    it may send a write while others are out)."""
    switch, mode = ModelSwitch(), PhasedMode()
    writer: SwitchWriter[Session] = SwitchWriter(
        switch.write,  # type: ignore[arg-type]
        NatEntries(P4INFO),
        bmv2(P4INFO),
        Stats(),
        WriterOptions(),
        mode,
        lambda: 0.0,
    )
    writer.online()
    s = session(1)
    writer.queue(s)
    last = max(events, default=0)
    for step in itertools.count():
        event = events.get(step)
        if event == "change":
            mode.phase += 1
            writer.want_rewrite(s)
        elif event == "idle":
            writer.expire(s)
        elif event == "packet" and s.install is InstallState.DELETING:
            writer.queue(s)
        if step == 0 or event:
            writer.flush()
        if step == 0:
            continue  # (step 1: the INSERT's task has not run yet)
        if not switch.step() and step > last and not writer._writes:
            return switch, mode, s
        await asyncio.sleep(0)  # the writer's tasks run a tick
        assert step < 200, "the writes never settled"
    raise AssertionError("unreachable")


def check(events: Events) -> None:
    """The switch holds the session's entries with its timeout now, or,
    once it is deleted and not revived, none; and no two writes out at
    once ever named one entry."""
    switch, mode, s = asyncio.run(lifecycle(events))
    timeouts, want = switch.in2out_timeouts(), mode.timeout(s)
    assert switch.overlapping == [], f"{events}: {switch.overlapping[0]}"
    if s.install is None:
        assert switch.entries == {}, f"{events}: deleted, but the switch holds {timeouts}"
        return
    assert s.install is InstallState.INSTALLED, f"{events}: left {s.install}"
    assert timeouts == [want], f"{events}: the switch holds {timeouts}, not {want}"
    assert len(switch.entries) == 2, f"{events}: {len(switch.entries)} entries"


# Steps at which an event can land: the INSERT's whole life (6 steps) and
# the MODIFYs or DELETE after it (about 6 each).
STEPS = range(24)


def test_a_session_without_changes_keeps_its_first_timeout() -> None:
    switch, _, s = asyncio.run(lifecycle({}))
    assert (switch.in2out_timeouts(), s.install) == ([240], InstallState.INSTALLED)


def test_one_change_at_any_step_reaches_the_switch() -> None:
    """E.g. the SYN/ACK before the INSERT is sent, while it is out, after
    the switch applied it but before its answer came, or after."""
    for k in STEPS:
        check({k: "change"})


def test_two_and_three_changes_at_any_steps_reach_the_switch() -> None:
    """The handshake, then a RST (or a FIN) while the first change's MODIFY
    is out, or while the INSERT still is, and so on."""
    for n in (2, 3):
        for ks in itertools.combinations(STEPS, n):
            check(dict.fromkeys(ks, "change"))


def test_a_change_an_expiry_and_a_revival_in_any_order() -> None:
    """The switch reports the entry idle while a MODIFY is out, or a change
    lands while the DELETE is out and a packet revives the session: its
    DELETE waits for the MODIFY (else the two could land in either order,
    and a revived session's INSERT could be overwritten by the old MODIFY),
    and the revived session's INSERT carries its timeout then."""
    for ks in itertools.permutations(range(16), 3):
        check(dict(zip(ks, ("change", "idle", "packet"), strict=True)))
