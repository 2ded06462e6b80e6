#!/usr/bin/env python3
"""Our P4Runtime client against finsy's, side by side on one BMv2 (issue #20).

The controller talks to the switch through quicknat.p4rt.client
(P4RuntimeClient, on grpc.aio); finsy.Switch is the standard Python client.
This measures both on the same switch, in one run, rounds alternating
which goes first, on what the controller does with a switch:

- group commit: 4,000 nat_in2out entries written in batches of 200, then
  deleted (the write path's batches);
- one entry per Write, 300 times (a write on its own: latency);
- read back all 4,300 entries and decode them (a restart's reconciliation).

Each client writes the same prebuilt P4Runtime Updates, so what differs is
the client; "finsy (entities)" also builds finsy's P4TableEntry objects
per round, finsy's idiomatic use, to show what its encoder costs. Wall time
and this process's CPU (all threads, gRPC's included) per entry.
The switch is a process of its own on loopback, with no ports.

    make bench-p4rt-clients   (results: bench/results/p4rt_clients.json)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import finsy
from finsy.proto import p4r
from lab.bmv2 import switch_command
from lab.processes import start, stop, wait_for_tcp
from quicknat.controller.program import BMV2_JSON, P4INFO, Pipeline
from quicknat.p4rt.client import P4RuntimeClient
from quicknat.p4rt.entities import action_params, exact_fields, table_entry, update

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "p4rt_clients.json"
GRPC = "127.0.0.1:50093"
ENTRIES = 4000
BATCH = 200
SINGLES = 300
ELECTION = 50


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def key(i: int) -> dict[str, int]:
    return {
        "ipv4_src": 0x0A000000 + i,
        "ipv4_dst": 0xC6336401,
        "ip_proto": 17,
        "l4_sport": 1000,
        "l4_dport": 53,
    }


def ours_updates(pipeline: Pipeline, kind: int, first: int, count: int) -> list[p4r.Update]:
    return [
        update(
            kind,
            table_entry(
                pipeline.p4info,
                "nat_in2out",
                key(i),
                "rewrite_src",
                {"addr": 0xCB007101, "port": 2000 + i},
                idle_timeout_ns=300 * 10**9,
            ),
        )
        for i in range(first, first + count)
    ]


def finsy_entities(kind: str, first: int, count: int) -> list[Any]:
    """The same entries as finsy's P4TableEntry objects ("+" insert, "-" delete)."""
    entries = [
        finsy.P4TableEntry(
            "nat_in2out",
            match=finsy.P4TableMatch(
                ipv4_src=0x0A000000 + i,
                ipv4_dst=0xC6336401,
                ip_proto=17,
                l4_sport=1000,
                l4_dport=53,
            ),
            action=finsy.P4TableAction("rewrite_src", addr=0xCB007101, port=2000 + i),
            idle_timeout_ns=300 * 10**9,
        )
        for i in range(first, first + count)
    ]
    return [+e for e in entries] if kind == "+" else [-e for e in entries]


class Measure:
    """Wall and CPU seconds of one awaited step."""

    def __init__(self) -> None:
        self.results: dict[str, float] = {}

    async def __call__(self, name: str, step: Callable[[], Awaitable[None]], per: int) -> None:
        c0, t0 = cpu(), time.perf_counter()
        await step()
        self.results[f"{name}_wall_us"] = 1e6 * (time.perf_counter() - t0) / per
        self.results[f"{name}_cpu_us"] = 1e6 * (cpu() - c0) / per


async def round_ours(pipeline: Pipeline) -> dict[str, float]:
    client = P4RuntimeClient(GRPC, 1, election_id=ELECTION)
    await client.connect()
    measure = Measure()
    inserts = ours_updates(pipeline, p4r.Update.INSERT, 0, ENTRIES)
    deletes = ours_updates(pipeline, p4r.Update.DELETE, 0, ENTRIES)
    singles = ours_updates(pipeline, p4r.Update.INSERT, ENTRIES, SINGLES)
    table_id = pipeline.p4info.table("nat_in2out").id

    async def batches(updates: list[p4r.Update]) -> None:
        for i in range(0, len(updates), BATCH):
            assert not await client.write(updates[i : i + BATCH])

    async def one_by_one() -> None:
        for u in singles:
            assert not await client.write([u])

    async def read_back() -> None:
        # decoded as the controller's recovery decodes them, as finsy decodes
        # into its P4TableEntry objects
        got = await client.read([p4r.Entity(table_entry=p4r.TableEntry(table_id=table_id))])
        decoded = [
            (
                exact_fields(pipeline.p4info, e.table_entry),
                action_params(pipeline.p4info, e.table_entry),
            )
            for e in got
        ]
        assert len(decoded) == ENTRIES + SINGLES, len(decoded)

    try:
        await measure("insert_batched", lambda: batches(inserts), ENTRIES)
        await measure("insert_one", one_by_one, SINGLES)
        await measure("read", read_back, ENTRIES + SINGLES)
        await measure("delete_batched", lambda: batches(deletes), ENTRIES)
        assert not await client.write(ours_updates(pipeline, p4r.Update.DELETE, ENTRIES, SINGLES))
    finally:
        await client.close()
    return measure.results


async def round_finsy(pipeline: Pipeline, entities: bool) -> dict[str, float]:
    options = finsy.SwitchOptions(
        p4info=P4INFO, p4blob=BMV2_JSON, initial_election_id=ELECTION, device_id=1
    )
    measure = Measure()
    async with finsy.Switch("bench", GRPC, options) as sw:
        if entities:

            def inserts() -> list[Any]:
                return finsy_entities("+", 0, ENTRIES)

            def deletes() -> list[Any]:
                return finsy_entities("-", 0, ENTRIES)

            def singles() -> list[Any]:
                return finsy_entities("+", ENTRIES, SINGLES)

        else:
            prebuilt = (
                ours_updates(pipeline, p4r.Update.INSERT, 0, ENTRIES),
                ours_updates(pipeline, p4r.Update.DELETE, 0, ENTRIES),
                ours_updates(pipeline, p4r.Update.INSERT, ENTRIES, SINGLES),
            )

            def inserts() -> list[Any]:
                return prebuilt[0]

            def deletes() -> list[Any]:
                return prebuilt[1]

            def singles() -> list[Any]:
                return prebuilt[2]

        async def batches(make: Callable[[], list[Any]]) -> None:
            updates = make()  # entities: finsy encodes them in write()
            for i in range(0, len(updates), BATCH):
                await sw.write(updates[i : i + BATCH])

        async def one_by_one() -> None:
            for u in singles():
                await sw.write([u])

        async def read_back() -> None:
            got = [e async for e in sw.read(finsy.P4TableEntry("nat_in2out"))]
            assert len(got) == ENTRIES + SINGLES, len(got)

        await measure("insert_batched", lambda: batches(inserts), ENTRIES)
        await measure("insert_one", one_by_one, SINGLES)
        await measure("read", read_back, ENTRIES + SINGLES)
        await measure("delete_batched", lambda: batches(deletes), ENTRIES)
        await sw.write(ours_updates(pipeline, p4r.Update.DELETE, ENTRIES, SINGLES))
    return measure.results


CLIENTS: dict[str, Callable[[Pipeline], Awaitable[dict[str, float]]]] = {
    "quicknat": round_ours,
    "finsy": lambda p: round_finsy(p, entities=False),
    "finsy (entities)": lambda p: round_finsy(p, entities=True),
}


async def push(pipeline: Pipeline) -> None:
    client = P4RuntimeClient(GRPC, 1, election_id=ELECTION)
    await client.connect()
    await client.set_pipeline(pipeline.p4info.proto, pipeline.device_config, pipeline.cookie)
    await client.close()


def run(rounds: int) -> dict[str, Any]:
    pipeline = Pipeline.load()
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in CLIENTS}
    with tempfile.TemporaryDirectory(prefix="qn-p4rt-") as tmp:
        workdir = Path(tmp)
        switch = start(switch_command({}, GRPC, workdir), workdir / "switch.log")
        try:
            wait_for_tcp("127.0.0.1", int(GRPC.rsplit(":", 1)[1]), 30, switch)
            asyncio.run(push(pipeline))
            names = list(CLIENTS)
            for r in range(rounds):
                order = names[r % len(names) :] + names[: r % len(names)]
                for name in order:
                    samples[name].append(asyncio.run(CLIENTS[name](pipeline)))
                print(f"round {r + 1}/{rounds} done", flush=True)
        finally:
            stop(switch)
    medians = {
        name: {k: round(statistics.median(s[k] for s in runs), 1) for k in runs[0]}
        for name, runs in samples.items()
    }
    ours = medians["quicknat"]
    ratios = {
        name: {k: round(m[k] / ours[k], 2) for k in m if ours[k]}
        for name, m in medians.items()
        if name != "quicknat"
    }
    return {
        "command": "make bench-p4rt-clients",
        "switch": "BMv2 simple_switch_grpc 1.15.5, loopback gRPC, no ports",
        "finsy": finsy.__version__,
        "entries": ENTRIES,
        "batch": BATCH,
        "singles": SINGLES,
        "rounds": rounds,
        "unit": "microseconds per entry (wall and this process's CPU, median of rounds)",
        "median": medians,
        "ratio_to_quicknat": ratios,
    }


def table(result: dict[str, Any]) -> str:
    steps = [
        ("insert_batched", f"insert, batches of {BATCH}"),
        ("insert_one", "insert, one per Write"),
        ("read", "read back"),
        ("delete_batched", f"delete, batches of {BATCH}"),
    ]
    names = list(result["median"])
    lines = [
        "| step (us per entry) | " + " | ".join(f"{n} wall / CPU" for n in names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for k, label in steps:
        cells = [
            f"{result['median'][n][k + '_wall_us']:.0f} / {result['median'][n][k + '_cpu_us']:.0f}"
            for n in names
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    result = run(args.rounds)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print("ratios to quicknat:", json.dumps(result["ratio_to_quicknat"]))
    print(f"results: {RESULTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
