"""A DPDK process's telemetry socket, in its v2 protocol as DPDK's own
usertools/dpdk-telemetry.py speaks it: the process sends a hello with its
details (the longest reply it will send among them) on connect, then one JSON
reply per command. quicknat-swx answers `/quicknat_swx/ports` and
`/quicknat_swx/tables` there (docs/p4-targets.md "Telemetry")."""

from __future__ import annotations

import json
import socket
from pathlib import Path

#: DPDK's runtime directories, one per EAL --file-prefix (as root)
RUNTIME = Path("/var/run/dpdk")


def socket_path(prefix: str) -> Path:
    """The telemetry socket of the DPDK process of EAL --file-prefix `prefix`."""
    return RUNTIME / prefix / "dpdk_telemetry.v2"


def query(prefix: str, command: str, timeout: float = 5.0) -> object:
    """`command`'s reply (JSON) from the process of `prefix`; OSError when
    there is no such process, ValueError when what answers is not DPDK's."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(timeout)
        s.connect(str(socket_path(prefix)))
        hello = json.loads(s.recv(1024))
        if not isinstance(hello, dict) or not isinstance(hello.get("max_output_len"), int):
            raise ValueError(f"{socket_path(prefix)}: not DPDK's telemetry hello: {hello!r}")
        s.send(command.encode())
        reply = json.loads(s.recv(hello["max_output_len"]))
        if not isinstance(reply, dict) or command not in reply:
            raise ValueError(f"{socket_path(prefix)}: no reply to {command}: {reply!r}")
        return reply[command]
