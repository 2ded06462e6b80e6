"""Mapping events to syslog or a file (RFC 6888 REQ-12), as `[logging]` says.

One line per event: time (UTC), protocol, internal and external address:port.
No destination is recorded (RFC 6888: logging must not keep destinations by
default), and a mapping is logged once however many sessions it carries.
"""

from __future__ import annotations

import logging
import logging.handlers
import time

from quicknat.addr import format_ipv4
from quicknat.config.model import EventLog, Logging
from quicknat.nat.session import Mapping
from quicknat.rules import Protocol


def event_line(event: str, mapping: Mapping, wall_time: float) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall_time))
    internal, external = mapping.internal, mapping.external
    return (
        f"{stamp} mapping {event} {Protocol(mapping.protocol)} "
        f"{format_ipv4(internal.address)}:{internal.port} "
        f"{format_ipv4(external.address)}:{external.port}"
    )


class EventLogger:
    """Called by the NAT core (Nat.on_mapping); writes nothing when events are off."""

    def __init__(self, config: Logging) -> None:
        self.logger: logging.Logger | None = None
        if config.events is EventLog.NONE:
            return
        handler: logging.Handler
        if config.events is EventLog.SYSLOG:
            handler = logging.handlers.SysLogHandler(
                address="/dev/log", facility=logging.handlers.SysLogHandler.LOG_DAEMON
            )
            handler.setFormatter(logging.Formatter("quicknat: %(message)s"))
        else:
            assert config.file is not None
            handler = logging.FileHandler(config.file)
        self.logger = logging.getLogger("quicknat.events")
        self.logger.propagate = False
        self.logger.setLevel(logging.INFO)
        self.logger.addHandler(handler)

    def __call__(self, event: str, mapping: Mapping, now: float) -> None:
        if self.logger is not None:
            self.logger.info(event_line(event, mapping, time.time()))
