"""What the controller's mode is built with: the service's side of the
switch (ModeContext), read by the mode, its writer (writer.py) and its
packet-in handlers (punts.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from finsy.proto import p4r

from quicknat.config.model import Config
from quicknat.controller.stats import Stats
from quicknat.controller.target import TargetCapabilities
from quicknat.p4rt.client import UpdateError
from quicknat.p4rt.p4info import P4Info
from quicknat.p4rt.wire import EncodedUpdate

Write = Callable[[list[EncodedUpdate]], Awaitable[list[UpdateError]]]
"""A P4Runtime Write of these updates on the current connection: the ones
that failed."""


@dataclass(frozen=True, slots=True)
class WriterOptions:
    """How the writer batches (the operator's choice; the target's limits
    are its capabilities)."""

    batch_max: int = 256
    """Most sessions one INSERT WriteRequest carries."""
    writes_in_flight: int = 4
    """Most INSERT writes out at once; beyond the first, only for full batches."""
    table_full_backoff_s: float = 1.0
    """After the switch reported its tables full, how long no new session is
    offered a place without a write (unless one is deleted first)."""


@dataclass(frozen=True, slots=True)
class ModeContext:
    """What a mode is built with: the service's side of the switch."""

    config: Config
    """The configuration at start-up (run-time changes come by `Mode.apply`)."""
    p4info: P4Info
    """The program's P4Info (entries are encoded against it)."""
    target: TargetCapabilities
    """The switch's capabilities (target.py)."""
    stats: Stats
    """The controller's counters, shared by the service, the writer and the mode."""
    write: Write
    """A P4Runtime Write on the current connection: the updates that failed."""
    packet_out: Callable[[bytes, Sequence[p4r.PacketMetadata]], None]
    """A packet-out on the current stream."""
    now: Callable[[], float]
    """The event loop's clock (time.monotonic)."""
    writer_options: WriterOptions
    """How the writer batches (--writes-in-flight and the batch size)."""
