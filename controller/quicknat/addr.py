"""IPv4 addresses as host-order integers, and the prefix type every module shares.

Integers rather than ``ipaddress`` objects: the QNS lookup and the controller's
packet-in path do arithmetic on addresses per packet, and ints are what the wire
formats (P4Runtime bytes, DPDK host order) convert to and from cheaply.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

MAX_PLEN = 32


def mask_of(length: int) -> int:
    """The netmask of a prefix length as an integer (0 for /0)."""
    return (0xFFFFFFFF << (32 - length)) & 0xFFFFFFFF


def parse_ipv4(text: str) -> int:
    """Parse a dotted-quad address; raises ValueError with a short reason."""
    try:
        return int(ipaddress.IPv4Address(text))
    except ipaddress.AddressValueError as exc:
        raise ValueError(str(exc)) from None


def format_ipv4(value: int) -> str:
    """Dotted quad. Formatted here, not by ipaddress: the offload manager
    writes two per offloaded flow, at a third of ipaddress's cost."""
    if not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(f"not an IPv4 address: {value}")
    return f"{value >> 24}.{value >> 16 & 255}.{value >> 8 & 255}.{value & 255}"


@dataclass(frozen=True, slots=True, order=True)
class Prefix:
    """An IPv4 prefix with no host bits set, e.g. 10.0.0.0/24."""

    address: int
    length: int

    @classmethod
    def parse(cls, text: str) -> Prefix:
        """Parse ``a.b.c.d/len`` or a bare address (a /32).

        Raises ValueError with the reason a user needs: a bad length, or host
        bits set (naming the prefix they probably meant).
        """
        addr_text, slash, len_text = text.partition("/")
        address = parse_ipv4(addr_text)
        if not slash:
            return cls(address, MAX_PLEN)
        if not len_text.isdigit() or int(len_text) > MAX_PLEN:
            raise ValueError(f"prefix length must be 0..{MAX_PLEN}")
        length = int(len_text)
        masked = address & mask_of(length)
        if masked != address:
            raise ValueError(f"host bits set (did you mean {format_ipv4(masked)}/{length}?)")
        return cls(address, length)

    @property
    def mask(self) -> int:
        return mask_of(self.length)

    @property
    def size(self) -> int:
        return 1 << (32 - self.length)

    def __contains__(self, address: int) -> bool:
        return (address & self.mask) == self.address

    def overlaps(self, other: Prefix) -> bool:
        shorter = self if self.length <= other.length else other
        longer = other if shorter is self else self
        return longer.address in shorter

    def __str__(self) -> str:
        return f"{format_ipv4(self.address)}/{self.length}"


@dataclass(frozen=True, slots=True)
class InterfaceAddress:
    """A router address on a link, with the link's prefix length (10.0.0.1/24)."""

    address: int
    length: int

    @classmethod
    def parse(cls, text: str) -> InterfaceAddress:
        addr_text, slash, len_text = text.partition("/")
        address = parse_ipv4(addr_text)
        if not slash:
            raise ValueError("needs a prefix length, e.g. 10.0.0.1/24")
        if not len_text.isdigit() or int(len_text) > MAX_PLEN:
            raise ValueError(f"prefix length must be 0..{MAX_PLEN}")
        return cls(address, int(len_text))

    @property
    def network(self) -> Prefix:
        return Prefix(self.address & mask_of(self.length), self.length)

    def __str__(self) -> str:
        return f"{format_ipv4(self.address)}/{self.length}"
