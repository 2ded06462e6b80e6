"""Every bad invocation of the quicknat command, run as a user runs it
(`python -m quicknat ...` in a subprocess): no traceback, a message that names
the problem, and the exit status of its kind, 2 for what was given (options,
files, configuration, rule words), 1 for what failed at run time (sockets,
addresses). The cases that a connection would hide (`rule add` with a bad
rule) run with no daemon at all."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SWITCH = str(TESTS / "configs" / "switch.toml")  # a configuration the P4 path takes
MINIMAL = str(TESTS / "golden" / "good" / "minimal.toml")
BAD = str(TESTS / "golden" / "bad" / "every_section.toml")
NO_FILE = "/no/such/file.pem"
NO_SOCKET = "/no/such/quicknat.sock"
USAGE, RUNTIME = 2, 1

# (name, arguments, exit status, what stderr must say); {tmp} is a fresh
# directory, {pem} a PEM file there, {stale} a socket file nobody listens on,
# {chatty} a socket whose server answers something that is not JSON.
CASES = [
    ("tls-ca missing", ["controller", "--config", SWITCH, "--tls-ca", NO_FILE], USAGE,
     f"argument --tls-ca: {NO_FILE}: No such file or directory"),
    ("tls-ca not pem", ["controller", "--config", SWITCH, "--tls-ca", SWITCH], USAGE,
     "not a PEM file"),
    ("tls-cert without ca", ["controller", "--config", SWITCH, "--tls-cert", "{pem}",
     "--tls-key", "{pem}", "--socket", "{tmp}/c.sock"], USAGE,
     "--tls-cert and --tls-key need --tls-ca"),
    ("tls-cert without key", ["controller", "--config", SWITCH, "--tls-ca", "{pem}",
     "--tls-cert", "{pem}", "--socket", "{tmp}/c.sock"], USAGE,
     "--tls-cert and --tls-key go together"),
    ("p4info missing", ["controller", "--config", SWITCH, "--p4info", NO_FILE], USAGE,
     f"argument --p4info: {NO_FILE}: No such file or directory"),
    ("device config a directory", ["controller", "--config", SWITCH, "--device-config",
     "{tmp}"], USAGE, "argument --device-config/--bmv2-json: {tmp}: Is a directory"),
    ("controller config missing", ["controller", "--config", NO_FILE, "--socket",
     "{tmp}/c.sock"], USAGE, f"{NO_FILE}: cannot read: No such file or directory"),
    ("controller config invalid", ["controller", "--config", BAD, "--socket",
     "{tmp}/c.sock"], USAGE, "every_section.toml:7: interface 1: mtu 20"),
    ("socket directory missing", ["controller", "--config", SWITCH, "--socket",
     "{tmp}/nodir/c.sock"], USAGE, "argument --socket: {tmp}/nodir/c.sock: no directory"),
    ("socket in use", ["controller", "--config", SWITCH, "--socket", "{chatty}",
     "--grpc-addr", "127.0.0.1:1"], RUNTIME, "{chatty} is in use: another process answers"),
    ("socket path not a socket", ["controller", "--config", SWITCH, "--socket", "{pem}",
     "--grpc-addr", "127.0.0.1:1"], RUNTIME, "{pem} exists and is not a socket"),
    ("metrics address not ours", ["controller", "--config", SWITCH, "--socket",
     "{tmp}/c.sock", "--metrics-addr", "192.0.2.1:9"], RUNTIME,
     "('192.0.2.1', 9): cannot assign requested address"),
    ("punt rate not a number", ["controller", "--config", SWITCH, "--punt-rate", "x"], USAGE,
     "argument --punt-rate: invalid int value: 'x'"),
    ("unknown command", ["frobnicate"], USAGE, "argument command: invalid choice"),
    ("check missing file", ["check", NO_FILE], USAGE, "cannot read: No such file"),
    ("check a directory", ["check", "{tmp}"], USAGE, "cannot read: Is a directory"),
    ("check invalid", ["check", BAD], USAGE, "every_section.toml:52: icmp: rate 0"),
    ("lookup bad address", ["lookup", MINIMAL, "--src", "10.0.0", "--dst", "192.0.2.1"],
     USAGE, "Expected 4 octets"),
    ("lookup bad port", ["lookup", MINIMAL, "--src", "10.0.0.1", "--dst", "192.0.2.1",
     "--dport", "70000"], USAGE, "argument --dport: '70000': must be a port number"),
    ("swpath-commands unknown instance", ["swpath-commands", MINIMAL, "--slow-path", "nope"],
     USAGE, "nope"),
    ("sessions no socket", ["sessions", "--socket", NO_SOCKET], RUNTIME,
     f"cannot reach {NO_SOCKET}: No such file or directory"),
    ("sessions stale socket", ["sessions", "--socket", "{stale}"], RUNTIME,
     "Connection refused"),
    ("stats no socket", ["stats", "--json", "--socket", NO_SOCKET], RUNTIME, "cannot reach"),
    ("stats not our socket", ["stats", "--socket", "{chatty}"], RUNTIME,
     "not a quicknat control socket"),
    ("stats bad instance name", ["stats", "--name", "../x"], USAGE,
     "--name '../x': an instance name"),
    ("stats named instance not running", ["stats", "--swpath", "--name", "nope"], RUNTIME,
     "cannot reach /run/quicknat/swpath-nope.sock"),
    ("sessions bad filter", ["sessions", "--src", "10.0.0", "--socket", NO_SOCKET], USAGE,
     "argument --src"),
    ("sessions delete all", ["sessions", "delete", "--socket", NO_SOCKET], USAGE,
     "delete needs a filter"),
    ("rules no socket", ["rules", "--socket", NO_SOCKET], RUNTIME, "cannot reach"),
    ("rule add bad prefix", ["rule", "add", "id", "1", "type", "snat", "prefix",
     "10.0.0.0/33", "pool", "p", "--socket", NO_SOCKET], USAGE,
     "rule add: prefix 10.0.0.0/33: prefix length must be 0..32"),
    ("rule add bad word", ["rule", "add", "id", "1", "kind", "snat", "--socket", NO_SOCKET],
     USAGE, "rule add: unknown word 'kind'"),
    ("rule add no target", ["rule", "add", "id", "1", "type", "snat", "prefix",
     "10.0.0.0/24", "--socket", NO_SOCKET], USAGE,
     "an SNAT rule needs exactly one of 'pool' or 'to'"),
    ("rule add valid, no daemon", ["rule", "add", "id", "1", "type", "snat", "prefix",
     "10.0.0.0/24", "pool", "p", "--socket", NO_SOCKET], RUNTIME, f"cannot reach {NO_SOCKET}"),
    ("rule del not a number", ["rule", "del", "x", "--socket", NO_SOCKET], USAGE,
     "rule del: expected 'rule del N [flush]'"),
    ("rule unknown verb", ["rule", "frob", "--socket", NO_SOCKET], USAGE,
     "rule: expected 'rule add"),
    ("reload config missing", ["reload", "--config", NO_FILE, "--socket", NO_SOCKET], USAGE,
     f"argument --config: {NO_FILE}: No such file or directory"),
    ("reload config invalid", ["reload", "--config", BAD, "--socket", NO_SOCKET], USAGE,
     "every_section.toml:46: limits"),
    ("reload no socket", ["reload", "--socket", NO_SOCKET], RUNTIME, "cannot reach"),
    ("exporter address not ours", ["exporter", "--listen", "192.0.2.1:9"], RUNTIME,
     "--listen 192.0.2.1:9: error while attempting to bind"),
    ("exporter bad address", ["exporter", "--listen", "nowhere"], USAGE,
     "argument --listen"),
]  # fmt: skip


@pytest.fixture
def places(tmp_path: Path) -> Iterator[dict[str, str]]:
    pem = tmp_path / "ca.pem"
    pem.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(stale))  # bound, never listening: connect() is refused
    chatty = tmp_path / "chatty.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(chatty))
    server.listen()

    def answer() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError):  # a probe closes at once
                conn.recv(1024)
                conn.sendall(b"hello, not JSON\n")

    threading.Thread(target=answer, daemon=True).start()
    yield {"tmp": str(tmp_path), "pem": str(pem), "stale": str(stale), "chatty": str(chatty)}
    server.close()


@pytest.mark.parametrize(("name", "args", "status", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_invocation_is_one_clear_message(
    name: str, args: list[str], status: int, message: str, places: dict[str, str]
) -> None:
    argv = [a.format(**places) for a in args]
    proc = subprocess.run(
        [sys.executable, "-m", "quicknat", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert message.format(**places) in proc.stderr, proc.stderr
    assert proc.returncode == status, proc.stderr
    first = proc.stderr.splitlines()[0]
    # one line says it (a configuration's lines say one problem each; an
    # unreachable socket's second line is a hint), never argparse's usage
    assert not first.startswith("usage:"), proc.stderr
    assert proc.stdout == ""


SWPATH = TESTS.parents[1] / "swpath" / "build" / "app" / "quicknat-swpath"
needs_swpath = pytest.mark.skipif(not SWPATH.exists(), reason="make build makes quicknat-swpath")


@needs_swpath
def test_swpath_and_the_cli_have_one_version() -> None:
    import quicknat

    for argv in ([str(SWPATH), "--version"], [sys.executable, "-m", "quicknat", "--version"]):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True)
        assert proc.stdout.split()[1] == quicknat.__version__, argv


@needs_swpath
def test_swpath_reports_every_error_of_its_command_file(tmp_path: Path) -> None:
    """Before the EAL starts (no hugepages, no ports): every problem, each
    with its line, exit 2, no start."""
    commands = tmp_path / "nat.cmds"
    commands.write_text(
        "interface in0 zone inside port 0\n"
        "interface out0 zone outside port 1 mtu 20\n"
        "rule add id 1 type snat prefix 10.0.0.0/33 pool public\n"
        "stats\n"
    )
    proc = subprocess.run(
        [str(SWPATH), "--", "--commands", str(commands), "--control", "none"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert [line.split(":")[2] for line in lines] == ["2", "3", "4"], proc.stderr
    assert "prefix length must be 0..32" in lines[1]
    assert "'stats' is a run-time command" in lines[2]


@needs_swpath
def test_swpath_control_socket_needs_its_directory(tmp_path: Path) -> None:
    commands = tmp_path / "nat.cmds"
    commands.write_text("interface in0 zone inside port 0\ninterface out0 zone outside port 1\n")
    control = tmp_path / "nodir" / "swpath.sock"
    proc = subprocess.run(
        [str(SWPATH), "--", "--commands", str(commands), "--control", str(control)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        f"quicknat-swpath: --control {control}: no directory {control.parent} "
        "(create it, or choose another path)\n"
    )
    assert not control.parent.exists()
