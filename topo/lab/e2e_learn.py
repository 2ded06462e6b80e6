"""The offload lab with a switch that learns its sessions (`--lab
offload-swx-learn`: quicknat-swx, `[offload] install = "learn"`,
docs/offload.md "Learning"): the tests of learning itself, beside lab.e2e's
(traceroute, iperf3, hole punching, metrics) on the same lab.

The lab's switch runs short timeout classes (LEARN_TIMEOUTS_S), so that
leases end within a test: with the lab's UDP timeout of 10 s a UDP session
is learned under a lease of 4 s (config/leases.py: the longest class at most
half the timeout), and its instance holds it for 10 + 4 s after the last
packet it saw.
"""

from __future__ import annotations

import json
import time
from typing import Any

from lab.e2e_udp import (
    OFFLOAD_PORT,
    UDP_SEND,
    offload_counters,
    start_udp_sink,
    udp_sessions_of,
)
from lab.nodes import Nodes
from lab.swx_telemetry import fastpath_sent, in2out_learned_hits
from lab.topology import FAR, H1

# quicknat-swx --learn-timeouts and [offload] learn_timeouts of the lab
LEARN_TIMEOUTS_S = (2, 3, 4, 6, 8, 10, 12, 16)
UDP_LEASE_S = 4  # leases((udp = 10), LEARN_TIMEOUTS_S)["udp"]


def instance_counters(lab: Nodes) -> dict[str, int]:
    counters = json.loads(lab.quicknat("stats", "--json"))["counters"]
    assert isinstance(counters, dict)
    return counters


def send(
    lab: Nodes, sport: int, count: int, node: Any = H1, to: tuple[str, int] | None = None
) -> None:
    """`count` datagrams from `node`'s UDP port `sport` (10 ms apart), to far's
    sink unless `to` names another end."""
    address, port = to or (FAR.ip, OFFLOAD_PORT)
    script = UDP_SEND.replace("47000", str(sport))
    lab.run(node.name, "python3", "-c", script, address, str(port), str(count))


def open_session(lab: Nodes, sport: int) -> dict[str, Any]:
    """One datagram from h1's `sport`, then its session in the instance."""
    send(lab, sport, 1)
    deadline = time.monotonic() + 5
    while not udp_sessions_of(lab, sport):
        assert time.monotonic() < deadline, "the instance opened no session in 5 s"
        time.sleep(0.1)
    (session,) = udp_sessions_of(lab, sport)
    return session


def where(lab: Nodes, session: dict[str, Any]) -> str:
    """Where `quicknat sessions` on the controller says the instance's
    session is translated (modes/offload_view.py)."""
    from lab.offload_lab import OffloadLab

    assert isinstance(lab, OffloadLab), "needs the offload lab"
    rows = json.loads(lab.quicknat("sessions", "--json", socket=lab.controller_socket))
    (row,) = [r for r in rows if r["id"] == session["id"] and r["internal"] == session["internal"]]
    return str(row["where"])


def test_learn_takes_flows_without_writes(lab: Nodes) -> None:
    """The first packet goes through the instance, which tags it; the switch
    learns both directions from it: the instance sees none of the next 50
    packets (sent within one lease), all of which arrive, and the controller
    writes no entry. The switch's fast path sends them, its in2out learner
    counting each one hit (p4src/README.md)."""
    before_ctl = offload_counters(lab)
    learned = lab.switch_learned()
    sink = start_udp_sink(lab, "learn-sink.log", 30)
    try:
        tagged = instance_counters(lab)["learn_tagged_in2out"]
        open_session(lab, 47100)
        seen = instance_counters(lab)
        assert seen["learn_tagged_in2out"] == tagged + 1, "the first packet was not tagged"
        fast_before, hits_before = fastpath_sent(lab), in2out_learned_hits(lab)
        start = time.monotonic()
        send(lab, 47100, 50)
        took = time.monotonic() - start
        time.sleep(0.5)
        after = instance_counters(lab)
        fast_after, hits_after = fastpath_sent(lab), in2out_learned_hits(lab)
    finally:
        lab.stop_process(sink)
    received = (lab.workdir / "learn-sink.log").read_text().split()
    assert received and int(received[-1]) == 51, f"far received {received}"
    # within a lease no packet of the flow may come back to the instance
    assert took < 2.0, f"sending took {took:.1f} s: longer than the shortest lease"
    assert after["in2out"] == seen["in2out"], (
        f"the instance translated {after['in2out'] - seen['in2out']} of the 50 packets"
    )
    ctl = offload_counters(lab)
    for written in ("sessions_installed", "install_writes", "sessions_announced"):
        assert ctl[written] == before_ctl[written], (
            f"the controller wrote or was asked to: {written}"
        )
    # and the switch's own count: its in2out learner added the session
    assert lab.switch_learned() >= learned + 1, "the switch learned nothing"
    assert None not in (fast_before, fast_after, hits_before, hits_after), "not quicknat-swx"
    assert fast_after - fast_before >= 50, (
        f"the switch's fast path sent {fast_after - fast_before} of the 50 packets"
    )
    assert hits_after - hits_before == 50, (
        f"the in2out learner counted {hits_after - hits_before} hits for 50 packets"
    )


def test_learn_lease_keeps_an_active_flow(lab: Nodes) -> None:
    """A flow sending a datagram a second for 3.5 leases keeps its session
    and mapping: the switch's lease ends on its own, the next packet comes
    back to the instance, which translates it with the same session and
    tags it again (at least twice, once a lease at most)."""
    sink = start_udp_sink(lab, "lease-sink.log", 40)
    try:
        first = open_session(lab, 47101)
        before = instance_counters(lab)
        seconds = int(UDP_LEASE_S * 3.5)
        for _ in range(seconds):
            send(lab, 47101, 1)
            time.sleep(1)
        after = instance_counters(lab)
        rows = udp_sessions_of(lab, 47101)
    finally:
        lab.stop_process(sink)
    assert [(r["id"], r["external"]) for r in rows] == [(first["id"], first["external"])], rows
    visits = after["learn_tagged_in2out"] - before["learn_tagged_in2out"]
    # a lease ends after at most UDP_LEASE_S (DPDK may end it up to ~1.7 s
    # early): 14 s of traffic come back 3 to 7 times, not 14
    assert 2 <= visits <= seconds // 2, f"{visits} packets of {seconds} came back to the instance"
    received = (lab.workdir / "lease-sink.log").read_text().split()
    assert received and int(received[-1]) == seconds + 1, f"far received {received}"


def test_learn_port_outlives_the_switch_lease(lab: Nodes) -> None:
    """After its flow stops, the switch drops a session's entries by the end
    of the lease, while the instance keeps the session (and its port) for
    the UDP timeout plus the lease: a reply then still goes through the
    instance. Only after both is the port free, and a packet to it is
    translated by neither. The controller's `quicknat sessions` says the
    switch holds the session during its lease, and software after it."""
    session = open_session(lab, 47102)
    last = time.monotonic()
    assert where(lab, session) == "switch", "the controller's view: not in the switch"
    address, port = session["external"].rsplit(":", 1)
    time.sleep(UDP_LEASE_S + 1)
    assert where(lab, session) == "software", "the controller's view: in the switch after its lease"
    before = instance_counters(lab)
    send(lab, OFFLOAD_PORT, 1, node=FAR, to=(address, int(port)))
    time.sleep(0.5)
    after = instance_counters(lab)
    assert after["out2in"] == before["out2in"] + 1, "the reply did not come to the instance"
    # past the UDP timeout the session is held for its lease (it restarted
    # with the reply's tag): it must still be there 10.5 s after the reply
    reply = time.monotonic()
    time.sleep(max(0.0, reply + 10.5 - time.monotonic()))
    assert udp_sessions_of(lab, 47102), "the instance freed the port within the UDP timeout"
    deadline = reply + 10 + UDP_LEASE_S + 5
    while udp_sessions_of(lab, 47102):
        assert time.monotonic() < deadline, "the idle session outlived its timeout and lease"
        time.sleep(0.5)
    freed = instance_counters(lab)
    send(lab, OFFLOAD_PORT, 1, node=FAR, to=(address, int(port)))
    time.sleep(0.5)
    late = instance_counters(lab)
    assert late["out2in"] == freed["out2in"], "a packet to a freed port was translated"
    assert last < reply


LEARN_TESTS = {
    "learn_takes_flows_without_writes": test_learn_takes_flows_without_writes,
    "learn_lease_keeps_an_active_flow": test_learn_lease_keeps_an_active_flow,
    "learn_port_outlives_the_switch_lease": test_learn_port_outlives_the_switch_lease,
}
