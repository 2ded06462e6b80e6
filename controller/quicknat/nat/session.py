"""Sessions and endpoint-independent mappings: the data the NAT keeps per flow.

A session is the paper's pair of connection records: one flow key per direction,
each with the rewrite that direction needs. The data planes install exactly these
(P4 table entries, swpath connection-table records).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from quicknat.nat.allocator import Endpoint
from quicknat.rules import Protocol


@dataclass(frozen=True, slots=True)
class FlowKey:
    """What a connection table matches. For ICMP query messages both ports are the
    query identifier (RFC 5508 sec. 3.1: the identifier is mapped like a port)."""

    protocol: int
    src: int
    dst: int
    sport: int
    dport: int


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The new source and/or destination of a translated packet."""

    src: Endpoint | None = None
    dst: Endpoint | None = None


class Origin(enum.Enum):
    SNAT = "snat"  # opened from inside through an SNAT rule
    INBOUND = "inbound"  # opened from outside on an existing mapping (filtering allowed it)
    DNAT = "dnat"  # opened from outside through a DNAT rule


@dataclass(slots=True)
class Mapping:
    """An endpoint-independent mapping (RFC 4787 REQ-1): one internal endpoint,
    one external endpoint, shared by every session of that internal endpoint."""

    protocol: int
    internal: Endpoint
    external: Endpoint
    pool: str
    sessions: int = 0
    remotes: list[int] = field(default_factory=list)
    """Remote address of each session, one item per session (address-dependent
    filtering asks whether an address is among them). A list: mappings have few
    sessions, and a list costs a third of a dict per mapping."""


@dataclass(slots=True, eq=False)  # identity: hairpin partners refer to each other
class Session:
    id: int
    rule_id: int
    origin: Origin
    protocol: int
    internal: Endpoint
    """The inside host's endpoint (for DNAT: the server after translation)."""
    external: Endpoint
    """The endpoint the outside sees for the inside host."""
    remote_address: int
    """The outside peer (two ints rather than an Endpoint: a session is the
    controller's unit of memory, see bench-bmv2)."""
    remote_port: int
    created: float
    mapping: Mapping | None = None
    """The shared mapping for SNAT and inbound sessions; None for DNAT."""
    tcp: int = 0
    """TCP state: the TCP_* flags seen so far (tcp_state.py)."""
    hairpin: bool = False
    """The remote is one of the NAT's own public endpoints (RFC 4787 REQ-9): a
    packet leaving by this session comes straight back in, to `partner`."""
    partner: Session | None = None
    """For a hairpin session, the session its translated packets enter by (the
    peer's inbound, DNAT or own hairpin session); None while the peer's filtering
    refuses them. Linked both ways by Nat.open_hairpin."""
    install: Any = None
    """Where its data-plane entries stand, kept by the data path that writes
    them (the controller's install_state.InstallState); None: not written. A
    slot here, not a table beside it: it costs a session 8 bytes."""

    @property
    def remote(self) -> Endpoint:
        return Endpoint(self.remote_address, self.remote_port)

    def _ports(self, endpoint: Endpoint, peer: Endpoint) -> tuple[int, int]:
        if self.protocol == Protocol.ICMP:
            return endpoint.port, endpoint.port
        return endpoint.port, peer.port

    @property
    def in2out(self) -> FlowKey:
        """Packets from the inside host to the remote, before translation."""
        sport, dport = self._ports(self.internal, self.remote)
        return FlowKey(self.protocol, self.internal.address, self.remote.address, sport, dport)

    @property
    def out2in(self) -> FlowKey:
        """Packets from the remote to the external endpoint, before translation."""
        if self.protocol == Protocol.ICMP:
            sport = dport = self.external.port
        else:
            sport, dport = self.remote.port, self.external.port
        return FlowKey(self.protocol, self.remote.address, self.external.address, sport, dport)

    @property
    def hairpin_key(self) -> FlowKey:
        """A hairpin session's packet after its in2out rewrite: what enters again,
        as if from outside, and is the partner's out2in key."""
        if self.protocol == Protocol.ICMP:
            sport = dport = self.external.port
        else:
            sport, dport = self.external.port, self.remote.port
        return FlowKey(self.protocol, self.external.address, self.remote.address, sport, dport)

    @property
    def in2out_rewrite(self) -> Rewrite | None:
        """The external source; for a hairpin session also the partner's internal
        endpoint as destination (both rewrites in one step, as the packet would
        get from this session and then the partner's out2in). None for a hairpin
        session with no partner: its packets go to the NAT's slow path, which
        tries to open the second half again (swpath does the same per packet)."""
        if not self.hairpin:
            return Rewrite(src=self.external)
        if self.partner is None:
            return None
        return Rewrite(src=self.external, dst=self.partner.internal)

    @property
    def out2in_rewrite(self) -> Rewrite:
        return Rewrite(dst=self.internal)
