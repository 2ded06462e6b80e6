"""The switch's sessions as read back at a (re)connection: the one reading
of its NAT tables that both modes recover from (service.py reads, each mode
adopts what it can account for and sweeps the rest, modes/).

A session is its two entries: the ageing nat_in2out entry, whose rewrite
gives its external endpoint, and the nat_out2in entry that key implies. An
entry whose other half is missing is no session: it is swept.
"""

from __future__ import annotations

from dataclasses import dataclass

from finsy.proto import p4r

from quicknat.nat.allocator import Endpoint
from quicknat.nat.session import FlowKey
from quicknat.p4rt.entities import action_params, exact_fields
from quicknat.p4rt.p4info import P4Info
from quicknat.rules import Protocol


@dataclass(frozen=True, slots=True)
class HeldSession:
    """A session whose two entries the switch holds."""

    in2out: FlowKey
    """Its ageing entry's key: the inside host's packets to the remote."""
    external: Endpoint
    """The source that entry rewrites to (rewrite_src's, or for a hairpin
    session rewrite_src_dst's and hairpin_pending's src_*)."""
    out2in: FlowKey
    """The other entry's key: the remote's packets to `external`."""
    opened_ms: int
    """When it opened, by the wall clock in ms, as its entry's controller
    metadata says (writer.py); 0: not said."""
    idle_timeout_s: int = 0
    """Its ageing entry's idle timeout as the switch holds it (s; 0: none)."""


@dataclass(frozen=True, slots=True)
class HeldEntries:
    """What the switch's connection tables hold; empty for a new pipeline."""

    sessions: tuple[HeldSession, ...] = ()
    """The sessions whose two entries are both there."""
    halves: tuple[tuple[str, FlowKey], ...] = ()
    """Entries without their other half, (table, key): no session."""


def flow_key(p4info: P4Info, entry: p4r.TableEntry) -> FlowKey:
    """A connection-table entry's key (as an idle notification names it too)."""
    f = exact_fields(p4info, entry)
    return FlowKey(f["ip_proto"], f["ipv4_src"], f["ipv4_dst"], f["l4_sport"], f["l4_dport"])


def held_entries(p4info: P4Info, in2out: list[p4r.Entity], out2in: list[p4r.Entity]) -> HeldEntries:
    """The two tables' entries (P4Runtime Read) as sessions and halves."""
    out_keys = {flow_key(p4info, e.table_entry) for e in out2in}
    sessions = []
    halves = []
    for entity in in2out:
        entry = entity.table_entry
        key = flow_key(p4info, entry)
        _, params = action_params(p4info, entry)
        external = Endpoint(
            params.get("addr", params.get("src_addr", 0)),
            params.get("port", params.get("src_port", 0)),
        )
        # what the remote answers to (ICMP: the identifier both ways, RFC 5508 sec. 3.1)
        port = external.port if key.protocol == Protocol.ICMP else key.dport
        back = FlowKey(key.protocol, key.dst, external.address, port, external.port)
        if back not in out_keys:
            halves.append(("nat_in2out", key))
            continue
        out_keys.discard(back)
        opened = int.from_bytes(entry.metadata, "big") if len(entry.metadata) == 8 else 0
        timeout = entry.idle_timeout_ns // 1_000_000_000
        sessions.append(HeldSession(key, external, back, opened, timeout))
    halves += [("nat_out2in", k) for k in sorted(out_keys, key=_order)]
    return HeldEntries(tuple(sessions), tuple(halves))


def _order(key: FlowKey) -> tuple[int, ...]:
    return (key.protocol, key.src, key.dst, key.sport, key.dport)
