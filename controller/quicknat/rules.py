"""NAT rules: the one definition both the configuration and QNS use.

A rule's match part ``(kind, prefix, port, protocol)`` is what QNS hashes on;
its target says what a new flow that matches is translated to. The lookup order
between rules is specified in docs/qns.md.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from quicknat.addr import Prefix


class Protocol(enum.IntEnum):
    """IP protocol numbers a rule can name; ANY (0) is the rule wildcard."""

    ANY = 0
    ICMP = 1
    TCP = 6
    UDP = 17

    @classmethod
    def parse(cls, text: str) -> Protocol:
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError("must be one of tcp, udp, icmp, any") from None

    def __str__(self) -> str:
        return self.name.lower()


#: Protocols whose packets carry ports that a rule's port can match.
PORTED_PROTOCOLS = frozenset({Protocol.TCP, Protocol.UDP})


class RuleKind(enum.Enum):
    SNAT = "snat"  # matches the packet's source address and port
    DNAT = "dnat"  # matches the packet's destination address and port

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class SnatToPool:
    """Translate the source to an address and port taken from a pool."""

    pool: str


@dataclass(frozen=True, slots=True)
class SnatToAddress:
    """Translate the source to one fixed address (ports from 1024-65535)."""

    address: int


@dataclass(frozen=True, slots=True)
class DnatTo:
    """Translate the destination: an address, or a prefix mapped 1:1 by host bits,
    and optionally a new port (port forwarding)."""

    prefix: Prefix
    port: int | None = None


Target = SnatToPool | SnatToAddress | DnatTo


@dataclass(frozen=True, slots=True)
class Rule:
    id: int
    kind: RuleKind
    prefix: Prefix
    port: int | None = None  # None: any port
    protocol: Protocol = Protocol.ANY
    target: Target | None = None  # None only for match-only rules (test vectors)

    @property
    def match_key(self) -> tuple[RuleKind, Prefix, int | None, Protocol]:
        """Two rules with the same match key cannot coexist."""
        return (self.kind, self.prefix, self.port, self.protocol)

    def describe_match(self) -> str:
        port = "any" if self.port is None else str(self.port)
        return f"{self.kind} {self.prefix} port {port} protocol {self.protocol}"
