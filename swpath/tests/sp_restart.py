#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Live tests of swpath restarts that keep established flows (--state,
swpath/src/persist/session_store.h): sp_live's set-up (two veth pairs, af_packet, two
workers with software RSS, scapy on the far ends), one process replaced by
another with the same command line.

- kill -9, then a restart: every session is taken over by the worker that
  owns it; replies to the old external endpoints come back with no packet
  from inside first; the inside's next packets keep their endpoints; new
  hosts, until the pool runs dry, never get an adopted port; no mapping is
  logged created twice.
- SIGTERM, then a restart: the sessions keep their age and idle time, no
  mapping is logged deleted (it did not end), the log says it stopped cleanly.
- one worker, then two: sessions move to the worker that owns them now where
  it owns their port too (else discarded, counted, logged), keep their ids,
  and `session` commands reach them there.
- a second process on a state file in use refuses to start, and says why.
- a file that is not a state file: a warning, and a start with no sessions.

Run as root: sp_restart.py --app PATH/quicknat-swpath. Ends with
"N passed, M failed" (skipped without root or veth support).
"""

from __future__ import annotations

import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from live_frame import Tally, live_main, parse_args, run_each
from quicknat.controller.status import query
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw
from sp_live import (
    COMMANDS,
    HOSTS,
    IN_PEER,
    MAC_GW,
    MAC_IN,
    MAC_OUT,
    OUT_PEER,
    Nat,
    eq,
    exchange,
    host_mac,
    make_links,
    remove_links,
)

# 16 ports on one address, so that new hosts can run the pool dry
POOL_PORTS = (20000, 20015)
CMDS = COMMANDS.replace(
    "pool public ports 1024-65535 addresses 203.0.113.0/29",
    f"pool public ports {POOL_PORTS[0]}-{POOL_PORTS[1]} addresses 203.0.113.1/32",
)
REMOTE = "8.8.8.8"
Endpoint = tuple[str, int]


def outbound(hosts: list[str], sport: Callable[[int], int]) -> dict[str, Endpoint]:
    """One UDP datagram from each host (source port sport(i)) to REMOTE: the
    external endpoint each one left with."""
    out = exchange(
        IN_PEER,
        [
            Ether(src=host_mac(h), dst=MAC_IN)
            / IP(src=h, dst=REMOTE)
            / UDP(sport=sport(i), dport=53)
            / Raw(h.encode())
            for i, h in enumerate(hosts)
        ],
        OUT_PEER,
        len(hosts),
    )
    return {
        bytes(p[UDP].payload).decode(): (p[IP].src, p[UDP].sport)
        for p in out
        if UDP in p and p[Ether].src == MAC_OUT
    }


def replies(mapped: dict[str, Endpoint]) -> list[Packet]:
    """A reply from REMOTE to each external endpoint: what reached inside."""
    back = exchange(
        OUT_PEER,
        [
            Ether(src=MAC_GW, dst=MAC_OUT)
            / IP(src=REMOTE, dst=ext)
            / UDP(sport=53, dport=port)
            / Raw(h.encode())
            for h, (ext, port) in mapped.items()
        ],
        IN_PEER,
        len(mapped),
    )
    return [p for p in back if UDP in p and p[Ether].src == MAC_IN]


def assert_replies_reach(mapped: dict[str, Endpoint], sport: Callable[[int], int]) -> None:
    got = {bytes(p[UDP].payload).decode(): (p[IP].dst, p[UDP].dport) for p in replies(mapped)}
    want = {h: (h, sport(HOSTS.index(h))) for h in mapped}
    eq(got, want, "replies to the old external endpoints")


def counters(nat: Nat) -> dict[str, int]:
    answer: Any = query(nat.sock, "stats")
    return answer["counters"]  # type: ignore[no-any-return]


def sessions(nat: Nat) -> list[dict[str, Any]]:
    rows = query(nat.sock, "sessions")
    assert isinstance(rows, list)
    return rows


def event_lines(nat: Nat, word: str) -> list[str]:
    lines = nat.events.read_text().splitlines() if nat.events.exists() else []
    return [line for line in lines if f" {word} " in f" {line} "]


@contextmanager
def processes() -> Iterator[list[Nat]]:
    """The processes a case starts, every one stopped on the way out."""
    started: list[Nat] = []
    try:
        yield started
    finally:
        for nat in started:
            nat.stop()


def sport_of(i: int) -> int:
    return 6000 + 2 * i


def start_with_flows(
    app: str, tmp: Path, state: Path, hosts: list[str], started: list[Nat]
) -> tuple[Nat, dict[str, Endpoint]]:
    """A process on `state` and a UDP flow from each host through it: the
    process and the external endpoint of each."""
    nat = Nat(app, tmp, CMDS, extra=("--state", str(state)))
    started.append(nat)
    mapped = outbound(hosts, sport_of)
    eq(sorted(mapped), sorted(hosts), "translated before the restart")
    return nat, mapped


def case_crash_keeps_flows(app: str, tmp: Path) -> None:
    state = tmp / "crash.state"
    adopted = HOSTS[:4]
    with processes() as started:
        first, mapped = start_with_flows(app, tmp, state, adopted, started)
        deadline = time.time() + 10
        while len(event_lines(first, "created")) < len(adopted):
            assert time.time() < deadline, "the mappings were not logged"
            time.sleep(0.05)
        first.kill()

        second = Nat(app, tmp, CMDS, extra=("--state", str(state)))
        started.append(second)
        c = counters(second)
        eq((c["sessions_adopted"], c["sessions_discarded"]), (len(adopted), 0), "adopted")
        # the outside first: no packet from inside has re-created anything
        assert_replies_reach(mapped, sport_of)
        eq(counters(second)["sessions_created"], 0, "sessions opened anew")
        # the inside keeps its endpoints
        eq(outbound(adopted, sport_of), mapped, "the same external endpoints")
        # new hosts until the pool is dry: never an adopted port
        fresh = outbound(HOSTS[4:28], lambda i: 7000 + i)
        taken = set(mapped.values())
        clash = {h: ext for h, ext in fresh.items() if ext in taken}
        eq(clash, {}, "adopted ports handed out again")
        assert len(set(fresh.values())) == len(fresh), "one port handed out twice"
        assert len(fresh) <= POOL_PORTS[1] - POOL_PORTS[0] + 1 - len(adopted), len(fresh)
        assert counters(second)["drop_pool_exhausted"] > 0, "the pool did not run dry"
        second.stop()
        # the adopted mappings were logged once, by the first process
        eq(len(event_lines(second, "created")), len(adopted) + len(fresh), "created lines")
        log = second.log()
        assert f"took over {len(adopted)} of {len(adopted)} sessions" in log, log
        assert "did not stop cleanly" in log, log


def case_clean_stop_keeps_age(app: str, tmp: Path) -> None:
    state = tmp / "clean.state"
    hosts = HOSTS[:2]
    with processes() as started:
        first, mapped = start_with_flows(app, tmp, state, hosts, started)
        time.sleep(2)
        deleted = len(event_lines(first, "deleted"))
        eq(first.stop(), 0, "exit status")
        eq(len(event_lines(first, "deleted")), deleted, "mappings logged ended at exit")

        second = Nat(app, tmp, CMDS, extra=("--state", str(state)))
        started.append(second)
        rows = sessions(second)
        eq(len(rows), len(hosts), "sessions")
        for row in rows:
            assert row["age_s"] >= 2.0, row
            assert row["idle_s"] >= 2.0, row  # a clean stop stored last_seen
        assert_replies_reach(mapped, sport_of)
        second.stop()
        log = second.log()
        assert f"took over {len(hosts)} of {len(hosts)} sessions" in log, log
        assert "stopped cleanly" in log, log


def case_version_1_file_keeps_flows(app: str, tmp: Path) -> None:
    """A state file of the layout before the port holds (version 1: the
    same header and session records, no holds after them) is still read:
    an upgrade across that change keeps the flows. Made here from this
    version's own file, cut back to version 1's size and so marked."""
    state = tmp / "v1.state"
    hosts = HOSTS[:2]
    with processes() as started:
        first, mapped = start_with_flows(app, tmp, state, hosts, started)
        eq(first.stop(), 0, "exit status")
        data = state.read_bytes()
        version, record, workers, per_worker = struct.unpack_from("<4I", data, 8)
        eq((version, record), (2, 64), "this version's layout")
        sessions_end = 4096 + workers * per_worker * record
        eq(len(data), sessions_end + workers * (64 + 16 * per_worker), "sessions, then holds")
        state.write_bytes(data[:8] + struct.pack("<I", 1) + data[12:sessions_end])

        second = Nat(app, tmp, CMDS, extra=("--state", str(state)))
        started.append(second)
        eq(counters(second)["sessions_adopted"], len(hosts), "adopted from version 1")
        assert_replies_reach(mapped, sport_of)
        second.stop()
        log = second.log()
        assert f"took over {len(hosts)} of {len(hosts)} sessions" in log, log


def case_more_workers_after_restart(app: str, tmp: Path) -> None:
    """One worker, then two: each session moves to the worker that owns it
    now if that worker also owns its port (the RSS partition, rss.h), else it
    is discarded and counted; an adopted session keeps its id, and the offload
    manager's `session` commands reach it on its new worker."""
    state = tmp / "workers.state"
    hosts = HOSTS[:8]  # the pool's 8 even ports (parity is preserved)
    # --seed: the same ports every run, so the same sessions stay or go
    one = ("--state", str(state), "--lcores-workers", "1", "--seed", "7")
    with processes() as started:
        first = Nat(app, tmp, CMDS, extra=one)
        started.append(first)
        mapped = outbound(hosts, sport_of)
        eq(sorted(mapped), sorted(hosts), "translated before the restart")
        ids = {r["internal"]: r["id"] for r in sessions(first)}
        first.kill()

        second = Nat(app, tmp, CMDS, extra=("--state", str(state)))  # two workers
        started.append(second)
        c = counters(second)
        rows = sessions(second)
        eq(c["sessions_adopted"] + c["sessions_discarded"], len(hosts), "accounted for")
        eq(len(rows), c["sessions_adopted"])
        assert rows, "no session could stay (all ports now another worker's?)"
        for r in rows:
            eq(r["id"], ids[r["internal"]], "the id kept")
        # ids were n * 1 + 0 + 1: some now live on a worker their id does not name
        moved = [r for r in rows if r["worker"] != (r["id"] - 1) % 2]
        assert moved, f"no adopted session on another worker than its id's: {rows}"
        commands = [f"session offload {r['id']} udp {r['internal']} {r['remote']}" for r in rows]
        eq(second.lines(*commands), ["ok"] * len(rows))
        deadline = time.time() + 2
        while counters(second)["sessions_offloaded"] < len(rows) and time.time() < deadline:
            time.sleep(0.05)
        c = counters(second)
        eq((c["sessions_offloaded"], c["offload_unknown"]), (len(rows), 0), "commands applied")
        # the adopted ones answer from outside, on their old endpoints
        kept = {
            bytes_host: mapped[bytes_host]
            for bytes_host in (r["internal"].split(":")[0] for r in rows)
        }
        assert_replies_reach(kept, sport_of)
        second.stop()
        if c["sessions_discarded"]:
            assert "its port is not one of this worker's in the pool" in second.log()


def case_state_in_use_refused(app: str, tmp: Path) -> None:
    state = tmp / "busy.state"
    with processes() as started:
        first = Nat(app, tmp, CMDS, extra=("--state", str(state)))
        started.append(first)
        argv = first.argv_beside("other")
        argv[argv.index("--control") + 1] = str(tmp / "other.sock")
        other = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        assert other.returncode != 0, other.stderr
        want = f"is in use by a running quicknat-swpath (pid {first.proc.pid})"
        assert want in other.stderr, other.stderr
        eq(first.proc.poll(), None, "the first one still runs")


def case_bad_file_starts_empty(app: str, tmp: Path) -> None:
    state = tmp / "bad.state"
    state.write_bytes(b"not a state file" * 300)
    with processes() as started:
        nat = Nat(app, tmp, CMDS, extra=("--state", str(state)))
        started.append(nat)
        eq(sessions(nat), [], "sessions")
        eq(counters(nat)["sessions_adopted"], 0)
        nat.stop()
        assert "not a swpath state file; starting with no sessions" in nat.log()
    assert state.read_bytes()[:8] == b"QNSWSESS", "the file was not made ours"


CASES = [
    case_crash_keeps_flows,
    case_version_1_file_keeps_flows,
    case_clean_stop_keeps_age,
    case_more_workers_after_restart,
    case_state_in_use_refused,
    case_bad_file_starts_empty,
]


def main() -> int:
    args = parse_args(__doc__, cases=True)
    cases = [c for c in CASES if not args.cases or c.__name__ in args.cases]

    def body(tally: Tally) -> None:
        tally.add(run_each(cases, args.app, "sp-restart-"))

    return live_main("sp_restart", make_links, remove_links, body, n_cases=len(cases))


if __name__ == "__main__":
    sys.exit(main())
