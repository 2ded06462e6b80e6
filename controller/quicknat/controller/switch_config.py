"""What the configuration puts in the switch before any session, written at
every sync (service.py): the static entries (program.static_entries), the
punt meter, the CPU clone session, and offload mode's slow-path members,
group and tables (program.slow_path_entries). Whatever the switch holds of
them already is made to match. Sessions' entries are the writer's
(writer.py), never written here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from finsy.proto import p4r

from quicknat.config.model import Config
from quicknat.controller import program
from quicknat.controller.punts import ERROR_COPIES
from quicknat.controller.target import ALREADY_EXISTS
from quicknat.p4.constants import PuntReason
from quicknat.p4rt.client import P4RuntimeError, UpdateError
from quicknat.p4rt.p4info import P4Info

INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE

Write = Callable[[Sequence[p4r.Update]], Awaitable[list[UpdateError]]]

# Punt reasons that carry new flows: the meter's full rate (the others a tenth).
_NEW_FLOWS = (PuntReason.NEW_FLOW, PuntReason.NEW_FLOW_DNAT, PuntReason.FRAGMENT)


@dataclass(frozen=True, slots=True)
class SwitchConfig:
    """The configuration's entries, as the program wants them."""

    static: list[p4r.TableEntry]
    """program.static_entries: zones, MTUs, ARP, local addresses, routes, scopes."""
    slow_path: list[list[p4r.Entity]]
    """program.slow_path_entries: offload mode's stages (members, group,
    tables), each naming the one before; empty in controller mode."""
    punt_rate_pps: int
    """New-flow packet-ins per second the punt meter lets through."""

    @classmethod
    def of(cls, p4info: P4Info, config: Config, punt_rate_pps: int) -> SwitchConfig:
        """ConfigMismatch when the configuration lacks what the switch needs."""
        return cls(
            program.static_entries(p4info, config),
            program.slow_path_entries(p4info, config),
            punt_rate_pps,
        )

    def table_entries(self) -> list[p4r.TableEntry]:
        """The static entries and the slow-path tables' (the members and the
        group follow the instances, which change only with a restart): what
        a run-time change compares (reconfigure.entry_diff)."""
        stages = self.slow_path
        slow = [e.table_entry for stage in stages for e in stage if e.HasField("table_entry")]
        return [*self.static, *slow]

    async def write(self, write: Write, p4info: P4Info, config: Config, fresh: bool) -> None:
        """Every entry, on a switch with a new pipeline (`fresh`: inserts) or
        one that may hold them already (inserts, then modifies of those that
        exist)."""
        static = [p4r.Entity(table_entry=e) for e in self.static]
        await _insert(write, static, "static", modify_existing=not fresh)
        rate = self.punt_rate_pps
        meters = [_meter(p4info, config, r, rate) for r in PuntReason if r is not PuntReason.NONE]
        await _checked(write, meters, "punt meter")
        # (the packet replication engine's state may outlive a pipeline)
        await _insert(write, [program.cpu_clone_session()], "CPU clone session", True)
        for stage in self.slow_path:
            await _insert(write, stage, "slow path", modify_existing=True)


def _meter(p4info: P4Info, config: Config, reason: PuntReason, rate: int) -> p4r.Update:
    """One punt reason's meter: new flows at the full rate, the other punts a
    tenth of it, error copies no more than icmp_gen may answer."""
    pps = rate if reason in _NEW_FLOWS else rate // 10
    burst = pps
    if reason in ERROR_COPIES:
        pps, burst = config.icmp.rate, config.icmp.burst
    entry = p4r.MeterEntry(
        meter_id=p4info.object_id("punt_meter"),
        index=p4r.Index(index=int(reason)),
        config=p4r.MeterConfig(cir=pps, cburst=burst, pir=pps, pburst=burst),
    )
    return p4r.Update(type=MODIFY, entity=p4r.Entity(meter_entry=entry))


async def _insert(
    write: Write, entities: list[p4r.Entity], what: str, modify_existing: bool
) -> None:
    """INSERT them; with `modify_existing`, those the switch has already
    (ALREADY_EXISTS) are made to match by a MODIFY. Any other failure
    fails the sync (P4RuntimeError: the controller tries again)."""
    errors = await write([p4r.Update(type=INSERT, entity=e) for e in entities])
    if not modify_existing:
        _raise(errors, what)
        return
    _raise([e for e in errors if e.code != ALREADY_EXISTS], what)
    retry = [p4r.Update(type=MODIFY, entity=entities[e.index]) for e in errors]
    await _checked(write, retry, what)


async def _checked(write: Write, updates: list[p4r.Update], what: str) -> None:
    _raise(await write(updates), what)


def _raise(errors: list[UpdateError], what: str) -> None:
    for error in errors:
        raise P4RuntimeError(f"writing {what} entries: update {error.index}: {error.message}")
