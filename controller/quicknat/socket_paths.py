"""Where each daemon's control socket is, so the CLI finds it without --socket.

One directory, /run/quicknat (the units' RuntimeDirectory), one file name per
daemon and instance: `controller-NAME.sock` and `swpath-NAME.sock` for the
units quicknat-controller@NAME and quicknat-swpath@NAME, `controller.sock` and
`swpath.sock` for a daemon started by hand without a socket option. The
daemon's kind is part of the name because both kinds of one NAME run side by
side (offload mode: the controller and its slow-path swpath) and used to
collide on `/run/quicknat/NAME.sock`; one directory rather than one per
daemon keeps a single RuntimeDirectory= (with RuntimeDirectoryPreserve=,
which swpath's state file needs across restarts) that the CLI and the
exporter search in one place.
"""

from __future__ import annotations

from pathlib import Path

RUN_DIR = Path("/run/quicknat")
DAEMONS = ("controller", "swpath")


def socket_path(daemon: str, name: str | None = None, run_dir: Path | None = None) -> Path:
    """The socket of `daemon` ("controller" or "swpath"), instance `name`
    (None: the daemon's default, started without a unit), in `run_dir`
    (default RUN_DIR)."""
    run_dir = run_dir or RUN_DIR
    if daemon not in DAEMONS:
        raise ValueError(f"{daemon!r}: not one of {', '.join(DAEMONS)}")
    if name is not None and (not name or "/" in name):
        raise ValueError(f"--name {name!r}: an instance name, as in quicknat-{daemon}@NAME")
    return run_dir / (f"{daemon}-{name}.sock" if name else f"{daemon}.sock")


def find_socket(daemon: str, name: str | None = None, run_dir: Path | None = None) -> Path:
    """The socket a CLI command talks to when no --socket is given: the named
    instance's; without a name, the daemon's default socket if it exists, else
    the one instance of that daemon running. Several running without a name
    to choose: ValueError naming them."""
    run_dir = run_dir or RUN_DIR
    if name is not None:
        return socket_path(daemon, name, run_dir)
    default = socket_path(daemon, None, run_dir)
    if default.exists():
        return default
    prefix = f"{daemon}-"
    names = sorted(p.name[len(prefix) : -len(".sock")] for p in run_dir.glob(f"{prefix}*.sock"))
    if len(names) == 1:
        return socket_path(daemon, names[0], run_dir)
    if names:
        raise ValueError(
            f"{len(names)} {daemon} instances in {run_dir} ({', '.join(names)}): "
            "choose one with --name NAME (or --socket PATH)"
        )
    return default  # nothing runs: the caller's "cannot reach" names this path
