"""IPFIX messages of NAT events: RFC 7011's format with RFC 8158's templates.

No I/O: the encoder turns events into messages and the exporter
(event_export.py) sends them; swpath builds the same bytes in C
(swpath/src/persist/event_export.c). docs/ipfix.md lists the templates and
what a collector decodes from them (tshark's output included).

- Several records per message: records wait in the encoder until the next
  one would take the message past MESSAGE_MAX bytes (RFC 7011 sec. 10.3.3:
  an IPFIX message over UDP fits the path MTU) or until the exporter's flush
  interval has passed.
- Templates go in the first message and again in the first message after
  TEMPLATE_REFRESH_S seconds (RFC 7011 sec. 8.4 and 10.3.6: over UDP a
  collector that lost them, or started later, learns them again).
- Every record carries natInstanceID (RFC 8158 sec. 4.1.1), and every
  message the observation domain of the instance that sent it, so a collector
  tells the instances of one NAT apart.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

IPFIX_VERSION = 10
TEMPLATE_SET = 2
HEADER = struct.Struct("!HHIII")  # version, length, export time, sequence, domain
MESSAGE_MAX = 1400  # bytes: 1428 with IPv4 and UDP, within a 1500-byte MTU
TEMPLATE_REFRESH_S = 60.0
FLUSH_INTERVAL_S = 1.0  # the longest a record waits for a full message

# natEvent values (RFC 8158 sec. 4.1.3, IANA's "NAT Event Type" registry).
# 1 and 2 are the historic NetFlow v9 values; RFC 8158 gives NAT44 sessions
# 4 and 5.
NAT_ADDRESSES_EXHAUSTED = 3
NAT44_SESSION_CREATE = 4
NAT44_SESSION_DELETE = 5
NAT44_BIB_CREATE = 8
NAT44_BIB_DELETE = 9
NAT_PORTS_EXHAUSTED = 12
QUOTA_EXCEEDED = 13
MAX_ENTRIES_PER_USER = 3  # natQuotaExceededEvent (RFC 8158 sec. 4.1.4)

# Information Element ids (IANA's IPFIX registry; RFC 8158 sec. 4.1 and 5).
PROTOCOL_IDENTIFIER = 4
SOURCE_TRANSPORT_PORT = 7
SOURCE_IPV4_ADDRESS = 8
DESTINATION_TRANSPORT_PORT = 11
DESTINATION_IPV4_ADDRESS = 12
POST_NAT_SOURCE_IPV4_ADDRESS = 225
POST_NAPT_SOURCE_TRANSPORT_PORT = 227
NAT_EVENT = 230
NAT_POOL_ID = 283
OBSERVATION_TIME_MILLISECONDS = 323
NAT_INSTANCE_ID = 463
NAT_QUOTA_EXCEEDED_EVENT = 466
MAX_ENTRIES_PER_USER_IE = 473

_WIDTH_FORMAT = {1: "B", 2: "H", 4: "I", 8: "Q"}
# The head of every record: observationTimeMilliseconds, natEvent, natInstanceID.
_HEAD = ((OBSERVATION_TIME_MILLISECONDS, 8), (NAT_EVENT, 1), (NAT_INSTANCE_ID, 4))


@dataclass(frozen=True, slots=True)
class Template:
    """One template: its id and (element id, length) in record order."""

    template_id: int
    fields: tuple[tuple[int, int], ...]

    @property
    def record(self) -> struct.Struct:
        return struct.Struct("!" + "".join(_WIDTH_FORMAT[width] for _, width in self.fields))

    def encode(self) -> bytes:
        head = struct.pack("!HH", self.template_id, len(self.fields))
        return head + b"".join(struct.pack("!HH", e, width) for e, width in self.fields)


# RFC 8158 sec. 4.4's layouts, natInstanceID added to each.
BIB = Template(
    256,
    (
        *_HEAD,
        (PROTOCOL_IDENTIFIER, 1),
        (SOURCE_IPV4_ADDRESS, 4),
        (SOURCE_TRANSPORT_PORT, 2),
        (POST_NAT_SOURCE_IPV4_ADDRESS, 4),
        (POST_NAPT_SOURCE_TRANSPORT_PORT, 2),
    ),
)
QUOTA = Template(
    257,
    (*_HEAD, (NAT_QUOTA_EXCEEDED_EVENT, 4), (SOURCE_IPV4_ADDRESS, 4), (MAX_ENTRIES_PER_USER_IE, 4)),
)
SESSION = Template(
    258, (*BIB.fields, (DESTINATION_IPV4_ADDRESS, 4), (DESTINATION_TRANSPORT_PORT, 2))
)
# protocolIdentifier beside RFC 8158's fields: ports are per protocol here.
ADDRESSES_EXHAUSTED = Template(259, (*_HEAD, (NAT_POOL_ID, 4), (PROTOCOL_IDENTIFIER, 1)))
PORTS_EXHAUSTED = Template(
    260, (*_HEAD, (POST_NAT_SOURCE_IPV4_ADDRESS, 4), (PROTOCOL_IDENTIFIER, 1))
)
TEMPLATES = (BIB, QUOTA, SESSION, ADDRESSES_EXHAUSTED, PORTS_EXHAUSTED)
TEMPLATE_SET_BYTES = 4 + sum(4 + 4 * len(t.fields) for t in TEMPLATES)
_ENCODED_TEMPLATES = b"".join(t.encode() for t in TEMPLATES)
_STRUCTS = {t.template_id: t.record for t in TEMPLATES}


@dataclass(frozen=True, slots=True)
class NatEvent:
    """One event. kind: "created" / "deleted" (a mapping, RFC 8158's NAT44
    BIB entry), "session-created" / "session-deleted", "quota" (a host at a
    per-host limit), "addresses-exhausted" (a pool), "ports-exhausted" (one
    pool address, one protocol)."""

    kind: str
    time_ms: int  # wall clock, ms since the epoch
    protocol: int = 0
    inside: int = 0  # address
    inside_port: int = 0
    outside: int = 0
    outside_port: int = 0
    limit: str = ""  # quota: "ports_per_host" or "sessions_per_host"
    value: int = 0  # quota: the limit's value; addresses-exhausted: natPoolID
    remote: int = 0  # a session's destination (RFC 8158 sec. 4.4.1)
    remote_port: int = 0


def _record(event: NatEvent, instance: int) -> tuple[Template, bytes]:
    """The event's template and its data record."""
    kind = event.kind
    if kind in ("created", "deleted"):
        values: tuple[int, ...] = (
            event.protocol,
            event.inside,
            event.inside_port,
            event.outside,
            event.outside_port,
        )
        nat_event = NAT44_BIB_CREATE if kind == "created" else NAT44_BIB_DELETE
        template = BIB
    elif kind in ("session-created", "session-deleted"):
        values = (
            event.protocol,
            event.inside,
            event.inside_port,
            event.outside,
            event.outside_port,
            event.remote,
            event.remote_port,
        )
        nat_event = NAT44_SESSION_CREATE if kind == "session-created" else NAT44_SESSION_DELETE
        template = SESSION
    elif kind == "quota":
        values, nat_event, template = (
            (MAX_ENTRIES_PER_USER, event.inside, event.value),
            QUOTA_EXCEEDED,
            QUOTA,
        )
    elif kind == "addresses-exhausted":
        values, nat_event, template = (
            (event.value, event.protocol),
            NAT_ADDRESSES_EXHAUSTED,
            ADDRESSES_EXHAUSTED,
        )
    elif kind == "ports-exhausted":
        values, nat_event, template = (
            (event.outside, event.protocol),
            NAT_PORTS_EXHAUSTED,
            PORTS_EXHAUSTED,
        )
    else:
        raise ValueError(f"no IPFIX template for a {kind!r} event")
    record = _STRUCTS[template.template_id].pack(event.time_ms, nat_event, instance, *values)
    return template, record


class Encoder:
    """Events in, IPFIX messages out, for one observation domain and NAT
    instance. `sequence` counts the data records sent (RFC 7011 sec. 3.1)."""

    def __init__(
        self,
        domain: int,
        instance: int,
        message_max: int = MESSAGE_MAX,
        template_refresh_s: float = TEMPLATE_REFRESH_S,
    ) -> None:
        self.domain = domain
        self.instance = instance
        self.message_max = message_max
        self.template_refresh_s = template_refresh_s
        self.sequence = 0
        self._pending: dict[int, list[bytes]] = {}  # template id -> records
        self._set_bytes = 0  # the pending data sets' length, headers included
        self._templates_at: float | None = None  # when last sent (seconds)

    @property
    def pending(self) -> int:
        return sum(len(records) for records in self._pending.values())

    def _templates_due(self, now_s: float) -> bool:
        at = self._templates_at
        return at is None or now_s - at >= self.template_refresh_s

    def _size(self, now_s: float, template_id: int, record: int) -> int:
        """The message's length if it went now with one more record of
        `record` bytes in template `template_id`'s set."""
        size = HEADER.size + (TEMPLATE_SET_BYTES if self._templates_due(now_s) else 0)
        new_set = 0 if template_id in self._pending else 4
        return size + self._set_bytes + new_set + record

    def add(self, event: NatEvent, now_s: float) -> bytes | None:
        """Queue the event's record; returns the message that had to go first
        to keep each within message_max, if one did."""
        template, record = _record(event, self.instance)
        full = None
        if self._pending and self._size(now_s, template.template_id, len(record)) > (
            self.message_max
        ):
            full = self.flush(now_s)
        records = self._pending.get(template.template_id)
        if records is None:
            records = self._pending[template.template_id] = []
            self._set_bytes += 4
        records.append(record)
        self._set_bytes += len(record)
        return full

    def flush(self, now_s: float) -> bytes | None:
        """The message of every queued record (templates first when due),
        or None when nothing is queued."""
        if not self._pending:
            return None
        body = b""
        if self._templates_due(now_s):
            body += _set(TEMPLATE_SET, _ENCODED_TEMPLATES)
            self._templates_at = now_s
        count = 0
        for template in TEMPLATES:
            records = self._pending.get(template.template_id)
            if records:
                body += _set(template.template_id, b"".join(records))
                count += len(records)
        self._pending.clear()
        self._set_bytes = 0
        header = HEADER.pack(
            IPFIX_VERSION, HEADER.size + len(body), int(now_s), self.sequence, self.domain
        )
        self.sequence = (self.sequence + count) & 0xFFFFFFFF
        return header + body


def _set(set_id: int, body: bytes) -> bytes:
    return struct.pack("!HH", set_id, 4 + len(body)) + body


@dataclass(frozen=True, slots=True)
class Message:
    """A decoded message: its header's fields and its records, each by
    element id (str) plus "template"."""

    export_s: int
    sequence: int
    domain: int
    records: list[dict[str, int]]


def parse_ipfix(data: bytes, templates: dict[int, list[tuple[int, int]]]) -> Message:
    """Decode one message as the encoders write them, learning the templates
    it carries into `templates` (a collector's state across messages);
    ValueError for what is not such a message or uses an unknown template.
    Both paths' tests read with it; tshark is the independent reader
    (controller/tests/test_ipfix_tshark.py)."""
    version, length, export_s, sequence, domain = HEADER.unpack_from(data)
    if version != IPFIX_VERSION or length != len(data):
        raise ValueError(f"not an IPFIX message (version {version}, length {length})")
    records: list[dict[str, int]] = []
    offset = HEADER.size
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
        if set_id not in templates:
            raise ValueError(f"data set {set_id} before its template")
        fields = templates[set_id]
        size = sum(width for _, width in fields)
        while offset + size <= end:
            record = {"template": set_id}
            for element, width in fields:
                record[str(element)] = int.from_bytes(data[offset : offset + width], "big")
                offset += width
            records.append(record)
        offset = end
    return Message(export_s, sequence, domain, records)
