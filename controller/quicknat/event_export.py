"""NAT events on the wire, for collectors: RFC 5424 syslog and IPFIX (RFC 8158).

Both over UDP (RFC 5426, RFC 7011 sec. 10.3), to the addresses `[logging]`
names (`syslog_server`, `ipfix_collector`), beside the line log; swpath sends
the same bytes (swpath/src/persist/event_export.c), so a collector cannot tell the two
paths apart but by APP-NAME and the observation domain.

RFC 5424: one message per event, facility daemon, severity info (a quota,
warning), MSGID `MAPPING` or `QUOTA`, the event as structured data under the
example enterprise number of RFC 5612 (`nat@32473`), and the line-log text as
MSG:

    <30>1 2026-11-24T15:06:00.123Z host quicknat-controller 812 MAPPING
      [nat@32473 event="created" proto="udp" inside="10.0.0.1:4000"
      outside="203.0.113.1:2000"] mapping created udp 10.0.0.1:4000 203.0.113.1:2000

IPFIX: each message carries its templates (UDP may lose or reorder them, RFC
7011 sec. 10.3.6) and then data records:
- template 256, a mapping (an endpoint-independent mapping is RFC 8158's NAT44
  BIB entry): observationTimeMilliseconds (323), natEvent (230: 8 created,
  9 deleted), protocolIdentifier (4), sourceIPv4Address (8),
  sourceTransportPort (7), postNATSourceIPv4Address (225),
  postNAPTSourceTransportPort (227);
- template 257, a host at a per-host limit: observationTimeMilliseconds,
  natEvent (13, quota exceeded), natQuotaExceededEvent (466: 3, maximum
  entries per user), sourceIPv4Address, maxEntriesPerUser (473, the limit's
  value; ports_per_host or sessions_per_host, whichever was reached).
"""

from __future__ import annotations

import os
import socket
import struct
import time
from dataclasses import dataclass

from quicknat.addr import format_ipv4

PEN_EXAMPLE = 32473  # RFC 5612: the enterprise number for documentation
APP_NAME = "quicknat-controller"
FACILITY_DAEMON = 3
SEVERITY = {"created": 6, "deleted": 6, "quota": 4}  # info, warning

IPFIX_VERSION = 10
TEMPLATE_SET = 2
MAPPING_TEMPLATE, QUOTA_TEMPLATE = 256, 257
NAT44_BIB_CREATE, NAT44_BIB_DELETE, QUOTA_EXCEEDED = 8, 9, 13
MAX_ENTRIES_PER_USER = 3  # natQuotaExceededEvent
# (element id, length) per template, in record order
MAPPING_FIELDS = ((323, 8), (230, 1), (4, 1), (8, 4), (7, 2), (225, 4), (227, 2))
QUOTA_FIELDS = ((323, 8), (230, 1), (466, 4), (8, 4), (473, 4))
_MAPPING = struct.Struct("!QBBIHIH")
_QUOTA = struct.Struct("!QBIII")


@dataclass(frozen=True, slots=True)
class NatEvent:
    """One event: a mapping created or deleted, or a host at a limit."""

    kind: str  # "created", "deleted", "quota"
    time_ms: int  # wall clock, ms since the epoch
    protocol: int = 0
    inside: int = 0  # address
    inside_port: int = 0
    outside: int = 0
    outside_port: int = 0
    limit: str = ""  # quota: "ports_per_host" or "sessions_per_host"
    value: int = 0  # quota: the limit's value


def _stamp(time_ms: int) -> str:
    seconds, ms = divmod(time_ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ms:03d}Z"


def syslog_5424(event: NatEvent, text: str, host: str, procid: int) -> bytes:
    """The RFC 5424 message of an event; `text` is its line-log text."""
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
    return f"{header} [nat@{PEN_EXAMPLE} {params}] {text}".encode()


def _template(template_id: int, fields: tuple[tuple[int, int], ...]) -> bytes:
    body = struct.pack("!HH", template_id, len(fields))
    body += b"".join(struct.pack("!HH", element, length) for element, length in fields)
    return body


TEMPLATES = _template(MAPPING_TEMPLATE, MAPPING_FIELDS) + _template(QUOTA_TEMPLATE, QUOTA_FIELDS)


def _set(set_id: int, body: bytes) -> bytes:
    return struct.pack("!HH", set_id, 4 + len(body)) + body


def ipfix_message(events: list[NatEvent], sequence: int, domain: int, export_s: int) -> bytes:
    """One IPFIX message: the templates, then the events' records."""
    mappings = b"".join(
        _MAPPING.pack(
            e.time_ms,
            NAT44_BIB_CREATE if e.kind == "created" else NAT44_BIB_DELETE,
            e.protocol,
            e.inside,
            e.inside_port,
            e.outside,
            e.outside_port,
        )
        for e in events
        if e.kind != "quota"
    )
    quotas = b"".join(
        _QUOTA.pack(e.time_ms, QUOTA_EXCEEDED, MAX_ENTRIES_PER_USER, e.inside, e.value)
        for e in events
        if e.kind == "quota"
    )
    body = _set(TEMPLATE_SET, TEMPLATES)
    if mappings:
        body += _set(MAPPING_TEMPLATE, mappings)
    if quotas:
        body += _set(QUOTA_TEMPLATE, quotas)
    return struct.pack("!HHIII", IPFIX_VERSION, 16 + len(body), export_s, sequence, domain) + body


def parse_ipfix(data: bytes) -> tuple[int, int, list[dict[str, int]]]:
    """(sequence, domain, records) of one message as ipfix_message writes
    them, each record by element id; the reader both paths' tests use."""
    version, length, _, sequence, domain = struct.unpack_from("!HHIII", data)
    if version != IPFIX_VERSION or length != len(data):
        raise ValueError(f"not an IPFIX message (version {version}, length {length})")
    templates: dict[int, list[tuple[int, int]]] = {}
    records: list[dict[str, int]] = []
    offset = 16
    while offset < length:
        set_id, set_length = struct.unpack_from("!HH", data, offset)
        end, offset = offset + set_length, offset + 4
        if set_id == TEMPLATE_SET:
            while offset < end:
                template_id, count = struct.unpack_from("!HH", data, offset)
                offset += 4
                fields = [struct.unpack_from("!HH", data, offset + 4 * i) for i in range(count)]
                templates[template_id] = fields
                offset += 4 * count
            continue
        fields = templates[set_id]
        size = sum(length for _, length in fields)
        while offset + size <= end:
            record = {"template": set_id}
            for element, width in fields:
                record[str(element)] = int.from_bytes(data[offset : offset + width], "big")
                offset += width
            records.append(record)
        offset = end
    return sequence, domain, records


class Exporter:
    """Sends events to the collectors `[logging]` names; a datagram that
    cannot be sent is counted (`failed`), never waited for."""

    def __init__(
        self,
        syslog_server: tuple[str, int] | None,
        ipfix_collector: tuple[str, int] | None,
        domain: int = 1,
    ) -> None:
        self.syslog_server = syslog_server
        self.ipfix_collector = ipfix_collector
        self.domain = domain
        self.sequence = 0  # data records sent (RFC 7011 sec. 3.1)
        self.failed = 0
        self.host = socket.gethostname() or "-"
        self.procid = os.getpid()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.setblocking(False)

    def send(self, event: NatEvent, text: str) -> None:
        if self.syslog_server is not None:
            self._send(syslog_5424(event, text, self.host, self.procid), self.syslog_server)
        if self.ipfix_collector is not None:
            message = ipfix_message([event], self.sequence, self.domain, event.time_ms // 1000)
            self._send(message, self.ipfix_collector)
            self.sequence = (self.sequence + 1) & 0xFFFFFFFF

    def _send(self, data: bytes, address: tuple[str, int]) -> None:
        try:
            self._sock.sendto(data, address)
        except OSError:
            self.failed += 1

    def close(self) -> None:
        self._sock.close()
