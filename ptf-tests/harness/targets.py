"""The data paths under test, as PTF tests see them.

A test asks its target to start the NAT (the controller for BMv2, the swpath
process for DPDK), to list sessions and counters, and to restart. The packet
scenarios are written once against this interface.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import grpc
from finsy.proto import p4r, p4r_grpc
from lab.processes import start, stop
from quicknat.controller.program import DropReason, Pipeline
from quicknat.controller.status import query

REPO = Path(__file__).resolve().parents[2]
QUICKNAT = REPO / ".venv" / "bin" / "quicknat"


class Target:
    name = "target"

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self.config = Path(params["config"])
        self.workdir = Path(params["workdir"])
        self.socket = self.workdir / f"{self.name}.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    def start_nat(self, reset: bool = True) -> None:
        raise NotImplementedError

    def stop_nat(self) -> None:
        stop(self.proc)
        self.proc = None

    def sessions(self) -> list[dict[str, Any]]:
        answer = query(self.socket, "sessions")
        assert isinstance(answer, list)
        return answer

    def stats(self) -> dict[str, Any]:
        answer = query(self.socket, "stats")
        assert isinstance(answer, dict)
        return answer

    def counter(self, name: str) -> int:
        return int(self.stats()["counters"].get(name, 0))

    def drops(self) -> dict[str, int]:
        """Data-plane drops by reason (names as DropReason, lower case)."""
        raise NotImplementedError

    def wait_until(self, what: str, predicate: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.1)
        raise AssertionError(f"{self.name}: {what} did not happen within {timeout} s")


class Bmv2Target(Target):
    name = "bmv2"

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__(params)
        self.grpc_addr = params["grpc_addr"]
        self.pipeline = Pipeline.load()

    def start_nat(self, reset: bool = True) -> None:
        args = [
            str(QUICKNAT),
            "controller",
            "--config",
            str(self.config),
            "--grpc-addr",
            self.grpc_addr,
            "--socket",
            str(self.socket),
            "-v",
        ]
        if reset:
            args.append("--reset")
        self.socket.unlink(missing_ok=True)
        self.proc = start(args, self.workdir / "controller.log")
        self.wait_until("controller connected", self._connected, 30)

    def _connected(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(
                f"controller exited with {self.proc.returncode}; "
                f"see {self.workdir / 'controller.log'}"
            )
        try:
            return bool(self.stats()["connected"])
        except OSError:
            return False

    def drops(self) -> dict[str, int]:
        counter_id = self.pipeline.p4info.object_id("drop_counter")
        entities = asyncio.run(
            _read(self.grpc_addr, p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=counter_id)))
        )
        result = {}
        for entity in entities:
            entry = entity.counter_entry
            try:
                name = DropReason(entry.index.index).name.lower()
            except ValueError:
                continue
            result[name] = entry.data.packet_count
        return result


async def _read(address: str, entity: p4r.Entity) -> list[p4r.Entity]:
    # Reads need no arbitration: a second, read-only client next to the controller.
    async with grpc.aio.insecure_channel(address) as channel:
        stub = p4r_grpc.P4RuntimeStub(channel)
        result: list[p4r.Entity] = []
        async for reply in stub.Read(p4r.ReadRequest(device_id=1, entities=[entity])):
            result.extend(reply.entities)
        return result


TARGETS: dict[str, type[Target]] = {"bmv2": Bmv2Target}
