"""Addresses as integers (quicknat/addr.py): formatting and parsing agree
with the standard library's strict parser, at every edge."""

from __future__ import annotations

import ipaddress
import random

import pytest
from quicknat.addr import format_ipv4, parse_ipv4


def test_format_and_parse_agree_with_ipaddress() -> None:
    rng = random.Random(4)
    for value in [
        0,
        1,
        255,
        256,
        0x0A000001,
        0xFFFFFFFF,
        *(rng.getrandbits(32) for _ in range(5000)),
    ]:
        text = format_ipv4(value)
        assert text == str(ipaddress.IPv4Address(value))
        assert parse_ipv4(text) == value


@pytest.mark.parametrize("value", [-1, 1 << 32])
def test_what_is_not_an_address_is_refused(value: int) -> None:
    with pytest.raises(ValueError, match="not an IPv4 address"):
        format_ipv4(value)
