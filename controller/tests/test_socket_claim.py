"""Status sockets: a live one is never taken over, a stale one is; and the CLI
finds a daemon's socket without --socket (quicknat/socket_paths.py)."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
from quicknat.cli import main
from quicknat.controller.status import (
    SessionQuery,
    SocketInUse,
    line_command,
    query,
    serve_status,
)
from quicknat.socket_paths import find_socket, socket_path

CONFIGS = Path(__file__).resolve().parent / "configs"


class Source:
    """A status source that answers `stats` with its own name."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def session_rows(self, query: SessionQuery) -> list[dict[str, object]]:
        return []

    async def delete_sessions(self, query: SessionQuery) -> int:
        return 0

    async def stats_answer(self) -> dict[str, object]:
        return {"who": self.name}

    def counters_answer(self) -> dict[str, object]:
        return {"who": self.name}

    async def line_command(self, line: str) -> list[str]:
        return []

    async def routes_answer(self) -> list[dict[str, object]] | dict[str, object]:
        return []


class Failing(Source):
    """A source whose answers fail as nobody planned: the switch gone in the
    middle of a reload's write, a read refused."""

    async def stats_answer(self) -> dict[str, object]:
        raise RuntimeError("the switch went away")

    async def line_command(self, line: str) -> list[str]:
        raise ConnectionResetError("stream reset")


def test_a_failure_is_answered_and_the_socket_serves_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every command gets its reason back, in its form (a JSON error, an
    `error:` line the CLI prints), the trace goes to the log, and the next
    command is served."""
    path = tmp_path / "controller-edge.sock"

    async def run() -> None:
        server = await serve_status(path, Failing("edge"))
        answer = await asyncio.to_thread(query, path, "stats")
        assert answer == {"error": "stats: RuntimeError: the switch went away"}
        with pytest.raises(ValueError, match=r"^reload: ConnectionResetError: stream reset$"):
            await asyncio.to_thread(line_command, path, "reload")
        assert await asyncio.to_thread(query, path, "counters") == {"who": "edge"}
        server.close()
        await server.wait_closed()

    asyncio.run(run())
    assert [r.getMessage() for r in caplog.records] == [
        "control socket: 'stats' failed",
        "control socket: 'reload' failed",
    ]


def stale_socket(path: Path) -> None:
    """A socket file whose process is gone: bound, never listening, closed."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))


def test_a_live_socket_is_refused_and_keeps_serving(tmp_path: Path) -> None:
    path = tmp_path / "controller-edge.sock"

    async def run() -> None:
        first = await serve_status(path, Source("first"))
        with pytest.raises(SocketInUse, match="is in use: another process answers"):
            await serve_status(path, Source("second"))
        answer = await asyncio.to_thread(query, path, "stats")
        assert answer == {"who": "first"}
        first.close()
        await first.wait_closed()

    asyncio.run(run())


def test_a_stale_socket_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "controller-edge.sock"
    stale_socket(path)
    assert path.is_socket()

    async def run() -> None:
        server = await serve_status(path, Source("new"))
        assert await asyncio.to_thread(query, path, "stats") == {"who": "new"}
        server.close()
        await server.wait_closed()

    asyncio.run(run())


def test_a_file_that_is_no_socket_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "controller.sock"
    path.write_text("not a socket")

    async def run() -> None:
        with pytest.raises(SocketInUse, match="is not a socket"):
            await serve_status(path, Source("x"))

    asyncio.run(run())
    assert path.read_text() == "not a socket"


def test_the_controller_command_says_its_socket_is_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second controller exits 1 with a message; the first is untouched."""
    path = tmp_path / "controller-edge.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as first:
        first.bind(str(path))
        first.listen()
        args = ["controller", "--config", str(CONFIGS / "switch.toml")]
        code = main([*args, "--socket", str(path), "--grpc-addr", "127.0.0.1:1"])
        assert code == 1
        err = capsys.readouterr().err
        assert f"quicknat controller: {path} is in use" in err and "Traceback" not in err
        assert path.is_socket()  # not removed on the way out


def test_find_socket_by_name_default_or_the_only_instance(tmp_path: Path) -> None:
    assert find_socket("controller", "edge", tmp_path) == tmp_path / "controller-edge.sock"
    assert find_socket("swpath", "edge", tmp_path) == tmp_path / "swpath-edge.sock"
    # nothing runs: the default path (the caller says it cannot reach it)
    assert find_socket("controller", None, tmp_path) == tmp_path / "controller.sock"
    stale_socket(tmp_path / "swpath-edge.sock")
    assert find_socket("swpath", None, tmp_path) == tmp_path / "swpath-edge.sock"
    assert find_socket("controller", None, tmp_path) == tmp_path / "controller.sock"
    stale_socket(tmp_path / "swpath-core.sock")
    with pytest.raises(ValueError, match=r"2 swpath instances .* \(core, edge\): choose one"):
        find_socket("swpath", None, tmp_path)
    stale_socket(tmp_path / "swpath.sock")  # started by hand, without a unit
    assert find_socket("swpath", None, tmp_path) == tmp_path / "swpath.sock"
    assert socket_path("controller") == Path("/run/quicknat/controller.sock")
    with pytest.raises(ValueError, match="an instance name"):
        socket_path("swpath", "../x")


def test_the_cli_asks_the_named_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`quicknat stats --swpath --name edge` reaches swpath-edge.sock, with
    no --socket, as the unit quicknat-swpath@edge serves it."""
    monkeypatch.setattr("quicknat.socket_paths.RUN_DIR", tmp_path)
    path = tmp_path / "swpath-edge.sock"

    async def run() -> None:
        server = await serve_status(path, Source("swpath edge"))
        code = await asyncio.to_thread(main, ["stats", "--json", "--swpath", "--name", "edge"])
        assert code == 0
        code = await asyncio.to_thread(main, ["stats", "--json"])  # no swpath: the controller
        assert code == 1
        server.close()
        await server.wait_closed()

    asyncio.run(run())
    out, err = capsys.readouterr()
    assert json.loads(out) == {"who": "swpath edge"}
    assert f"cannot reach {tmp_path / 'controller.sock'}" in err
