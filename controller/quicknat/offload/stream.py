"""A slow-path instance's session event stream (swpath's `subscribe sessions`,
docs/swpath-commands.md): one JSON line per event, read as SessionEvents.

The stream starts with a snapshot (every open session as an "opened" event
with ``snapshot`` true) and a "synced" event, then carries "opened", "state"
(a TCP session's phase changed) and "closed" (``reason`` expired or deleted)
as they happen. "lost" says records were dropped (a worker's ring was full):
the subscriber must resubscribe for a fresh snapshot. A session may be seen
opened twice, or closed without having been seen open, around the snapshot;
both are to be taken as they are.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from quicknat.nat.allocator import Endpoint

KINDS = ("opened", "state", "closed", "synced", "lost")

READ_BYTES = 1 << 16  # about 900 events a read


def _endpoint(text: str) -> Endpoint:
    """An endpoint as swpath writes it, a.b.c.d:port. The stream is the manager's
    per-flow input (three endpoints a session): inet_aton is a tenth of
    ipaddress's strict parser's cost, and swpath writes only dotted quads
    (a malformed one is still an error: OSError -> ValueError)."""
    address, _, port = text.rpartition(":")
    try:
        packed = socket.inet_aton(address)
    except OSError:
        raise ValueError(f"not an address: {address!r}") from None
    if address.count(".") != 3:
        raise ValueError(f"not a dotted quad: {address!r}")
    return Endpoint(int.from_bytes(packed, "big"), int(port))


@dataclass(slots=True)
class SessionEvent:
    kind: str
    """One of KINDS."""
    id: int = 0
    """The session's id, as `quicknat sessions` lists it (unique per instance)."""
    worker: int = 0
    protocol: int = 0
    origin: str = ""
    """snat, inbound (opened from outside on a mapping) or dnat."""
    rule: int = 0
    internal: Endpoint | None = None
    external: Endpoint | None = None
    remote: Endpoint | None = None
    tcp_state: str | None = None
    """opening, established, closing or reset; None for UDP and ICMP."""
    reason: str | None = None
    """closed: expired or deleted."""
    snapshot: bool = False
    count: int = 0
    """synced: sessions in the snapshot; lost: records dropped."""
    run: int = 0
    """synced: the instance's process run; another value than the last
    subscription's means it restarted."""


def parse_event(line: str | bytes) -> SessionEvent:
    """One line of the stream; ValueError when it is not one."""
    data = json.loads(line)
    kind = data.get("event")
    if kind not in KINDS:
        raise ValueError(f"not a session event: {line!r}")
    if kind == "synced":
        return SessionEvent(kind, count=int(data["sessions"]), run=int(data.get("run", 0)))
    if kind == "lost":
        return SessionEvent(kind, count=int(data["records"]))
    return SessionEvent(
        kind,
        id=int(data["id"]),
        worker=int(data["worker"]),
        protocol=int(data["protocol"]),
        origin=str(data["origin"]),
        rule=int(data["rule"]),
        internal=_endpoint(data["internal"]),
        external=_endpoint(data["external"]),
        remote=_endpoint(data["remote"]),
        tcp_state=data.get("tcp_state"),
        reason=data.get("reason"),
        snapshot=bool(data.get("snapshot", False)),
    )


async def subscribe(path: Path) -> AsyncIterator[list[SessionEvent]]:
    """Connects to swpath's control socket and yields its session events, a
    batch per read (every whole line it brought: an await per line cost the
    manager more than the line's parse), until it closes the connection
    (swpath stopped, or this reader fell too far behind: resubscribe)."""
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        writer.write(b"subscribe sessions\n")
        await writer.drain()
        rest = b""
        while chunk := await reader.read(READ_BYTES):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()  # a line the next read completes
            events = []
            for line in lines:
                if line.startswith(b"error:"):
                    raise ConnectionError(f"{path}: {line.decode().strip()}")
                events.append(parse_event(line))
            yield events
    finally:
        writer.close()
