"""systemd's readiness protocol (sd_notify(3)) without libsystemd: one
datagram to $NOTIFY_SOCKET, a path or an abstract name ("@..."). The units in
controller/systemd/ run the controller as Type=notify: READY=1 once it is the
switch's primary controller with its pipeline and sessions in place, STATUS=
on every (re)connection, STOPPING=1 on the way out. Nothing happens when
systemd did not start the process."""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger(__name__)


def notify(state: str) -> bool:
    """Send `state` ("READY=1", "STATUS=...") to systemd; False when there is
    no systemd to tell or the message could not be sent."""
    path = os.environ.get("NOTIFY_SOCKET", "")
    if not path or path[0] not in "/@":
        return False
    address = "\0" + path[1:] if path[0] == "@" else path
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        try:
            sock.sendto(state.encode(), address)
        except OSError as exc:
            log.warning("NOTIFY_SOCKET %s: %s", path, exc.strerror or exc)
            return False
    return True
