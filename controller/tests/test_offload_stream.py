"""The session event stream's lines (swpath's `subscribe sessions`) as
SessionEvents; the live format is checked against swpath itself by
swpath/tests/sp_slow_path.py."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from quicknat.addr import parse_ipv4
from quicknat.nat.allocator import Endpoint
from quicknat.offload.stream import parse_event, subscribe


def test_an_opened_line() -> None:
    e = parse_event(
        b'{"event": "opened", "id": 12, "worker": 1, "protocol": 6, "origin": "snat", '
        b'"rule": 3, "internal": "10.0.0.15:40000", "external": "203.0.113.1:40001", '
        b'"remote": "198.51.100.10:443", "tcp_state": "opening"}\n'
    )
    assert (e.kind, e.id, e.worker, e.protocol, e.origin, e.rule) == (
        "opened",
        12,
        1,
        6,
        "snat",
        3,
    )
    assert e.internal == Endpoint(parse_ipv4("10.0.0.15"), 40000)
    assert e.external == Endpoint(parse_ipv4("203.0.113.1"), 40001)
    assert e.remote == Endpoint(parse_ipv4("198.51.100.10"), 443)
    assert (e.tcp_state, e.reason, e.snapshot) == ("opening", None, False)


def test_closed_synced_and_lost() -> None:
    closed = parse_event(
        '{"event": "closed", "id": 4, "worker": 0, "protocol": 17, "origin": "dnat", '
        '"rule": 9, "internal": "10.0.0.2:53", "external": "203.0.113.9:53", '
        '"remote": "192.0.2.1:4000", "reason": "expired"}'
    )
    assert (closed.kind, closed.reason, closed.tcp_state) == ("closed", "expired", None)
    assert parse_event('{"event": "synced", "sessions": 17}').count == 17
    assert parse_event('{"event": "lost", "records": 3}').count == 3


@pytest.mark.parametrize("line", ['{"event": "hello"}', "{}", '{"answer": 1}'])
def test_other_lines_are_refused(line: str) -> None:
    with pytest.raises(ValueError, match="not a session event"):
        parse_event(line)


@pytest.mark.parametrize("address", ["10.0.0", "10.0.0.256", "ten.0.0.1", "10.0.0.1.2", ""])
def test_an_endpoint_that_is_not_a_dotted_quad_is_refused(address: str) -> None:
    line = (
        '{"event": "opened", "id": 1, "worker": 0, "protocol": 17, "origin": "snat", '
        f'"rule": 1, "internal": "{address}:53", "external": "203.0.113.1:53", '
        '"remote": "192.0.2.1:53"}'
    )
    with pytest.raises(ValueError, match="not a"):
        parse_event(line)


OPENED = (
    '{"event": "opened", "id": %d, "worker": 0, "protocol": 17, "origin": "snat", '
    '"rule": 1, "internal": "10.0.0.2:%d", "external": "203.0.113.1:5000", '
    '"remote": "192.0.2.1:53"}\n'
)


def test_subscribe_yields_whole_lines_however_the_socket_cuts_them(tmp_path: Path) -> None:
    """Lines cut across writes (and so across reads) come out whole, once,
    in order; an `error:` answer ends the subscription with its text."""
    stream = "".join(OPENED % (i, 1000 + i) for i in range(1, 301)).encode()
    cuts = [0, 1, 7, 150, 151, 4096, 9000, len(stream)]

    async def instance(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert await reader.readline() == b"subscribe sessions\n"
        for start, end in itertools.pairwise(cuts):
            writer.write(stream[start:end])
            await writer.drain()
            await asyncio.sleep(0.005)  # each piece its own read
        writer.close()

    async def refusing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.write(b"error: subscribe: only on the control socket\n")
        writer.close()

    async def scenario() -> tuple[list[int], int]:
        path = tmp_path / "sp0.sock"
        server = await asyncio.start_unix_server(instance, str(path))
        batches = [batch async for batch in subscribe(path)]
        server.close()
        refused = tmp_path / "sp1.sock"
        other = await asyncio.start_unix_server(refusing, str(refused))
        with pytest.raises(ConnectionError, match="only on the control socket"):
            async for _ in subscribe(refused):
                pass
        other.close()
        return [e.id for batch in batches for e in batch], len(batches)

    ids, batches = asyncio.run(scenario())
    assert ids == list(range(1, 301))
    assert 1 < batches <= len(cuts)
