"""lab.e2e's test of the controller's one view of every instance's sessions
(offload lab only; controller/quicknat/controller/modes/offload_view.py):
real flows through both instances are listed by `quicknat sessions` on the
controller's socket with their instance and place, one is deleted there and
goes from its instance (and the switch), and `quicknat stats` adds the
instances' counters up beside each one's own."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from lab.nodes import Nodes
from lab.topology import FAR, H1, H2, Node

# h1 is pinned to the default instance, the last (sp1); the switch's
# selector hashes h2 to sp0 (offload_lab.py)
INSTANCE_OF = {H1.ip: "sp1", H2.ip: "sp0"}
VIEW_PORT = 9998  # far's port for these flows (nothing listens: one-way is enough)
SPORTS = (47101, 47102)  # each host's two flows' source ports

SEND = """
import socket, sys
for sport in sys.argv[3:]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("", int(sport)))
    s.sendto(b"view", (sys.argv[1], int(sys.argv[2])))
"""


def _send(lab: Nodes, host: Node) -> None:
    """One datagram of each of the host's flows to far: opens them, or keeps
    them alive (the lab's UDP timeout is 10 s)."""
    lab.run(host.name, "python3", "-c", SEND, FAR.ip, str(VIEW_PORT), *map(str, SPORTS))


def _ours(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The test's flows' rows, by inside endpoint."""
    ours = {f"{h.ip}:{p}" for h in (H1, H2) for p in SPORTS}
    return {r["internal"]: r for r in rows if r["internal"] in ours and r["protocol"] == 17}


def _view(lab: Nodes, *args: str) -> list[dict[str, Any]]:
    """`quicknat sessions --json ARGS` on the controller's socket."""
    rows: list[dict[str, Any]] = json.loads(
        lab.quicknat("sessions", "--json", *args, socket=_controller(lab))
    )
    return rows


def _controller(lab: Nodes) -> Path:
    from lab.offload_lab import OffloadLab

    assert isinstance(lab, OffloadLab) and lab.instances == 2, "needs the two-instance lab"
    return lab.controller_socket


def _own(lab: Nodes, instance: str) -> list[dict[str, Any]]:
    """An instance's own listing, from its socket."""
    rows: list[dict[str, Any]] = json.loads(
        lab.quicknat("sessions", "--json", socket=lab.workdir / f"{instance}.sock")
    )
    return rows


def _wait(what: str, done: Any, timeout: float = 8.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.2)


def test_offload_controller_lists_every_instances_sessions(lab: Nodes) -> None:
    """Two flows from each of h1 (sp1) and h2 (sp0): the controller's
    listing has all four with their instance, the same ids as each
    instance's own listing, "switch" once the switch holds them, and honours
    the filters; a delete on the controller goes to the owning instance (and
    the switch's entries with it); stats sum the instances'."""
    controller = _controller(lab)
    for host in (H1, H2):
        _send(lab, host)
    # the instances offload them (one datagram: the lab's after_packets is 1)
    _wait(
        "the four flows in the switch",
        lambda: [r["where"] for r in _ours(_view(lab)).values()] == ["switch"] * 4,
    )
    _keep_alive(lab)  # the comparisons below must not race an expiry
    rows = _ours(_view(lab))
    for internal, row in rows.items():
        assert row["instance"] == INSTANCE_OF[internal.split(":")[0]], row
    for instance in ("sp0", "sp1"):
        listing = _own(lab, instance)
        own = {k: r["id"] for k, r in _ours(listing).items()}
        seen = {k: r["id"] for k, r in rows.items() if r["instance"] == instance}
        assert seen == own, f"{instance}: the controller lists {seen}, the instance {listing}"
    _time_listings(lab)
    # the filters, as on an instance
    h2 = _ours(_view(lab, "--src", H2.ip, "--proto", "udp"))
    assert set(h2) == {f"{H2.ip}:{p}" for p in SPORTS}, h2
    one = _ours(_view(lab, "--port", str(SPORTS[0])))
    assert set(one) == {f"{h.ip}:{SPORTS[0]}" for h in (H1, H2)}, one
    table = lab.quicknat("sessions", "--src", H1.ip, "--port", str(SPORTS[1]), socket=controller)
    print(table)
    assert "sp1/switch" in table and "1 sessions" in table, table

    _keep_alive(lab)
    before = _stats(lab)
    # delete one of h2's flows on the controller: sp0 deletes it
    gone = f"{H2.ip}:{SPORTS[0]}"
    answer = lab.quicknat(
        "sessions", "delete", "--src", H2.ip, "--port", str(SPORTS[0]), socket=controller
    )
    assert answer == "1 sessions deleted", answer
    assert gone not in _ours(_own(lab, "sp0")), "the instance still holds it"
    left = _ours(_view(lab))
    assert set(left) == set(rows) - {gone}, left
    after = _stats(lab)
    _check_sums(after)
    deleted = [after["instances"][i]["counters"]["sessions_deleted"] for i in ("sp0", "sp1")]
    was = [before["instances"][i]["counters"]["sessions_deleted"] for i in ("sp0", "sp1")]
    assert (deleted[0] - was[0], deleted[1] - was[1]) == (1, 0), (was, deleted)
    # the switch's entries went through the instance's `closed` event
    _wait(
        "the deleted session's entries out of the switch",
        lambda: _stats(lab)["counters"]["sessions_closed"] > before["counters"]["sessions_closed"],
    )


def _keep_alive(lab: Nodes) -> None:
    """The flows' next datagrams: the switch's idle timers start again."""
    for host in (H1, H2):
        _send(lab, host)


def _time_listings(lab: Nodes) -> None:
    """How long the controller's whole listing takes beside one instance's
    (asked from this process: a `quicknat` process's start would hide it)."""
    took = {}
    for name, socket in (("controller", _controller(lab)), ("sp0", lab.workdir / "sp0.sock")):
        start = time.monotonic()
        # (imported here: lab.e2e also runs under Debian's Python, without it)
        from quicknat.controller.status import query

        rows = query(socket, "sessions")
        took[name] = (time.monotonic() - start) * 1000, len(rows) if isinstance(rows, list) else 0
    print(", ".join(f"{k}: {n} sessions in {ms:.1f} ms" for k, (ms, n) in took.items()))


def _stats(lab: Nodes) -> dict[str, Any]:
    """`quicknat stats --json` on the controller's socket."""
    answer: dict[str, Any] = json.loads(lab.quicknat("stats", "--json", socket=_controller(lab)))
    return answer


def _check_sums(stats: dict[str, Any]) -> None:
    """`instances_total` is the sum of `instances`, one answer's parts."""
    own = stats["instances"]
    assert sorted(own) == ["sp0", "sp1"], own
    total = stats["instances_total"]
    assert total["answered"] == 2, total
    for key in ("sessions", "mappings"):
        assert total[key] == own["sp0"][key] + own["sp1"][key], (key, total, own)
    for name, value in total["counters"].items():
        assert value == own["sp0"]["counters"][name] + own["sp1"]["counters"][name], name
    assert total["sessions"] >= 3, "the test's three flows left"
