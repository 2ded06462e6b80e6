"""Offload mode's rules (quicknat/controller/modes/offload_mode.py), written
by the one writer (writer.py) against the real P4Info's entries, with the
switch's Write and the instances' control sockets replaced by recorders:
what is written, in which batches, and what each instance is told."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import configs
import pytest
from finsy.proto import p4r
from quicknat.addr import parse_ipv4
from quicknat.config import parse_config
from quicknat.config.model import OffloadInstall, Timeouts
from quicknat.controller.context import ModeContext, WriterOptions
from quicknat.controller.modes import OffloadMode
from quicknat.controller.program import (
    Pipeline,
    port_block_ternaries,
    slow_path_entries,
    static_entries,
)
from quicknat.controller.recovery import HeldEntries, HeldSession
from quicknat.controller.stats import Stats
from quicknat.controller.target import TargetCapabilities, bmv2
from quicknat.nat.allocator import Endpoint
from quicknat.nat.session import FlowKey
from quicknat.offload.stream import SessionEvent
from quicknat.p4rt.client import UpdateError
from stub_controller import decoded

PIPELINE = Pipeline.load()
TABLES = {t.preamble.id: t.preamble.name.rsplit(".", 1)[-1] for t in PIPELINE.p4info.proto.tables}
TIMEOUTS = Timeouts()
REMOTE = Endpoint(parse_ipv4("198.51.100.10"), 53)
INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE


def event(
    kind: str,
    sid: int,
    host: int = 10,
    port: int = 5000,
    protocol: int = 17,
    tcp_state: str | None = None,
    remote: Endpoint = REMOTE,
    snapshot: bool = False,
) -> SessionEvent:
    return SessionEvent(
        kind,
        id=sid,
        protocol=protocol,
        origin="snat",
        rule=1,
        internal=Endpoint(parse_ipv4(f"10.0.0.{host}"), port),
        external=Endpoint(parse_ipv4("203.0.113.1"), 20000 + host),
        remote=remote,
        tcp_state=tcp_state,
        snapshot=snapshot,
    )


class Switch:
    """Records each WriteRequest; fails the updates `fail` names (by session
    index in the next write) with a code."""

    def __init__(self) -> None:
        self.writes: list[list[p4r.Update]] = []
        self.fail: dict[int, int] = {}

    async def write(self, updates: list[p4r.Update | bytes]) -> list[UpdateError]:
        self.writes.append([decoded(u) for u in updates])
        errors = [UpdateError(2 * i, code, "no") for i, code in self.fail.items()]
        self.fail = {}
        return errors

    def last(self) -> list[tuple[int, str, int]]:
        """(type, table, idle timeout s) of the last write's updates."""
        return [
            (
                u.type,
                TABLES[u.entity.table_entry.table_id],
                u.entity.table_entry.idle_timeout_ns // 10**9,
            )
            for u in self.writes[-1]
        ]


class Told:
    """Stands in for the instances' command channel (offload_io.py)."""

    def __init__(self) -> None:
        self.lines: list[tuple[int, str]] = []

    def command(self, instance: int, lines: list[str]) -> None:
        self.lines.extend((instance, line) for line in lines)


class Rig:
    def __init__(self, capacity: int = 100, instances: int = 1, learn: bool = False) -> None:
        """`learn`: install = "learn", on a target that learns."""
        self.switch = Switch()
        self.stats = Stats()
        self.clock = 0.0
        config = parse_config(
            configs.text("switch", "snat_pool", "slow_path", "slow_path_second")
            if instances == 2
            else configs.text("switch", "snat_pool", "slow_path")
        )
        if learn:
            config = replace(config, offload=replace(config.offload, install=OffloadInstall.LEARN))
        target = replace(bmv2(PIPELINE.p4info), session_capacity=capacity, learns=learn)
        self.m = OffloadMode(
            ModeContext(
                config=replace(config, timeouts=TIMEOUTS),
                p4info=PIPELINE.p4info,
                target=target,
                stats=self.stats,
                write=self.switch.write,
                packet_out=lambda payload, metadata: None,
                now=lambda: self.clock,
                writer_options=WriterOptions(),
            )
        )
        self.instances = Told()
        self.m.io = self.instances  # type: ignore[assignment]
        self.told = self.instances.lines
        for i in range(instances):
            self.m.on_event(i, SessionEvent("synced"))

    def flush(self) -> None:
        """The writer online until every write it starts is done."""

        async def run() -> None:
            self.m.writer.online()
            await self.m.writer.settle()

        asyncio.run(run())


def test_sessions_are_installed_in_one_write_and_their_instance_told() -> None:
    rig = Rig()
    for sid in (1, 2, 3):
        rig.m.on_event(0, event("opened", sid, host=sid))
    rig.flush()
    assert len(rig.switch.writes) == 1, "group commit: one write"
    assert rig.switch.last() == [(INSERT, "nat_in2out", 300), (INSERT, "nat_out2in", 0)] * 3
    assert rig.told == [
        (0, f"session offload {i} udp 10.0.0.{i}:5000 198.51.100.10:53") for i in (1, 2, 3)
    ]
    assert rig.stats["sessions_installed"] == 3
    # a repeat (around a snapshot) changes nothing
    rig.m.on_event(0, event("opened", 2, host=2, snapshot=True))
    rig.flush()
    assert len(rig.switch.writes) == 1


def test_closed_sessions_are_deleted_and_forgotten() -> None:
    rig = Rig()
    rig.m.on_event(0, event("opened", 1))
    rig.flush()
    rig.m.on_event(0, event("closed", 1))
    rig.flush()
    assert rig.switch.last() == [(DELETE, "nat_in2out", 0), (DELETE, "nat_out2in", 0)]
    assert rig.m.sessions == {} and rig.m.by_key == {}
    assert rig.stats["sessions_closed"] == 1


def test_a_session_closed_during_its_insert_is_deleted_after_it() -> None:
    rig = Rig()
    rig.m.on_event(0, event("opened", 1))
    batch = rig.m.writer.installs.take_batch(10)  # its INSERT is out
    rig.m.on_event(0, event("closed", 1))
    asyncio.run(rig.m.writer._install(batch))
    assert rig.told == [], "not offloaded: it is gone"
    rig.flush()
    assert rig.switch.last() == [(DELETE, "nat_in2out", 0), (DELETE, "nat_out2in", 0)]


def test_hairpin_and_overflow_stay_in_software() -> None:
    rig = Rig(capacity=2)  # the last slot is kept for long-lived flows
    rig.m.on_event(0, event("opened", 1, remote=Endpoint(parse_ipv4("203.0.113.2"), 20011)))
    rig.m.on_event(0, event("opened", 2, host=2))
    rig.m.on_event(0, event("opened", 3, host=3))  # nearly full: deferred
    rig.m.on_event(0, event("opened", 4, host=4, protocol=6, tcp_state="opening"))
    rig.flush()
    assert len(rig.switch.writes) == 1 and len(rig.switch.writes[0]) == 2
    assert rig.stats["software_only.hairpin"] == 1
    assert rig.stats["sessions_deferred"] == 2
    # the TCP session proves long-lived: it takes the last slot
    rig.m.on_event(0, event("state", 4, host=4, protocol=6, tcp_state="established"))
    rig.flush()
    assert rig.switch.last() == [
        (INSERT, "nat_in2out", TIMEOUTS.tcp_established),
        (INSERT, "nat_out2in", 0),
    ]
    # full now: the next one stays in software
    rig.m.on_event(0, event("opened", 5, host=5, protocol=6, tcp_state="opening"))
    rig.m.on_event(0, event("state", 5, host=5, protocol=6, tcp_state="established"))
    rig.flush()
    assert rig.stats["software_only.table_full"] == 1
    assert [line.split()[2] for _, line in rig.told] == ["2", "4"]
    # their close is nothing to the switch
    writes = len(rig.switch.writes)
    rig.m.on_event(0, event("closed", 3, host=3))
    rig.m.on_event(0, event("closed", 5, host=5, protocol=6))
    rig.flush()
    assert len(rig.switch.writes) == writes


@pytest.mark.parametrize("code", [8, 2])  # RESOURCE_EXHAUSTED, BMv2's UNKNOWN
def test_a_full_table_leaves_the_session_in_software(code: int) -> None:
    rig = Rig()
    rig.m.on_event(0, event("opened", 1))
    rig.m.on_event(0, event("opened", 2, host=2))
    rig.switch.fail = {1: code}
    rig.flush()
    # the failed session's entries are removed (one of the two may be in)
    assert rig.switch.last() == [(DELETE, "nat_in2out", 0), (DELETE, "nat_out2in", 0)]
    assert [line for _, line in rig.told] == [
        "session offload 1 udp 10.0.0.10:5000 198.51.100.10:53"
    ]
    assert rig.stats["software_only.table_full"] == 1
    assert set(rig.m.sessions) == {(0, 1)}


def test_tcp_phases_rewrite_the_idle_timeout() -> None:
    rig = Rig()
    rig.m.on_event(0, event("opened", 1, protocol=6, tcp_state="opening"))
    rig.flush()
    assert rig.switch.last()[0] == (INSERT, "nat_in2out", TIMEOUTS.tcp_transitory)
    rig.m.on_event(0, event("state", 1, protocol=6, tcp_state="established"))
    rig.flush()
    assert rig.switch.last() == [(MODIFY, "nat_in2out", TIMEOUTS.tcp_established)]
    rig.m.on_event(0, event("state", 1, protocol=6, tcp_state="closing"))
    rig.flush()
    assert rig.switch.last() == [(MODIFY, "nat_in2out", TIMEOUTS.tcp_transitory)]


def test_idle_notifications_go_to_the_owning_instance() -> None:
    rig = Rig(instances=2)
    rig.m.on_event(1, event("opened", 7))
    rig.flush()
    key = FlowKey(17, parse_ipv4("10.0.0.10"), REMOTE.address, 5000, 53)
    rig.m.idle(key)
    assert rig.told[-1] == (1, "session idle 7 udp 10.0.0.10:5000 198.51.100.10:53")
    rig.flush()
    assert len(rig.switch.writes) == 1, "the entries stay until the instance closes it"
    rig.m.idle(FlowKey(17, 1, 2, 3, 4))  # not ours: nothing
    assert len(rig.told) == 2


def test_a_restarted_stream_keeps_what_its_snapshot_confirms() -> None:
    rig = Rig()
    for sid in (1, 2):
        rig.m.on_event(0, event("opened", sid, host=sid))
    rig.flush()
    writes = len(rig.switch.writes)
    rig.m.stream_restarted(0)
    rig.m.on_event(0, event("opened", 2, host=2, snapshot=True))
    assert len(rig.switch.writes) == writes
    rig.m.on_event(0, SessionEvent("synced", count=1))
    rig.flush()
    assert rig.switch.last() == [(DELETE, "nat_in2out", 0), (DELETE, "nat_out2in", 0)]
    assert set(rig.m.sessions) == {(0, 2)}


def test_a_restarted_instance_reusing_an_id_for_another_flow() -> None:
    rig = Rig()
    rig.m.on_event(0, event("opened", 1, host=1))
    rig.flush()
    rig.m.on_event(0, event("opened", 1, host=9))
    rig.flush()
    kinds = [u.type for w in rig.switch.writes[1:] for u in w]
    assert sorted(kinds) == sorted([DELETE, DELETE, INSERT, INSERT])
    (s,) = rig.m.sessions.values()
    assert s.internal.address == parse_ipv4("10.0.0.9")


def held(pairs: list[tuple[FlowKey, FlowKey]], timeout: int = TIMEOUTS.udp) -> HeldEntries:
    """The switch holding these sessions' entries (in2out and out2in keys),
    each with this idle timeout (s)."""
    return HeldEntries(
        tuple(HeldSession(a, Endpoint(b.dst, b.dport), b, 0, timeout) for a, b in pairs)
    )


def restarted_without_its_sessions(rig: Rig, run: int = 7) -> int:
    """The instance's stream starts again with an empty snapshot from another
    run (it restarted without its --state file): the writes so far."""
    writes = len(rig.switch.writes)
    rig.told.clear()
    rig.m.stream_restarted(0)
    rig.m.on_event(0, SessionEvent("synced", count=0, run=run))
    return writes


def test_a_restarted_instance_that_lost_its_sessions_gets_the_switch_s_back() -> None:
    """No offloaded flow breaks when its instance restarts without its
    sessions: the switch's entries stay, the instance is handed each session
    (`session adopt`, with its external endpoint and TCP phase) and announces
    it under an id of its new run, which then names it."""
    rig = Rig()
    rig.m.on_event(0, event("opened", 1, host=1))
    rig.m.on_event(0, event("opened", 2, host=2, protocol=6, tcp_state="established"))
    rig.flush()
    writes = restarted_without_its_sessions(rig)
    rig.flush()
    assert len(rig.switch.writes) == writes  # nothing deleted
    assert sorted(rig.told) == [
        (0, "session adopt tcp 10.0.0.2:5000 203.0.113.1:20002 198.51.100.10:53 snat established"),
        (0, "session adopt udp 10.0.0.1:5000 203.0.113.1:20001 198.51.100.10:53 snat"),
    ]
    assert rig.m.sessions == {}
    # the new run's ids, in another order than before
    rig.m.on_event(0, event("opened", 1, host=2, protocol=6, tcp_state="established"))
    rig.m.on_event(0, event("opened", 2, host=1))
    rig.flush()
    assert len(rig.switch.writes) == writes
    assert {k: s.internal.address for k, s in rig.m.sessions.items()} == {
        (0, 1): parse_ipv4("10.0.0.2"),
        (0, 2): parse_ipv4("10.0.0.1"),
    }
    assert rig.stats["sessions_handed_back"] == 2
    # known by their new ids from now on: the switch's idle report, a close
    rig.told.clear()
    rig.m.idle(rig.m.sessions[0, 2].in2out)
    assert rig.told == [(0, "session idle 2 udp 10.0.0.1:5000 198.51.100.10:53")]
    rig.m.on_event(0, event("closed", 2, host=1))
    rig.flush()
    assert rig.switch.last() == [(DELETE, "nat_in2out", 0), (DELETE, "nat_out2in", 0)]
    assert set(rig.m.sessions) == {(0, 1)}


def test_a_session_handed_back_but_not_taken_is_deleted() -> None:
    """The restarted instance mapped one flow anew before it got the session
    back (another external port): the switch's old entries go, the new
    session is installed. One it never announces is deleted after the wait.
    Both were refused, as the instance counts them too (handback_refused)."""
    rig = Rig()
    for sid in (1, 2):
        rig.m.on_event(0, event("opened", sid, host=sid))
    rig.flush()
    writes = restarted_without_its_sessions(rig)
    anew = event("opened", 1, host=1)
    assert anew.external is not None
    rig.m.on_event(0, replace(anew, external=Endpoint(anew.external.address, 30001)))
    rig.flush()
    # the old entries first: the new session has the same inside-to-outside key
    kinds = [u.type for w in rig.switch.writes[writes:] for u in w]
    assert kinds == [DELETE, DELETE, INSERT, INSERT]
    (s,) = rig.m.sessions.values()
    assert s.external.port == 30001
    assert rig.stats["handback_refused"] == 1
    rig.clock = 4.0
    rig.m.tick()
    assert rig.stats["handback_refused"] == 1
    rig.clock = 6.0
    rig.m.tick()
    rig.flush()
    assert rig.stats["handback_refused"] == 2
    assert rig.stats["sessions_handed_back"] == 0
    assert rig.switch.last() == [(DELETE, "nat_in2out", 0), (DELETE, "nat_out2in", 0)]


def test_sessions_missing_from_the_same_run_s_snapshot_are_closed() -> None:
    """A stream that only reconnected (the same run): what its snapshot
    lacks closed meanwhile, and is not handed back."""
    rig = Rig()
    rig.m.on_event(0, SessionEvent("synced", run=7))
    rig.m.on_event(0, event("opened", 1, host=1))
    rig.flush()
    restarted_without_its_sessions(rig, run=7)
    rig.flush()
    assert rig.told == []
    assert rig.switch.last() == [(DELETE, "nat_in2out", 0), (DELETE, "nat_out2in", 0)]


def test_entries_in_the_switch_are_adopted_or_swept() -> None:
    rig = Rig(instances=2)
    rig.m.on_event(0, event("opened", 1))
    rig.flush()
    (s,) = rig.m.sessions.values()
    orphan = (FlowKey(17, 1, 2, 3, 4), FlowKey(17, 2, 5, 4, 6))
    # a controller restart: both instances resubscribe, the switch is read back
    rig.m.stream_restarted(0)
    rig.m.stream_restarted(1)
    rig.told.clear()
    writes = len(rig.switch.writes)
    rig.m.recover(held([(s.in2out, s.out2in), orphan]))
    rig.m.on_event(0, event("opened", 1, snapshot=True))
    rig.m.on_event(0, SessionEvent("synced", count=1))
    rig.flush()
    assert len(rig.switch.writes) == writes, "nothing swept before every instance synced"
    rig.m.on_event(1, SessionEvent("synced", count=0))
    rig.flush()
    assert rig.stats["sessions_recovered"] == 1
    assert rig.switch.last() == [(DELETE, "nat_in2out", 0), (DELETE, "nat_out2in", 0)]
    assert rig.stats["stale_entries_deleted"] == 2  # the orphan's two entries
    assert rig.m.writer.in_switch(s)


@pytest.mark.parametrize("held_timeout", [TIMEOUTS.tcp_transitory, TIMEOUTS.tcp_established])
def test_an_adopted_entry_takes_the_timeout_of_the_phase_its_instance_says(
    held_timeout: int,
) -> None:
    """The controller restarted while an established flow's MODIFY (from
    the transitory timeout) was out: whether the switch took it is unknown.
    Its instance announces the flow established; an entry read back with
    the transitory timeout is MODIFYed to the established one (RFC 7857 sec.
    2.2), one that holds it already is left as it is."""
    rig = Rig()
    rig.m.on_event(0, event("opened", 1, protocol=6, tcp_state="established"))
    rig.flush()
    (s,) = rig.m.sessions.values()
    rig.m.stream_restarted(0)
    writes = len(rig.switch.writes)
    rig.m.recover(held([(s.in2out, s.out2in)], timeout=held_timeout))
    rig.m.on_event(0, event("opened", 1, protocol=6, tcp_state="established", snapshot=True))
    rig.m.on_event(0, SessionEvent("synced", count=1))
    rig.flush()
    assert rig.stats["sessions_recovered"] == 1
    if held_timeout == TIMEOUTS.tcp_established:
        assert len(rig.switch.writes) == writes, "nothing to write"
    else:
        assert rig.switch.writes[writes:] == rig.switch.writes[-1:]
        assert rig.switch.last() == [(MODIFY, "nat_in2out", TIMEOUTS.tcp_established)]
    assert rig.m.writer.in_switch(s)


def test_a_switch_that_lost_its_entries_is_refilled() -> None:
    rig = Rig()
    rig.m.on_event(0, event("opened", 1))
    rig.flush()
    rig.m.recover(HeldEntries())  # a restarted switch: empty
    rig.flush()
    assert rig.switch.last() == [(INSERT, "nat_in2out", 300), (INSERT, "nat_out2in", 0)]


def test_halves_are_swept_at_once() -> None:
    rig = Rig()
    rig.m.recover(HeldEntries(halves=(("nat_out2in", FlowKey(17, 1, 2, 3, 4)),)))
    rig.flush()
    assert rig.switch.last() == [(DELETE, "nat_out2in", 0)]
    assert rig.stats["stale_entries_deleted"] == 1


@pytest.mark.parametrize(
    ("low", "high"),
    [(1024, 65535), (1, 65535), (1024, 32767), (32768, 65535), (5000, 5001), (7, 7), (1000, 1999)],
)
def test_port_blocks_as_ternaries_cover_exactly_the_range(low: int, high: int) -> None:
    blocks = port_block_ternaries(low, high)
    covered = {p for p in range(65536) if any(p & b.mask == b.value for b in blocks)}
    assert covered == set(range(low, high + 1))
    assert all(b.value & ~b.mask & 0xFFFF == 0 for b in blocks)


def test_the_slow_path_entries_follow_the_configuration() -> None:
    config = parse_config(OFFLOAD_CONFIG + configs.text("slow_path_second"))
    members, groups, tables = slow_path_entries(PIPELINE.p4info, config)
    assert [m.action_profile_member.member_id for m in members] == [1, 2]
    assert [m.member_id for m in groups[0].action_profile_group.members] == [1, 2]
    names = [TABLES[t.table_entry.table_id] for t in tables]
    # the inside zone's group; sp0's block 1024-32767 (5 ternaries), sp1's
    # 32768-65535 (1); the pool's and the DNAT address's catch-alls; the
    # DNAT server pinned to sp0 (its address is no pool's: the catch-all's
    # instance); each instance's peer VID
    assert names == (
        ["slow_path_in2out"] + ["slow_path_out2in"] * 8 + ["slow_path_pin"] + ["slow_path_peer"] * 4
    )
    priorities = [t.table_entry.priority for t in tables[1:9]]
    assert priorities == [10] * 6 + [1, 1]
    pin = tables[9].table_entry
    assert (pin.match[1].lpm.value, pin.match[1].lpm.prefix_len) == (bytes([10, 0, 0, 5]), 32)
    assert pin.action.action.params[0].value == bytes([9])  # sp0's port
    peers = [
        (t.table_entry.match[0].exact.value, *(p.value for p in t.table_entry.action.action.params))
        for t in tables[10:]
    ]
    # each instance's hand-off VID (re-tagged 4) and relay VID (re-tagged 5)
    assert peers == [
        (bytes([16]), bytes([9]), bytes([4])),
        (bytes([17]), bytes([9]), bytes([5])),
        (bytes([18]), bytes([10]), bytes([4])),
        (bytes([19]), bytes([10]), bytes([5])),
    ]
    static = static_entries(PIPELINE.p4info, config)
    zones = [e for e in static if TABLES[e.table_id] == "port_zone"]
    assert len(zones) == 4  # in0, out0, and the two slow-path ports (zone 3)


OFFLOAD_CONFIG = configs.text("switch", "snat_pool", "dnat_web", "slow_path")


def test_a_learning_switch_with_a_new_program_ends_the_instances_quiet() -> None:
    """install = "learn": a pushed pipeline has new learner tables, so every
    instance is told no lease of its ports is left (`offload fresh`, which
    ends the quiet period of a start without state); with writes, nothing is
    said, and a target that learns nothing refuses learn outright."""
    writes = Rig(instances=2)
    writes.m.pipeline_pushed()
    assert writes.told == []

    config = parse_config(configs.text("switch", "snat_pool", "slow_path", "slow_path_second"))
    learn = replace(config, offload=replace(config.offload, install=OffloadInstall.LEARN))

    def mode(target: TargetCapabilities) -> OffloadMode:
        return OffloadMode(
            ModeContext(
                config=learn,
                p4info=PIPELINE.p4info,
                target=target,
                stats=Stats(),
                write=Switch().write,
                packet_out=lambda payload, metadata: None,
                now=lambda: 0.0,
                writer_options=WriterOptions(),
            )
        )

    with pytest.raises(ValueError, match="learn"):
        mode(bmv2(PIPELINE.p4info))
    m = mode(replace(bmv2(PIPELINE.p4info), learns=True))
    told = Told()
    m.io = told  # type: ignore[assignment]
    m.pipeline_pushed()
    assert told.lines == [(0, "offload fresh"), (1, "offload fresh")]
    assert m.stats["learn_fresh_told"] == 1
