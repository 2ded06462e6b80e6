"""What a mode is (`Mode`); modes/__init__.py chooses one, and builds it
with a context.ModeContext."""

from __future__ import annotations

from typing import Any, Protocol

from quicknat.config.model import Config
from quicknat.controller.punts import Punts
from quicknat.controller.recovery import HeldEntries
from quicknat.controller.status import SessionQuery
from quicknat.controller.writer import SwitchWriter
from quicknat.nat.session import FlowKey


class Mode(Protocol):
    """What differs between controller mode and offload mode."""

    @property
    def writer(self) -> SwitchWriter[Any]:
        """The one writer of the mode's sessions' entries."""

    @property
    def punts(self) -> Punts:
        """The packet-in handlers the mode chose."""

    def counter_names(self) -> tuple[str, ...]:
        """The mode's own counters, seeded at zero from start-up."""

    def start(self) -> None:
        """Its work beside the switch's stream begins (offload: the instances')."""

    async def stop(self) -> None:
        """... and ends."""

    def recover(self, held: HeldEntries) -> None:
        """After a (re)connection, before any write: the sessions the switch
        holds (none after a new pipeline). Every install state is void; the
        mode adopts the entries it accounts for, sweeps the others
        (writer.sweep), and queues what the switch should hold and does not."""

    def idle(self, key: FlowKey) -> None:
        """The switch reported the ageing entry of this key idle."""

    def pipeline_pushed(self) -> None:
        """The switch runs a program just pushed: its tables are new, so it
        holds nothing, learned or written, of before."""

    async def prepare(self, running: Config, new: Config, flush: bool) -> None:
        """A run-time change, before the switch gets its static entries:
        ReconfigureError (a ValueError) refuses it."""

    def apply(self, new: Config, removed: set[int], flush: bool) -> str:
        """A run-time change is made: the mode's part (with `flush`, the
        sessions of the `removed` rules go); what to add to the answer."""

    def session_count(self) -> int:
        """The sessions `session_rows` would list without a filter (O(1))."""

    async def session_rows(self, query: SessionQuery) -> list[dict[str, object]]:
        """`quicknat sessions`: the mode's sessions the query selects
        (offload: its instances'); ValueError when they cannot be had."""

    async def delete_sessions(self, query: SessionQuery) -> int:
        """`quicknat sessions delete|flush`: how many were deleted;
        ValueError when not every part that holds sessions answered."""

    async def stats_view(self) -> dict[str, object]:
        """What `quicknat stats` adds to the controller's own (offload: each
        instance's counters and their sum)."""

    def pools(self) -> list[dict[str, object]]:
        """Each pool's ports and their use, where the mode allocates them."""
