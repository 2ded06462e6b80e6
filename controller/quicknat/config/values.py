"""Parsers for single configuration values.

Each takes the raw TOML value and returns the typed value or raises ValueError
with the reason alone; the caller adds where (file, section, field, value).
"""

from __future__ import annotations

import re
from typing import Any

from quicknat.addr import InterfaceAddress, Prefix, format_ipv4, parse_ipv4
from quicknat.rules import Protocol

_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
_PORT_RANGE = re.compile(r"^(\d+)-(\d+)$")


class WrongType(ValueError):
    """The value has the wrong TOML type (a string where a number belongs...)."""


def _string(value: Any, expected: str = "must be a string") -> str:
    if not isinstance(value, str):
        raise WrongType(expected)
    return value


def integer(value: Any, low: int, high: int) -> int:
    # bool is an int in Python; `port = true` is a mistake, not 1.
    if not isinstance(value, int) or isinstance(value, bool):
        raise WrongType(f"must be an integer {low}..{high}")
    if not low <= value <= high:
        raise ValueError(f"must be {low}..{high}")
    return value


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise WrongType("must be true or false")
    return value


def observation_domain(value: Any) -> int:
    """An IPFIX Observation Domain ID (RFC 7011 sec. 3.1: 32 bits; 0 is
    reserved for "no specific domain", so not one an instance can have)."""
    return integer(value, 1, 0xFFFFFFFF)


def port(value: Any) -> int:
    return integer(value, 0, 65535)


def name(value: Any) -> str:
    text = _string(value)
    if not text or text != text.strip():
        raise ValueError("must be a non-empty name without surrounding spaces")
    return text


def file_path(value: Any) -> str:
    text = name(value)
    # swpath gets it as one word of its command language (docs/swpath-commands.md)
    if any(c.isspace() for c in text) or "#" in text:
        raise ValueError("must be a path without spaces or '#'")
    return text


def prefix(value: Any) -> Prefix:
    return Prefix.parse(_string(value))


def address(value: Any) -> int:
    text = _string(value)
    if "/" in text:
        raise ValueError("must be a single address, not a prefix")
    return parse_ipv4(text)


def collector(value: Any) -> tuple[str, int]:
    """A collector's "a.b.c.d:port" (UDP)."""
    expected = 'must be "a.b.c.d:port"'
    host, _, number = _string(value, expected).rpartition(":")
    try:
        parse_ipv4(host)
        udp_port = int(number)
    except ValueError:
        raise ValueError(expected) from None
    if not 1 <= udp_port <= 65535:
        raise ValueError("port must be 1-65535")
    return host, udp_port


def interface_address(value: Any) -> InterfaceAddress:
    return InterfaceAddress.parse(_string(value))


def mac(value: Any) -> str:
    text = _string(value).lower()
    if not _MAC.match(text):
        raise ValueError("must be a MAC address like 02:00:00:00:00:01")
    if int(text[:2], 16) & 1:
        raise ValueError("is a multicast MAC address")
    return text


def protocol(value: Any) -> Protocol:
    return Protocol.parse(_string(value))


def port_range(value: Any) -> tuple[int, int]:
    expected = 'must be a range like "1024-65535"'
    match = _PORT_RANGE.match(_string(value, expected).replace(" ", ""))
    if not match:
        raise ValueError(expected)
    low, high = int(match[1]), int(match[2])
    if not 1 <= low <= high <= 65535:
        raise ValueError("must be within 1-65535, low end first")
    return low, high


def display_address(value: int) -> str:
    return format_ipv4(value)


def display(value: Any, quoted: bool = False) -> str:
    """How a value is shown in a message: strings bare (quoted when the type is
    the mistake, so `port "80"` shows why), the rest as TOML writes them."""
    if isinstance(value, str):
        return f'"{value}"' if quoted else value
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)
