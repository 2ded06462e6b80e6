"""What the controller must know of the switch it writes sessions to, in one
place: a target's capabilities, read by the writer (writer.py) and the modes
(modes/), never tested for by name elsewhere.

BMv2 is the one target today. A second one (DPDK's SWX pipeline behind a
P4Runtime server of our own) differs exactly here: its table sizes, its
batch limit, the code it answers a full table with (RESOURCE_EXHAUSTED, as
P4Runtime spec sec. 12.3 asks), and whether it notifies idle entries at
all. It is a second constructor beside `bmv2`; what the controller does with
a capability (size its room checks, split its writes, classify an error,
give an entry an idle timeout) is already written against the fields.
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
    )
