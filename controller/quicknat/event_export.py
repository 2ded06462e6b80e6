"""NAT events on the wire, for collectors: RFC 5424 syslog and IPFIX (RFC 8158).

Both over UDP (RFC 5426, RFC 7011 sec. 10.3), to the addresses `[logging]`
names (`syslog_server`, `ipfix_collector`), beside the line log; swpath sends
the same bytes (swpath/src/persist/event_export.c), so a collector cannot tell the two
paths apart but by APP-NAME and the observation domain.

RFC 5424: one message per event, facility daemon, severity info (a quota,
warning), MSGID `MAPPING` or `QUOTA`, the event as structured data under the
SD-ID `nat@N`, N the operator's enterprise number (`[logging]
syslog_enterprise`; RFC 5612's example number 32473 by default), and the
line-log text as MSG:

    <30>1 2026-11-24T15:06:00.123Z host quicknat-controller 812 MAPPING
      [nat@32473 event="created" proto="udp" inside="10.0.0.1:4000"
      outside="203.0.113.1:2000"] mapping created udp 10.0.0.1:4000 203.0.113.1:2000

IPFIX (RFC 7011 with RFC 8158's templates, ipfix.py and docs/ipfix.md):
every event, the mapping and quota events above and also NAT44 sessions
(with `ipfix_sessions`) and address and port exhaustion, several records a
message, sent when a message is full or at the flush interval.
"""

from __future__ import annotations

import os
import socket
import time

from quicknat.addr import format_ipv4
from quicknat.ipfix import Encoder, NatEvent

APP_NAME = "quicknat-controller"
FACILITY_DAEMON = 3
SEVERITY = {"created": 6, "deleted": 6, "quota": 4}  # info, warning


def _stamp(time_ms: int) -> str:
    seconds, ms = divmod(time_ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ms:03d}Z"


def syslog_5424(event: NatEvent, text: str, host: str, procid: int, enterprise: int) -> bytes:
    """The RFC 5424 message of an event; `text` is its line-log text,
    `enterprise` the SD-ID's Private Enterprise Number (RFC 5424 sec. 7.2.2)."""
    pri = FACILITY_DAEMON * 8 + SEVERITY[event.kind]
    if event.kind == "quota":
        msgid = "QUOTA"
        params = (
            f'event="quota-exceeded" limit="{event.limit}" '
            f'host="{format_ipv4(event.inside)}" value="{event.value}"'
        )
    else:
        msgid = "MAPPING"
        proto = {1: "icmp", 6: "tcp", 17: "udp"}.get(event.protocol, str(event.protocol))
        params = (
            f'event="{event.kind}" proto="{proto}" '
            f'inside="{format_ipv4(event.inside)}:{event.inside_port}" '
            f'outside="{format_ipv4(event.outside)}:{event.outside_port}"'
        )
    header = f"<{pri}>1 {_stamp(event.time_ms)} {host} {APP_NAME} {procid} {msgid}"
    return f"{header} [nat@{enterprise} {params}] {text}".encode()


class Exporter:
    """Sends events to the collectors `[logging]` names; a datagram that
    cannot be sent is counted (`failed`), never waited for. IPFIX records
    wait for `flush` (the controller's flush interval) or for a full
    message."""

    def __init__(
        self,
        syslog_server: tuple[str, int] | None,
        ipfix_collector: tuple[str, int] | None,
        domain: int,
        instance: int,
        enterprise: int,
    ) -> None:
        self.syslog_server = syslog_server
        self.enterprise = enterprise
        self.ipfix_collector = ipfix_collector
        self.ipfix = Encoder(domain, instance)
        self.failed = 0
        self.host = socket.gethostname() or "-"
        self.procid = os.getpid()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.setblocking(False)

    def send(self, event: NatEvent, text: str = "") -> None:
        """`text` is the line-log text of the events syslog carries (mapping
        and quota); the others go to IPFIX only."""
        if self.syslog_server is not None and event.kind in SEVERITY:
            self._send(
                syslog_5424(event, text, self.host, self.procid, self.enterprise),
                self.syslog_server,
            )
        if self.ipfix_collector is not None:
            full = self.ipfix.add(event, time.time())
            if full is not None:
                self._send(full, self.ipfix_collector)

    def flush(self) -> None:
        """Sends the IPFIX records waiting, if any."""
        if self.ipfix_collector is not None:
            message = self.ipfix.flush(time.time())
            if message is not None:
                self._send(message, self.ipfix_collector)

    def _send(self, data: bytes, address: tuple[str, int]) -> None:
        try:
            self._sock.sendto(data, address)
        except OSError:
            self.failed += 1

    def close(self) -> None:
        self.flush()
        self._sock.close()
