"""The controller's two modes, chosen once at start-up (`select`), as DPDK's
l3fwd chooses its lookup method: a table of functions, not a test per call.

Controller mode (controller_mode.py): the NAT core decides every new flow
from the switch's packet-ins, the writer installs its sessions, the switch's
idle notifications expire them. Offload mode (offload_mode.py, a
configuration with [[slow_path]]s): slow-path instances decide, the switch
caches the sessions they announce. The service (service.py) keeps the
connection, arbitration and the sync, and asks its mode through `Mode`
(base.py) for everything that differs; both modes write through the one
writer (writer.py), against the target's capabilities (target.py).
"""

from __future__ import annotations

from quicknat.controller.context import ModeContext
from quicknat.controller.modes.base import Mode
from quicknat.controller.modes.controller_mode import ControllerMode
from quicknat.controller.modes.offload_mode import OffloadMode
from quicknat.controller.stats import COMMON
from quicknat.controller.writer import COUNTERS as WRITER_COUNTERS

__all__ = ["ControllerMode", "Mode", "ModeContext", "OffloadMode", "counter_names", "select"]


def select(context: ModeContext) -> Mode:
    """Offload mode when the configuration has slow-path instances, else
    controller mode (docs/offload.md)."""
    if context.config.slow_paths:
        return OffloadMode(context)
    return ControllerMode(context)


def counter_names(mode: Mode | None = None) -> list[str]:
    """Every counter the controller keeps in `mode` (None: in either mode),
    all present from start-up at zero: the service's and the packet-in
    handlers' (stats.COMMON), the writer's, and the mode's own."""
    own = mode.counter_names() if mode else (
        *ControllerMode.counter_names(), *OffloadMode.counter_names()
    )  # fmt: skip
    return list(dict.fromkeys([*COMMON, *WRITER_COUNTERS, *own]))
