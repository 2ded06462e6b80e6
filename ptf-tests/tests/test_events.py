"""Mapping events (LOG-1 of docs/nat-behavior.md, RFC 6888 REQ-12): one line
when a mapping is created, one when it is deleted, never the destination; the
same format from the controller and from swpath (README, `[logging]`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from base import INSIDE, OUTSIDE, QuickNatTest
from packets import echo, from_inside, udp
from ptf.testutils import group
from scapy.layers.inet import ICMP, IP, UDP

UDP_TIMEOUT = 4  # configs/ptf.toml
LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ mapping (created|deleted) (tcp|udp|icmp) "
    r"(\d+\.\d+\.\d+\.\d+:\d+) (\d+\.\d+\.\d+\.\d+:\d+)$"
)


@group("events")
class MappingEventsLogged(QuickNatTest):
    """A UDP mapping used towards two destinations is logged once when created
    and once when its last session ages out; an ICMP echo mapping logs its
    identifiers. No line names a destination."""

    def config_overlay(self, workdir: Path) -> dict[str, Any]:
        self.log = workdir / "events.log"
        self.log.unlink(missing_ok=True)
        return {"logging": {"events": "file", "file": str(self.log)}}

    def events(self) -> list[tuple[str, str, str, str]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text().splitlines()
        parsed = [LINE.match(line) for line in lines]
        self.assertTrue(all(parsed), lines)
        return [m.groups() for m in parsed if m]

    def runTest(self) -> None:
        for remote in ("198.51.100.10", "198.51.100.11"):
            self.send(INSIDE, from_inside("10.0.0.10", remote, udp(5500, 53)))
            out = self.receive(OUTSIDE)
        external = f"{out[IP].src}:{out[UDP].sport}"
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", echo(0x5501)))
        ping = self.receive(OUTSIDE)
        created = [
            ("created", "udp", "10.0.0.10:5500", external),
            ("created", "icmp", "10.0.0.10:21761", f"{ping[IP].src}:{ping[ICMP].id}"),
        ]
        self.target.wait_until("created events", lambda: len(self.events()) == 2, 5)
        self.assertEqual(sorted(self.events()), sorted(created))
        self.target.wait_until(
            "udp mapping deleted",
            lambda: ("deleted", "udp", "10.0.0.10:5500", external) in self.events(),
            UDP_TIMEOUT + 15,
        )
        text = self.log.read_text()
        self.assertNotIn("198.51.100.", text)  # no destination by default (REQ-12)
        self.assertEqual(len(self.events()), 3, text)
