"""What the controller must know of the switch it writes sessions to, in one
place: a target's capabilities, read by the writer (writer.py) and the modes
(modes/), never tested for by name elsewhere.

Two targets: BMv2 running the v1model build (`bmv2`), and quicknat-swx, DPDK's
SWX pipeline running the PNA build behind our P4Runtime server (`swx`,
docs/p4-targets.md). They differ exactly here: their table sizes, batch
limits, the code they answer a full table with, whether they notify idle
entries, and whether they can copy a packet to the controller. The program's
P4Info says which one runs it (`for_program`, by its architecture).
"""

from __future__ import annotations

from dataclasses import dataclass

from quicknat.p4rt.p4info import P4Info

# google.rpc.Code values a Write's per-update errors carry (P4Runtime spec 12.3).
UNKNOWN = 2
NOT_FOUND = 5
ALREADY_EXISTS = 6
RESOURCE_EXHAUSTED = 8

# The tables every session has one entry in.
SESSION_TABLES = ("nat_in2out", "nat_out2in")
# The tables a learning target fills by itself (nat.p4's learners): never
# written, and not readable (DPDK 22.11 lists no learner entry).
LEARNED_TABLES = ("nat_in2out_learned", "nat_out2in_learned")


@dataclass(frozen=True, slots=True)
class TargetCapabilities:
    """A P4Runtime target as the session writer sees it."""

    name: str
    """For logs: which target this is."""
    session_capacity: int
    """Sessions its connection tables hold: the smaller size of nat_in2out
    and nat_out2in, one entry each per session. New sessions beyond it are
    refused (controller mode, RES-4) or kept in software (offload mode)
    before any write is tried."""
    max_updates_per_write: int | None
    """Most updates one WriteRequest may carry; a longer write is split.
    None: the target sets no limit of its own (gRPC's message size aside)."""
    full_table_codes: frozenset[int]
    """The google.rpc codes it answers an INSERT into a full table with:
    such a failure is a full table (refused, or kept in software, with a
    back-off), any other an install failure."""
    idle_timeout_notifications: bool
    """Whether it ages entries itself and reports idle ones (P4Runtime
    IdleTimeoutNotification, spec sec. 9.1.8): then each session's ageing
    entry carries its idle timeout (nat/timeouts.py). A target without
    them gets entries without one (P4Runtime refuses an idle timeout on a
    table that does not support it), and its sessions are for the
    controller to age, by its own timers or the entries' counters, calling
    the modes' `idle` as the notifications do; BMv2 notifies, so no such
    ageing is built."""

    clone_sessions: bool
    """Whether it has a packet replication engine (P4Runtime
    CloneSessionEntry): then the switch forwards a session's TCP SYN, FIN
    and RST and copies them to the controller (TCP_STATE); without one it
    sends them up instead (TCP_SEGMENT) and the controller forwards them."""

    learns: bool = False
    """Whether its program has the learned session tables (PNA add_on_miss
    learner tables, nat.p4): then offload mode may leave sessions to the
    switch (`[offload] install = "learn"`) instead of writing them."""

    def table_full(self, code: int) -> bool:
        """Whether an INSERT that failed with `code` met a full table."""
        return code in self.full_table_codes


def bmv2(p4info: P4Info) -> TargetCapabilities:
    """simple_switch_grpc (BMv2 1.15) running p4src/: table sizes from the
    P4Info (the program is built with several; p4src/build/small/ has 64);
    its P4Runtime server (PI) answers a full table with UNKNOWN rather than
    RESOURCE_EXHAUSTED, so both mean full; it notifies idle entries; and it
    takes any number of updates in a write."""
    sizes = {t.preamble.alias: t.size for t in p4info.proto.tables}
    return TargetCapabilities(
        name="bmv2",
        session_capacity=min(sizes[table] for table in SESSION_TABLES),
        max_updates_per_write=None,
        full_table_codes=frozenset({RESOURCE_EXHAUSTED, UNKNOWN}),
        idle_timeout_notifications=True,
        clone_sessions=True,
    )


def swx(p4info: P4Info) -> TargetCapabilities:
    """quicknat-swx running p4src/build/pna/: table sizes from the P4Info;
    a full table is RESOURCE_EXHAUSTED (P4Runtime spec sec. 12.3); it ages
    entries by their direct counters and notifies idle ones; it applies a
    write's updates in one table transaction each (no limit of its own);
    PNA on DPDK 22.11 has no clone, so no clone sessions; it learns
    sessions where the program has the learned tables."""
    sizes = {t.preamble.alias: t.size for t in p4info.proto.tables}
    return TargetCapabilities(
        name="swx",
        session_capacity=min(sizes[table] for table in SESSION_TABLES),
        max_updates_per_write=None,
        full_table_codes=frozenset({RESOURCE_EXHAUSTED}),
        idle_timeout_notifications=True,
        clone_sessions=False,
        learns=all(table in sizes for table in LEARNED_TABLES),
    )


# The targets by the architecture the program was compiled for (P4Info's
# pkg_info.arch, which p4c writes).
_BY_ARCH = {"v1model": bmv2, "pna": swx}


def for_program(p4info: P4Info) -> TargetCapabilities:
    """The target a program was built for; ValueError for an architecture
    no target here runs."""
    arch = p4info.proto.pkg_info.arch
    if arch not in _BY_ARCH:
        raise ValueError(f"no target runs a program for the {arch!r} architecture")
    return _BY_ARCH[arch](p4info)
