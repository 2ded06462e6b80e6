"""Leases: how long a switch that learns sessions holds each kind before it
asks the session's owner again (offload mode with `install = "learn"`,
docs/offload.md "Learning").

A learning switch (quicknat-swx's learner tables) keeps a learned entry for
a fixed time, its timeout class, whatever traffic it sees: the entry is a
lease. So the instance that owns the session knows the switch stops
translating with its port by its last learn tag plus the lease, and holds
the session (and the port) until then plus the NAT's own idle timeout: the
idle timeouts of docs/nat-behavior.md stay minimums, and no port is handed
out while the switch can still use it.

The choice of class, per kind of session, is this module's: the longest
class at most half the kind's idle timeout, else the shortest. Half bounds
what a lease adds to the time a port is held after its flow ends (at most
half its timeout again) and makes an active flow's packet visit its
instance at most twice per timeout. swpath applies the result (`offload
lease` commands, config/commands.py); it decides nothing itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from quicknat.config.model import Timeouts


@dataclass(frozen=True, slots=True)
class Lease:
    """The switch's timeout class a kind of session is learned under."""

    timeout_class: int
    seconds: int


# Session kinds as swpath's timeout rule keys them (nat/timeouts.py, its
# sp_session_timeout_ms): the names of the `offload lease` command.
KINDS = ("icmp", "udp", "tcp_transitory", "tcp_established")


def lease_for(classes: tuple[int, ...], idle_timeout: int) -> Lease:
    """The longest class at most half of `idle_timeout` (the smaller
    class number among equals), else the shortest."""
    if not classes:
        raise ValueError("a learning switch has at least one timeout class")
    fitting = [(s, -c) for c, s in enumerate(classes) if 2 * s <= idle_timeout]
    if fitting:
        seconds, neg = max(fitting)
        return Lease(-neg, seconds)
    seconds, number = min((s, c) for c, s in enumerate(classes))
    return Lease(number, seconds)


def leases(timeouts: Timeouts, classes: tuple[int, ...]) -> dict[str, Lease]:
    """Each kind's lease, by KINDS' names."""
    return {kind: lease_for(classes, getattr(timeouts, kind)) for kind in KINDS}
