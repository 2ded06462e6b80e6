"""What the configuration puts in the switch before any session, written at
every sync (service.py) and changed at run time (Controller.reconfigure):
the static entries (program.static_entries), the punt meter, the CPU clone
session, and offload mode's slow-path members, group and tables
(program.slow_path_entries). Sessions' entries are the writer's (writer.py),
never written here.

On a switch that kept its tables (same program) the configuration tables
are read and only their difference is written, as a run-time change writes
it: entries of an older configuration go, changed ones are modified, and a
write never carries hundreds of INSERTs the switch answers ALREADY_EXISTS
(their errors' details outgrow gRPC's metadata limit, 16 KiB, so the answer
says nothing about which failed).
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Protocol

from finsy.proto import p4r

from quicknat.config.model import Config
from quicknat.controller import program
from quicknat.controller.punts import ERROR_COPIES
from quicknat.controller.reconfigure import EntryDiff, entry_diff
from quicknat.controller.target import (
    ALREADY_EXISTS,
    LEARNED_TABLES,
    SESSION_TABLES,
    TargetCapabilities,
)
from quicknat.p4.constants import PuntReason
from quicknat.p4rt.client import P4RuntimeError, UpdateError
from quicknat.p4rt.p4info import P4Info

INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE

# Punt reasons that carry new flows: the meter's full rate (the others a tenth).
_NEW_FLOWS = (PuntReason.NEW_FLOW, PuntReason.NEW_FLOW_DNAT, PuntReason.FRAGMENT)


class Client(Protocol):
    """The P4Runtime calls a sync makes (p4rt.client.P4RuntimeClient)."""

    def write(self, updates: Sequence[p4r.Update]) -> Awaitable[list[UpdateError]]: ...
    def read(self, entities: Sequence[p4r.Entity]) -> Awaitable[list[p4r.Entity]]: ...


@dataclass(frozen=True, slots=True)
class SwitchConfig:
    """The configuration's entries, as the program wants them."""

    p4info: P4Info
    """The program's P4Info."""
    config: Config
    """The configuration they are of (the meter's ICMP rate is its)."""
    static: list[p4r.TableEntry]
    """program.static_entries: zones, MTUs, ARP, local addresses, routes, scopes."""
    slow_path: list[list[p4r.Entity]]
    """program.slow_path_entries: offload mode's stages (members, group,
    tables), each naming the one before; empty in controller mode."""
    punt_rate_pps: int
    """New-flow packet-ins per second the punt meter lets through."""
    clone_session: bool
    """Whether the target copies TCP state changes to the controller
    (TargetCapabilities.clone_sessions): then it gets the clone session."""

    @classmethod
    def of(
        cls, p4info: P4Info, config: Config, punt_rate_pps: int, target: TargetCapabilities
    ) -> SwitchConfig:
        """ConfigMismatch when the configuration lacks what the switch needs."""
        return cls(
            p4info,
            config,
            program.static_entries(p4info, config),
            program.slow_path_entries(p4info, config),
            punt_rate_pps,
            target.clone_sessions,
        )

    def table_entries(self) -> list[p4r.TableEntry]:
        """The static entries and the slow-path tables' (the members and the
        group follow the instances, which change only with a restart)."""
        stages = self.slow_path
        slow = [e.table_entry for stage in stages for e in stage if e.HasField("table_entry")]
        return [*self.static, *slow]

    async def write(self, client: Client, fresh: bool) -> None:
        """Every entry: on a switch with a new pipeline (`fresh`) inserted;
        on one that kept its tables, the difference from what they hold.
        P4RuntimeError when the switch refuses one (the sync fails)."""
        for stage in self.slow_path[:2]:  # members, then the group naming them
            await _insert_or_modify(client, stage, "slow path")
        if fresh:
            updates = [_update(INSERT, e) for e in self.table_entries()]
            _raise(await client.write(updates), "configuration")
        else:
            tables = [
                p4r.Entity(table_entry=p4r.TableEntry(table_id=t.preamble.id))
                for t in self.p4info.proto.tables
                if t.preamble.alias not in (*SESSION_TABLES, *LEARNED_TABLES)
            ]
            held = [e.table_entry for e in await client.read(tables)]
            _raise(
                await write_diff(client, entry_diff(held, self.table_entries())), "configuration"
            )
        meters = [self._meter(r) for r in PuntReason if r is not PuntReason.NONE]
        _raise(await client.write(meters), "punt meter")
        if self.clone_session:
            # (the packet replication engine's state may outlive a pipeline)
            await _insert_or_modify(client, [program.cpu_clone_session()], "CPU clone session")

    def _meter(self, reason: PuntReason) -> p4r.Update:
        """One punt reason's meter: new flows at the full rate, the other
        punts a tenth of it, error copies no more than icmp_gen may answer."""
        rate = self.punt_rate_pps
        pps = rate if reason in _NEW_FLOWS else rate // 10
        burst = pps
        if reason in ERROR_COPIES:
            pps, burst = self.config.icmp.rate, self.config.icmp.burst
        entry = p4r.MeterEntry(
            meter_id=self.p4info.object_id("punt_meter"),
            index=p4r.Index(index=int(reason)),
            config=p4r.MeterConfig(cir=pps, cburst=burst, pir=pps, pburst=burst),
        )
        return p4r.Update(type=MODIFY, entity=p4r.Entity(meter_entry=entry))


async def write_diff(client: Client, diff: EntryDiff) -> list[UpdateError]:
    """A difference of configuration entries: the DELETEs first, in a write
    of their own (P4Runtime orders nothing within a write, spec sec. 12.2,
    and a deleted key may come back), then the MODIFYs and INSERTs. The
    updates the switch refused."""
    errors = []
    if diff.deletes:
        errors += await client.write([_update(DELETE, e) for e in diff.deletes])
    updates = [_update(MODIFY, e) for e in diff.modifies]
    updates += [_update(INSERT, e) for e in diff.inserts]
    if updates:
        errors += await client.write(updates)
    return errors


def _update(kind: p4r.Update.Type.ValueType, entry: p4r.TableEntry) -> p4r.Update:
    return p4r.Update(type=kind, entity=p4r.Entity(table_entry=entry))


async def _insert_or_modify(client: Client, entities: list[p4r.Entity], what: str) -> None:
    """INSERT them; those the switch has already (ALREADY_EXISTS) are made
    to match by a MODIFY. (A handful: their errors fit a write's answer.)"""
    errors = await client.write([p4r.Update(type=INSERT, entity=e) for e in entities])
    _raise([e for e in errors if e.code != ALREADY_EXISTS], what)
    retry = [p4r.Update(type=MODIFY, entity=entities[e.index]) for e in errors]
    _raise(await client.write(retry), what)


def _raise(errors: list[UpdateError], what: str) -> None:
    for error in errors:
        raise P4RuntimeError(f"writing {what} entries: update {error.index}: {error.message}")
