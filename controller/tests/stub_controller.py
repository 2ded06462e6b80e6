"""A Controller (service.py) whose switch is a stub: it records writes and
packet-outs and feeds packet-ins and idle notifications, for the races and
the per-target punts that need a switch's answers held or given at will.
The same through real switches is PTF's."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import configs
from finsy.proto import p4r
from quicknat.config import parse_config
from quicknat.controller.program import Pipeline
from quicknat.controller.service import Controller, ControllerOptions
from quicknat.p4.constants import PuntReason
from quicknat.p4rt.entities import packet_metadata
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

CONFIG = configs.text("switch", "snat_pool_one_port")
INSERT, DELETE = p4r.Update.INSERT, p4r.Update.DELETE


class StubSwitch:
    """Stands in for P4RuntimeClient: records writes and packet-outs; while
    `hold` is set, a write waits for it to be cleared."""

    def __init__(self) -> None:
        self.messages: asyncio.Queue[p4r.StreamMessageResponse] = asyncio.Queue()
        self.stream_closed = asyncio.Event()
        self.dropped = 0
        self.writes: list[list[p4r.Update]] = []
        self.injected: list[bytes] = []
        self.sent_metadata: list[Sequence[p4r.PacketMetadata]] = []
        self.hold: asyncio.Event | None = None

    async def write(self, updates: Sequence[p4r.Update | bytes]) -> list[object]:
        self.writes.append([decoded(u) for u in updates])
        while self.hold is not None:
            await self.hold.wait()
        return []

    def packet_out(self, payload: bytes, metadata: Sequence[p4r.PacketMetadata]) -> None:
        self.injected.append(payload)
        self.sent_metadata.append(metadata)


def decoded(update: p4r.Update | bytes) -> p4r.Update:
    """An Update as the switch would parse it (the session entries come encoded)."""
    return p4r.Update.FromString(update) if isinstance(update, bytes) else update


def frame(src: str, l4: UDP | TCP | None = None) -> bytes:
    """A packet from an inside host (UDP unless l4 says), as the switch punts it."""
    return bytes(
        Ether(src="02:00:00:00:01:10", dst="02:00:00:00:00:01")
        / IP(src=src, dst="198.51.100.9")
        / (l4 if l4 is not None else UDP(sport=5000, dport=53))
    )


class Run:
    def __init__(self, target: str = "bmv2", extra: str = "") -> None:
        """`extra`: TOML added to CONFIG."""
        self.pipeline = Pipeline.of_target(target)
        self.controller = Controller(
            parse_config(CONFIG + extra), ControllerOptions(), self.pipeline
        )
        self.switch = StubSwitch()
        self.controller.client = self.switch  # type: ignore[assignment]
        self.stop = asyncio.Event()
        self.serving: asyncio.Future[None] | None = None
        self.frame = frame("10.0.0.10")

    def packet_in(
        self, reason: PuntReason = PuntReason.NEW_FLOW, payload: bytes = b"", port: int = 1
    ) -> None:
        meta = packet_metadata(
            self.pipeline.p4info,
            "packet_in",
            {"ingress_port": port, "reason": reason, "mtu": 0},
        )
        packet = p4r.PacketIn(payload=payload or self.frame, metadata=meta)
        self.switch.messages.put_nowait(p4r.StreamMessageResponse(packet=packet))

    def idle_timeout(self, entry: p4r.TableEntry) -> None:
        note = p4r.IdleTimeoutNotification(table_entry=[entry])
        self.switch.messages.put_nowait(p4r.StreamMessageResponse(idle_timeout_notification=note))

    async def settle(self) -> None:
        for _ in range(20):
            await asyncio.sleep(0)

    def counters(self) -> dict[str, int]:
        return self.controller.stats.as_dict()

    async def first_flow(self) -> list[p4r.Update]:
        """Start the miss loop (as after a sync: the writer online) and let
        one flow in; its install write."""
        self.controller.mode.writer.online()
        self.serving = asyncio.ensure_future(self.controller._serve(self.stop))
        self.packet_in()
        await self.settle()
        (install,) = self.switch.writes
        assert kinds(install) == [INSERT, INSERT] and len(self.switch.injected) == 1
        return install

    async def close(self) -> None:
        assert self.serving is not None
        self.stop.set()
        await self.serving


def kinds(updates: list[p4r.Update]) -> list[int]:
    return [u.type for u in updates]
