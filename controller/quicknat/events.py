"""Mapping events to syslog or a file (RFC 6888 REQ-12), as `[logging]` says.

One line per event: time (UTC), protocol, internal and external address:port.
No destination is recorded (RFC 6888: logging must not keep destinations by
default), and a mapping is logged once however many sessions it carries. A
host refused at a per-host limit is one "quota exceeded" line per episode
(RFC 8158's quota-exceeded event), with the limit and its value.
swpath writes the same lines (swpath/src/persist/events.c); its tests build the
expected text with event_text.
"""

from __future__ import annotations

import logging
import logging.handlers
import time

from quicknat.addr import format_ipv4
from quicknat.config.model import EventLog, Logging
from quicknat.event_export import Exporter
from quicknat.ipfix import NatEvent
from quicknat.nat.allocator import Endpoint
from quicknat.nat.session import Mapping, Session
from quicknat.rules import Protocol

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def event_text(event: str, protocol: int, internal: Endpoint, external: Endpoint) -> str:
    """What a line says after its time."""
    return (
        f"mapping {event} {Protocol(protocol)} "
        f"{format_ipv4(internal.address)}:{internal.port} "
        f"{format_ipv4(external.address)}:{external.port}"
    )


def quota_text(limit: str, internal_address: int, value: int) -> str:
    """What a quota line says after its time (swpath: events.c)."""
    return f"quota exceeded {limit} {format_ipv4(internal_address)} {value}"


def event_line(event: str, mapping: Mapping, wall_time: float) -> str:
    stamp = time.strftime(TIME_FORMAT, time.gmtime(wall_time))
    return f"{stamp} {event_text(event, mapping.protocol, mapping.internal, mapping.external)}"


class EventLogger:
    """Called by the NAT core (Nat.on_mapping); writes nothing when events are
    off. Events also go to the collectors `[logging]` names (event_export.py);
    sessions and exhaustion to the IPFIX collector only. The NAT is instance
    0 of the configuration (config/instances.py ipfix_identity)."""

    def __init__(self, config: Logging) -> None:
        self.logger: logging.Logger | None = None
        self.exporter: Exporter | None = None
        self.ipfix_sessions = config.ipfix_collector is not None and config.ipfix_sessions
        if config.syslog_server is not None or config.ipfix_collector is not None:
            self.exporter = Exporter(
                config.syslog_server,
                config.ipfix_collector,
                config.ipfix_domain,
                0,
                config.syslog_enterprise,
            )
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
            # reopens the file when logrotate has moved it (swpath: SIGHUP)
            handler = logging.handlers.WatchedFileHandler(config.file)
        # a logger of its own, not the registry's "quicknat.events": a second
        # EventLogger in the process (a test, a mode built again) must not
        # write into the first one's file as well
        self.logger = logging.Logger("quicknat.events", logging.INFO)
        self.logger.propagate = False
        self.logger.addHandler(handler)

    def __call__(self, event: str, mapping: Mapping, now: float) -> None:
        wall = time.time()
        if self.logger is not None:
            self.logger.info(event_line(event, mapping, wall))
        if self.exporter is not None:
            nat_event = NatEvent(
                event,
                int(wall * 1000),
                mapping.protocol,
                mapping.internal.address,
                mapping.internal.port,
                mapping.external.address,
                mapping.external.port,
            )
            text = event_text(event, mapping.protocol, mapping.internal, mapping.external)
            self.exporter.send(nat_event, text)

    def quota(self, limit: str, internal_address: int, value: int, now: float) -> None:
        """Nat.on_quota: a host reached `limit`."""
        wall = time.time()
        text = quota_text(limit, internal_address, value)
        if self.logger is not None:
            stamp = time.strftime(TIME_FORMAT, time.gmtime(wall))
            self.logger.info(f"{stamp} {text}")
        if self.exporter is not None:
            quota = NatEvent(
                "quota", int(wall * 1000), inside=internal_address, limit=limit, value=value
            )
            self.exporter.send(quota, text)

    def session(self, event: str, session: Session, now: float) -> None:
        """Nat.on_session (registered only with ipfix_sessions): RFC 8158's
        NAT44 session create or delete, seen as the inside host's packet
        out: inside endpoint, its translation, the remote."""
        if self.exporter is None:  # closed: the controller is stopping
            return
        self.exporter.send(
            NatEvent(
                f"session-{event}",
                int(time.time() * 1000),
                session.protocol,
                session.internal.address,
                session.internal.port,
                session.external.address,
                session.external.port,
                remote=session.remote_address,
                remote_port=session.remote_port,
            )
        )

    def exhausted(self, what: str, address: int, pool_id: int, protocol: int, now: float) -> None:
        """Nat.on_exhausted: a pool address out of ports, or a whole pool."""
        if self.exporter is None:
            return
        wall_ms = int(time.time() * 1000)
        if what == "ports":
            event = NatEvent("ports-exhausted", wall_ms, protocol, outside=address)
        else:
            event = NatEvent("addresses-exhausted", wall_ms, protocol, value=pool_id)
        self.exporter.send(event)

    def flush(self) -> None:
        """Sends the IPFIX records waiting (the controller's flush interval)."""
        if self.exporter is not None:
            self.exporter.flush()

    def close(self) -> None:
        """Sends what waits and closes the collectors' socket and the log
        file (or syslog's socket): the mode's stop."""
        if self.exporter is not None:
            self.exporter.close()
            self.exporter = None
        if self.logger is not None:
            for handler in list(self.logger.handlers):
                self.logger.removeHandler(handler)
                handler.close()
            self.logger = None
