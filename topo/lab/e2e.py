#!/usr/bin/env python3
"""End-to-end tests with real clients in a lab: `python3 -m lab.e2e --lab LAB` (from topo/).

The same tests on either lab (topo/lab/topology.py): `--lab swpath` builds the
namespace lab with quicknat-swpath (topo/run_swpath.py), `--lab bmv2` the
Mininet lab with BMv2 and the controller (topo/run_bmv2.py; run it with
Debian's python3, which has Mininet), `--lab offload` the namespace lab with
BMv2, the controller as offload manager and two swpath slow-path instances
(topo/lab/offload_lab.py; plus tests of its own), and `--lab offload-swx` the
same with quicknat-swx, the P4 program on DPDK's SWX pipeline, as the switch.
One lab serves every test; it is torn down at the end, on failure and on
SIGINT/SIGTERM. Every wait is bounded.

- traceroute -n, UDP and ICMP (-I), from h1 to far: hop 1 is the NAT (its
  inside address), hop 2 rtr beyond it, hop 3 far. Hop 1 needs the NAT to
  originate ICMP time exceeded (RFC 1812 5.3.1); hops 2 and 3 need it to
  translate the ICMP errors and replies back (RFC 5508).
- iperf3 TCP and UDP from h1 to far: the transfer completes, bytes arrive,
  UDP loses less than UDP_MAX_LOSS_PERCENT at a modest rate.
- UDP hole punching (topo/holepunch.py): clients on h1 and h2 behind the NAT,
  the rendezvous server on srv; each must get the other's message from the
  other's public endpoint, which is hairpinning (RFC 4787 REQ-9), and the NAT's
  sessions must hold those endpoints.
- swpath lab only: swpath killed with -9 in the middle of an iperf3 TCP
  transfer and a UDP stream, then started again with its --state: both carry
  on through the same external endpoints.
- offload lab only: the switch takes established flows, ages them, and keeps
  them while a killed slow-path instance is replaced; the controller lists,
  deletes and counts every instance's sessions (lab/e2e_sessions_view.py).

The last line is `lab-e2e-LAB: N passed, M failed, K skipped` for `make test`.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.e2e_sessions_view import test_offload_controller_lists_every_instances_sessions
from lab.e2e_udp import (
    OFFLOAD_PORT,
    UDP_SEND,
    offload_counters,
    start_udp_sink,
    udp_sessions_of,
)
from lab.nodes import IPERF_PORT, QUICKNAT, Nodes
from lab.processes import raise_on_signals
from lab.swx_telemetry import fastpath_sent, in2out_lookups
from lab.topology import FAR, H1, H2, RTR, SRV, Node

ROOT = Path(__file__).resolve().parents[2]

HOLEPUNCH = ROOT / "topo" / "holepunch.py"
NAT_INSIDE = "10.0.0.1"  # in0's address in topo/lab.toml: h1's gateway
NAT_INSIDE2 = "10.0.1.1"  # in1's: h2's
POOL = ipaddress.ip_network("203.0.113.0/30")  # topo/lab.toml
RENDEZVOUS_PORT = 3478
PUNCH_PORT = 40000
UDP_RATE = "20M"
UDP_MAX_LOSS_PERCENT = 5.0
IPERF_SECONDS = 2
TRACEROUTE_TIMEOUT_S = 30

Test = Callable[[Nodes], None]


def traceroute_hops(lab: Nodes, *options: str, node: Node = H1) -> dict[int, list[str]]:
    """Hop number -> the addresses that answered `node`'s trace to far ('*'
    for none); at most 5 hops, two probes each, 2 s for an answer."""
    args = ["traceroute", "-n", *options, "-q", "2", "-w", "2", "-m", "5", FAR.ip]
    out = lab.run(node.name, *args, timeout=TRACEROUTE_TIMEOUT_S)
    print(out.rstrip())
    hops = {}
    for line in out.splitlines()[1:]:
        match = re.match(r"\s*(\d+)\s+(.*)", line)
        if match is None:
            continue
        addresses = re.findall(r"\d+\.\d+\.\d+\.\d+", match[2])
        assert "!" not in match[2], f"hop {match[1]} reports unreachable: {line.strip()}"
        hops[int(match[1])] = sorted(set(addresses)) or ["*"]
    return hops


def check_hops(hops: dict[int, list[str]], gateway: str = NAT_INSIDE) -> None:
    expected = {
        1: [gateway],  # the NAT's own time exceeded
        2: [RTR.ip],  # rtr's, translated back by the NAT
        3: [FAR.ip],  # the destination: port unreachable / echo reply
    }
    wrong = [
        f"hop {hop}: {' '.join(hops.get(hop, ['none']))}, expected {' '.join(want)}"
        for hop, want in expected.items()
        if hops.get(hop) != want
    ]
    assert not wrong, "; ".join(wrong)
    assert max(hops) == 3, f"the trace did not stop at far: {hops}"


def test_traceroute_udp(lab: Nodes) -> None:
    check_hops(traceroute_hops(lab))


def test_traceroute_icmp(lab: Nodes) -> None:
    check_hops(traceroute_hops(lab, "-I"))


def iperf3(lab: Nodes, *args: str) -> dict[str, Any]:
    command = ["iperf3", "-c", FAR.ip, "-J", "-t", str(IPERF_SECONDS), "--connect-timeout", "5000"]
    proc = subprocess.run(
        lab.command(H1.name, *command, *args),
        capture_output=True,
        text=True,
        timeout=IPERF_SECONDS + 30,
        check=False,
    )
    try:
        result: dict[str, Any] = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"iperf3 printed no JSON: {proc.stdout}{proc.stderr}") from None
    assert "error" not in result, f"iperf3: {result['error']}"
    assert proc.returncode == 0, f"iperf3 exited with {proc.returncode}"
    return result


def test_iperf3_tcp(lab: Nodes) -> None:
    end = iperf3(lab)["end"]
    received = end["sum_received"]
    print(
        f"TCP: {received['bytes']} bytes received, {received['bits_per_second'] / 1e6:.1f} Mbit/s"
    )
    assert received["bytes"] > 0, f"nothing received: {received}"
    assert end["sum_sent"]["bytes"] > 0


def test_iperf3_udp(lab: Nodes) -> None:
    total = iperf3(lab, "-u", "-b", UDP_RATE)["end"]["sum"]
    received = total["packets"] - total["lost_packets"]
    print(
        f"UDP at {UDP_RATE}bit/s: {total['packets']} datagrams sent, {received} received, "
        f"{total['lost_percent']:.2f} % lost"
    )
    assert total["packets"] > 0 and received > 0, f"nothing received: {total}"
    assert total["lost_percent"] < UDP_MAX_LOSS_PERCENT, (
        f"{total['lost_percent']:.2f} % lost at {UDP_RATE}bit/s (bound {UDP_MAX_LOSS_PERCENT} %)"
    )


def test_udp_hole_punching(lab: Nodes) -> None:
    server = lab.start_server(
        SRV.name,
        [
            sys.executable,
            str(HOLEPUNCH),
            "server",
            "--bind",
            SRV.ip,
            "--port",
            str(RENDEZVOUS_PORT),
        ],
        RENDEZVOUS_PORT,
        "holepunch-server.log",
        udp=True,
    )
    clients = {
        node.name: subprocess.Popen(
            lab.command(
                node.name,
                sys.executable,
                str(HOLEPUNCH),
                "client",
                "--server",
                f"{SRV.ip}:{RENDEZVOUS_PORT}",
                "--name",
                node.name,
                "--port",
                str(PUNCH_PORT),
                "--timeout",
                "15",
            ),
            stdout=subprocess.PIPE,
            text=True,
        )
        for node in (H1, H2)
    }
    results = {}
    try:
        for name, proc in clients.items():
            out, _ = proc.communicate(timeout=30)
            print(f"{name}: {out.strip()}")
            results[name] = json.loads(out.splitlines()[-1]) if out.strip() else {}
    finally:
        for proc in clients.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        lab.stop_process(server)
    for name, peer in (("h1", "h2"), ("h2", "h1")):
        mine, theirs = results[name], results[peer]
        assert "public" in mine, f"{name} got no answer from the rendezvous server: {mine}"
        public = mine["public"]
        address = ipaddress.ip_address(public.rsplit(":", 1)[0])
        assert address in POOL, f"{name}'s endpoint as srv saw it, {public}, is not a pool one"
        assert mine["peer_public"] == theirs["public"], (mine, theirs)
        assert "received" in mine, f"{name} got nothing from {peer} at {mine['peer_public']}"
        assert mine["received"] == f"PUNCH {peer}", mine
        # Hairpinning: the peer's message comes from its external endpoint.
        assert mine["received_from"] == theirs["public"], (
            f"{name} got {peer}'s message from {mine['received_from']}, "
            f"not from {peer}'s external endpoint {theirs['public']}"
        )
    sessions = lab.sessions()
    for s in sessions:
        if s["internal"].endswith(f":{PUNCH_PORT}"):
            print(f"session {s['internal']} -> {s['external']} with {s['remote']}")
    for node, peer in ((H1, H2), (H2, H1)):
        internal = f"{node.ip}:{PUNCH_PORT}"
        public = results[node.name]["public"]
        mine = [s for s in sessions if s["internal"] == internal]
        # One mapping (REQ-1), with a session to srv and one to the peer's public endpoint.
        assert {s["external"] for s in mine} == {public}, (
            f"the NAT maps {internal} to {sorted({s['external'] for s in mine})}, srv saw {public}"
        )
        remotes = {s["remote"] for s in mine}
        wanted = {f"{SRV.ip}:{RENDEZVOUS_PORT}", results[peer.name]["public"]}
        assert wanted <= remotes, f"{internal}'s sessions are with {remotes}, not {wanted}"


def scrape(url: str) -> dict[str, float]:
    """A /metrics page: sample (name and labels, as written) -> value."""
    with urllib.request.urlopen(url, timeout=5) as answer:
        text = answer.read().decode()
    samples = {}
    for line in text.splitlines():
        match = re.match(r"^(quicknat_\S+) (\S+)$", line)
        if match:
            samples[match[1]] = float(match[2])
    return samples


def opened(samples: dict[str, float]) -> float:
    """Flows the NAT took (docs/counters.md "Metrics"): swpath's sessions opened
    and the controller's packet-ins (quicknat_new_flows_total), or, in offload
    mode where the controller sees no packet, the sessions it installed
    (quicknat_sessions_offloaded_total). A P4 flow counts in both: the tests
    ask for at least so many more."""
    families = ("quicknat_new_flows_total{", "quicknat_sessions_offloaded_total{")
    return sum(v for k, v in samples.items() if k.startswith(families))


def test_metrics_move(lab: Nodes) -> None:
    """The lab's NAT scraped through `quicknat exporter` (its status socket:
    either path) before and after a new flow: the named counters move."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exporter = subprocess.Popen(
        [
            str(QUICKNAT),
            "exporter",
            "--socket",
            str(lab.socket),
            "--listen",
            f"127.0.0.1:{port}",
            "--path",
            "lab",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 10
        while True:
            try:
                before = scrape(url)
                break
            except OSError:
                assert time.monotonic() < deadline, "the exporter did not answer in 10 s"
                time.sleep(0.2)
        assert before.get('quicknat_up{path="lab"}') == 1.0, before
        lab.run(H1.name, "ping", "-c", "1", "-W", "2", "-p", "51", FAR.ip)
        lab.run(H1.name, "ping", "-c", "1", "-W", "2", SRV.ip)
        after = scrape(url)
        print(f"flows opened: {opened(before):.0f} -> {opened(after):.0f}")
        assert opened(after) >= opened(before) + 2, (before, after)
        assert after['quicknat_sessions{path="lab"}'] >= 2, after
    finally:
        exporter.terminate()
        exporter.wait(timeout=10)


def send_until_offloaded(lab: Nodes, sport: int) -> dict[str, Any]:
    """One datagram from h1's `sport` to far, then until its session is marked
    offloaded (bounded): that session."""
    send = UDP_SEND.replace("47000", str(sport))
    lab.run(H1.name, "python3", "-c", send, FAR.ip, str(OFFLOAD_PORT), "1")
    deadline = time.monotonic() + 10
    while not [r for r in udp_sessions_of(lab, sport) if r["offloaded"]]:
        assert time.monotonic() < deadline, "the session was not offloaded in 10 s"
        time.sleep(0.2)
    (session,) = udp_sessions_of(lab, sport)
    return session


def test_offload_takes_established_flows(lab: Nodes) -> None:
    """Offload mode: a flow's first packet goes through the slow-path instance,
    which opens the session; the controller installs it in the switch, which
    then translates the rest: the instance marks it offloaded and sees none of
    its later packets, which all arrive."""
    from lab.offload_lab import OffloadLab

    assert isinstance(lab, OffloadLab)
    sink = start_udp_sink(lab, "udp-sink.log", 30)
    try:
        looked = in2out_lookups(lab)
        send_until_offloaded(lab, 47000)
        before = json.loads(lab.quicknat("stats", "--json"))["counters"]["in2out"]
        sent = fastpath_sent(lab)
        lab.run(H1.name, "python3", "-c", UDP_SEND, FAR.ip, str(OFFLOAD_PORT), "50")
        time.sleep(1)
        after = json.loads(lab.quicknat("stats", "--json"))["counters"]["in2out"]
        assert after == before, f"the instance translated {after - before} of the 50 packets"
        stats = offload_counters(lab)
        assert stats["sessions_installed"] >= 1, stats
        if sent is not None:
            # on quicknat-swx, the program's fast path took them (p4src/README.md)
            took = (fastpath_sent(lab) or 0) - sent
            assert took >= 50, f"the switch's fast path sent {took} of the 50 packets"
            # and its table statistics count each packet once: the first
            # packet's miss (which the fast path hands on and the program
            # looks up again) once, the 50 hits (src/fastpath_stats.h)
            now = in2out_lookups(lab)
            assert looked is not None and now is not None
            hits, misses = now[0] - looked[0], now[1] - looked[1]
            assert (hits, misses) == (50, 1), f"nat_in2out counted {hits} hits, {misses} misses"

    finally:
        lab.stop_process(sink)
    received = (lab.workdir / "udp-sink.log").read_text().split()
    assert received and int(received[-1]) == 51, f"far received {received}"


def test_offload_ageing_follows_the_switch(lab: Nodes) -> None:
    """Offload mode's ageing: a flow the switch forwards outlives the UDP
    timeout in the instance, which sees none of its packets; once it stops,
    the switch reports its entry idle, the controller tells the instance,
    which ends the session, and the controller deletes its entries."""
    from lab.offload_lab import UDP_TIMEOUT_S, OffloadLab

    assert isinstance(lab, OffloadLab)
    sport = 47001

    def sessions() -> list[dict[str, Any]]:
        return udp_sessions_of(lab, sport)

    def counters() -> dict[str, int]:
        return offload_counters(lab)

    before = counters()
    send = UDP_SEND.replace("47000", str(sport))
    first = send_until_offloaded(lab, sport)
    # 1.25 timeouts of traffic through the switch, one datagram a second: the
    # instance, which sees none of it, would have expired it at 1
    for _ in range(int(UDP_TIMEOUT_S * 1.25)):
        lab.run(H1.name, "python3", "-c", send, FAR.ip, str(OFFLOAD_PORT), "1")
        time.sleep(1)
    assert [r["id"] for r in sessions()] == [first["id"]], "a live offloaded flow was expired"
    deadline = time.monotonic() + 4 * UDP_TIMEOUT_S
    while sessions():
        assert time.monotonic() < deadline, "the idle session did not end"
        time.sleep(0.5)
    deadline = time.monotonic() + 10
    while counters()["sessions_closed"] <= before["sessions_closed"]:
        assert time.monotonic() < deadline, "its entries were not deleted"
        time.sleep(0.2)
    assert counters()["idle_forwarded"] > before["idle_forwarded"]


def test_offload_instance_restart_keeps_switch_sessions(lab: Nodes) -> None:
    """The slow-path instance killed with -9 and started again (--state): it
    takes its sessions over with their ids, so its new stream's snapshot
    confirms what the switch holds: no entry is deleted or installed again,
    the flow keeps going through the switch on its external endpoint, and new
    flows open again through the new instance."""
    from lab.offload_lab import OffloadLab

    assert isinstance(lab, OffloadLab)
    sport = 47002
    send = UDP_SEND.replace("47000", str(sport))
    sink = start_udp_sink(lab, "restart-sink.log", 60)
    try:
        first = send_until_offloaded(lab, sport)
        before = offload_counters(lab)
        gap = lab.restart_swpath()
        deadline = time.monotonic() + 10
        while offload_counters(lab)["instance_resyncs"] <= before["instance_resyncs"]:
            assert time.monotonic() < deadline, "the controller did not resubscribe"
            time.sleep(0.2)
        (again,) = udp_sessions_of(lab, sport)
        assert (again["id"], again["external"], again["offloaded"]) == (
            first["id"],
            first["external"],
            True,
        ), (first, again)
        lab.run(H1.name, "python3", "-c", send, FAR.ip, str(OFFLOAD_PORT), "50")
        in2out = json.loads(lab.quicknat("stats", "--json"))["counters"]["in2out"]
        time.sleep(1)
        after = offload_counters(lab)
        # a new flow, through the new instance
        lab.run(H1.name, "python3", "-c", UDP_SEND.replace("47000", "47003"), FAR.ip,
                str(OFFLOAD_PORT), "1")  # fmt: skip
    finally:
        lab.stop_process(sink)
    received = (lab.workdir / "restart-sink.log").read_text().split()
    print(f"instance restart took {gap:.2f} s; far received {received[-1] if received else 0}")
    assert in2out == 0, f"the new instance translated {in2out} packets of the offloaded flow"
    for name in ("sessions_closed", "sessions_installed", "stale_entries_deleted"):
        assert after[name] == before[name], f"{name}: {before[name]} -> {after[name]}"
    assert received and int(received[-1]) == 52, f"far received {received}"


def test_offload_instance_without_its_state_gets_switch_sessions_back(lab: Nodes) -> None:
    """The slow-path instance killed with -9 and started again without its
    state file (as after a reboot): its snapshot is empty, so the controller
    hands it back the sessions the switch holds (`session adopt`). The
    instance takes each over with its external endpoint, marked offloaded,
    under a new id; no entry is deleted or installed again, and the flow
    keeps going through the switch on the same mapping."""
    from lab.offload_lab import OffloadLab

    assert isinstance(lab, OffloadLab)
    sport = 47004
    send = UDP_SEND.replace("47000", str(sport))
    sink = start_udp_sink(lab, "handback-sink.log", 60)
    try:
        first = send_until_offloaded(lab, sport)
        before = offload_counters(lab)
        lab.restart_swpath(keep_state=False)
        deadline = time.monotonic() + 10
        while not [r for r in udp_sessions_of(lab, sport) if r["offloaded"]]:
            assert time.monotonic() < deadline, "the session was not handed back in 10 s"
            time.sleep(0.2)
        (again,) = udp_sessions_of(lab, sport)
        lab.run(H1.name, "python3", "-c", send, FAR.ip, str(OFFLOAD_PORT), "50")
        time.sleep(1)
        counters = json.loads(lab.quicknat("stats", "--json"))["counters"]
        after = offload_counters(lab)
    finally:
        lab.stop_process(sink)
    received = (lab.workdir / "handback-sink.log").read_text().split()
    assert again["external"] == first["external"], (first, again)
    # every session the switch held for it (earlier tests' too) came back
    handed_back = after["sessions_handed_back"] - before["sessions_handed_back"]
    assert handed_back >= 1, after
    assert (counters["sessions_handed_back"], counters["in2out"]) == (handed_back, 0), counters
    for name in ("sessions_closed", "sessions_installed", "handback_refused"):
        assert after[name] == before[name], f"{name}: {before[name]} -> {after[name]}"
    assert received and int(received[-1]) == 51, f"far received {received}"


# far counts the datagrams on a port until its time is up (or it is stopped);
# h1 sends N from one source port, so they are one session.
def test_swpath_restart_keeps_flows(lab: Nodes) -> None:
    """swpath killed with -9 mid-transfer and started again with the same
    command line (--state, docs/swpath.md): an iperf3 TCP transfer and a UDP
    stream both carry on through the external endpoints they had, and the new
    process opened no session for them."""
    from lab.netns_lab import NetnsLab

    assert isinstance(lab, NetnsLab)
    seconds, rate = 8, 200
    sink = lab.start_server(
        FAR.name,
        ["python3", "-u", "-c", SEQ_SINK, str(STREAM_PORT), str(seconds + 20)],
        STREAM_PORT,
        "seq-sink.log",
        udp=True,
    )
    stream = lab.start(
        H1.name,
        ["python3", "-u", "-c", SEQ_SEND, FAR.ip, str(STREAM_PORT), str(rate), str(seconds)],
        "seq-send.log",
    )
    tcp = subprocess.Popen(
        lab.command(
            H1.name,
            "iperf3",
            "-c",
            FAR.ip,
            "-J",
            "-t",
            str(seconds),
            "-i",
            "1",
            "--connect-timeout",
            "5000",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        time.sleep(2.5)
        before = {r["internal"]: r["external"] for r in h1_sessions(lab)}
        gap = lab.restart_swpath()
        after_restart = json.loads(lab.quicknat("stats", "--json"))["counters"]
        out, _ = tcp.communicate(timeout=seconds + 40)
        stream.wait(timeout=seconds + 20)
    finally:
        if tcp.poll() is None:
            tcp.kill()
            tcp.wait()
        lab.stop_process(sink)
    result = json.loads(out)
    assert "error" not in result, f"iperf3 TCP broke: {result['error']}"
    end = result["end"]
    last = result["intervals"][-1]["sum"]
    print(
        f"restart took {gap:.2f} s; TCP {end['sum_received']['bytes']} bytes, "
        f"{last['bytes']} in its last second"
    )
    assert last["bytes"] > 0, "TCP sent nothing after the restart"
    got = json.loads((lab.workdir / "seq-sink.log").read_text().splitlines()[-1])
    sent = seconds * rate
    print(f"UDP: {got['received']} of {sent} datagrams, last {got['last']}, from {got['sources']}")
    assert len(got["sources"]) == 1, f"the stream came from several endpoints: {got['sources']}"
    assert got["last"] >= sent - rate, f"the stream stopped at {got['last']} of {sent}"
    # what was sent during the gap, and up to 2 s more while the new process
    # warms up on a busy 2-vCPU machine (a broken mapping loses the rest:
    # several times as much)
    assert got["received"] >= sent - rate * (gap + 2), (
        f"{sent - got['received']} lost in {gap:.2f} s"
    )
    assert after_restart["sessions_adopted"] >= 3, after_restart  # TCP control + data, UDP
    assert after_restart["sessions_discarded"] == 0, after_restart
    now = {r["internal"]: r["external"] for r in h1_sessions(lab)}
    kept = {k: v for k, v in before.items() if k in now}
    assert kept and all(now[k] == v for k, v in kept.items()), (before, now)


def h1_sessions(lab: Nodes) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(lab.quicknat("sessions", "--json", "--src", H1.ip))
    return rows


# far records which endpoint each numbered datagram came from; h1 sends them
# at a rate from one port, for a time.
SEQ_SINK = """
import json, signal, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("", int(sys.argv[1])))
s.settimeout(float(sys.argv[2]))
seen, sources, last = set(), set(), -1
def done(*_):
    print(json.dumps({"received": len(seen), "last": last, "sources": sorted(sources)}))
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
try:
    while True:
        data, peer = s.recvfrom(64)
        n = int(data)
        seen.add(n)
        sources.add("%s:%d" % peer)
        last = max(last, n)
except OSError:
    done()
"""
SEQ_SEND = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("", 47100))
rate, n = int(sys.argv[3]), int(sys.argv[3]) * int(sys.argv[4])
start = time.monotonic()
for i in range(n):
    s.sendto(b"%d" % i, (sys.argv[1], int(sys.argv[2])))
    time.sleep(max(0.0, start + (i + 1) / rate - time.monotonic()))
"""
STREAM_PORT = 9998


TESTS: dict[str, Test] = {
    "traceroute_udp": test_traceroute_udp,
    "traceroute_icmp": test_traceroute_icmp,
    "iperf3_tcp": test_iperf3_tcp,
    "iperf3_udp": test_iperf3_udp,
    "udp_hole_punching": test_udp_hole_punching,
    "metrics_move": test_metrics_move,
}


def test_ping_over_the_mtu_without_df(lab: Nodes) -> None:
    """RFC 4787 REQ-13 with a real ping: swpath started again with out0's MTU
    at 1,400; 1,600 bytes of echo data without DF (`-M dont`) leave h1 as two
    fragments on its 1,500-byte link, and the first, 1,500 bytes, is over
    out0's MTU: swpath translates it and sends it as two fragments (a
    fragment of a fragment keeps MF), which far puts back together with the
    third and answers. A switch cannot fragment (docs/nat-behavior.md
    MTU-1): this runs on the swpath lab only."""
    from lab.netns_lab import NetnsLab

    assert isinstance(lab, NetnsLab) and lab.commands is not None
    usual = lab.commands
    small = lab.workdir / "nat-out0-mtu-1400.cmds"
    small.write_text(
        re.sub(r"^(interface out0 .*)$", r"\1 mtu 1400", usual.read_text(), flags=re.M)
    )
    lab.commands = small
    lab.restart_swpath(signal.SIGTERM)
    try:
        out = lab.run(H1.name, "ping", "-c", "2", "-W", "2", "-M", "dont", "-s", "1600", FAR.ip)
        counters = json.loads(lab.quicknat("stats", "--json"))["counters"]
    finally:
        lab.commands = usual
        lab.restart_swpath(signal.SIGTERM)
    assert " 0% packet loss" in out, out
    assert counters.get("fragmented") == 2, f"fragmented: {counters.get('fragmented')}, not 2"
    assert counters.get("drop_mtu", 0) == 0, f"drop_mtu: {counters['drop_mtu']}"


SWPATH_TESTS: dict[str, Test] = {
    "swpath_restart_keeps_flows": test_swpath_restart_keeps_flows,
    "ping_over_the_mtu_without_df": test_ping_over_the_mtu_without_df,
}


def test_offload_two_instances_hand_over(lab: Nodes) -> None:
    """Two instances behind the switch (topo/lab/offload_lab.py): h1, the DNAT
    server, pinned to the default instance (sp1), h2 hashed to sp0, each
    mapped from its own block. h2's trace to far needs rtr's time exceeded,
    which the switch sends to the default instance (it does not read the
    quoted port): sp1 hands each to sp0 through the switch. h1 to h2's
    mapping is a hairpin across instances (sp1 translates the source, sp0
    the destination)."""
    from lab.offload_lab import OffloadLab

    assert isinstance(lab, OffloadLab) and lab.instances == 2, "needs the two-instance lab"
    sp0, sp1 = lab.sockets()

    def counters(socket: Path) -> dict[str, int]:
        stats: dict[str, int] = json.loads(lab.quicknat("stats", "--json", socket=socket))[
            "counters"
        ]
        return stats

    before = counters(sp0), counters(sp1)
    check_hops(traceroute_hops(lab, node=H2), gateway=NAT_INSIDE2)
    after = counters(sp0), counters(sp1)
    handed = after[1]["peer_handoff"] - before[1]["peer_handoff"]
    received = after[0]["peer_received"] - before[0]["peer_received"]
    print(f"rtr's errors for h2: {handed} handed over by sp1, {received} received by sp0")
    assert handed >= 2 and received >= handed, (handed, received)

    before = counters(sp0), counters(sp1)
    test_udp_hole_punching(lab)
    after = counters(sp0), counters(sp1)
    crossed = [after[i]["peer_handoff"] - before[i]["peer_handoff"] for i in (0, 1)]
    print(f"hairpins handed over: sp0 {crossed[0]}, sp1 {crossed[1]}")
    assert min(crossed) >= 1, f"a hairpin did not cross instances: {crossed}"
    # both hosts have sessions now (the hole punch's), each on its own instance
    where = {
        host.ip: [
            name
            for name, socket in (("sp0", sp0), ("sp1", sp1))
            if json.loads(lab.quicknat("sessions", "--json", "--src", host.ip, socket=socket))
        ]
        for host in (H1, H2)
    }
    assert where == {H1.ip: ["sp1"], H2.ip: ["sp0"]}, f"hosts' sessions: {where}"
    for row in lab.sessions("--src", H2.ip):
        assert 1024 <= int(row["external"].rsplit(":", 1)[1]) <= 33279, row  # sp0's block


OFFLOAD_TESTS: dict[str, Test] = {
    "offload_takes_established_flows": test_offload_takes_established_flows,
    "offload_ageing_follows_the_switch": test_offload_ageing_follows_the_switch,
    "offload_instance_restart_keeps_switch_sessions": (
        test_offload_instance_restart_keeps_switch_sessions
    ),
    "offload_instance_without_its_state_gets_switch_sessions_back": (
        test_offload_instance_without_its_state_gets_switch_sessions_back
    ),
    "offload_two_instances_hand_over": test_offload_two_instances_hand_over,
    "offload_controller_lists_every_instances_sessions": (
        test_offload_controller_lists_every_instances_sessions
    ),
}


def run_tests(lab: Nodes, names: list[str]) -> tuple[int, int]:
    lab.start_server(FAR.name, ["iperf3", "-s"], IPERF_PORT, "iperf3-far.log")
    passed = failed = 0
    for name in names:
        print(f"\n=== {name}", flush=True)
        start = time.monotonic()
        try:
            TESTS[name](lab)
        except (AssertionError, RuntimeError, subprocess.SubprocessError, ValueError) as exc:
            failed += 1
            detail = str(exc) if isinstance(exc, AssertionError) else traceback.format_exc()
            print(f"FAIL {name}: {detail}", flush=True)
        else:
            passed += 1
            print(f"PASS {name} ({time.monotonic() - start:.1f} s)", flush=True)
    return passed, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--lab",
        choices=["swpath", "bmv2", "offload", "offload-swx", "offload-swx-learn"],
        required=True,
    )
    parser.add_argument("tests", nargs="*", help=f"default: all of {', '.join(TESTS)}")
    args = parser.parse_args()
    learn = args.lab == "offload-swx-learn"
    if learn:
        # the write-based offload tests assume writes: learning has its own
        from lab.e2e_learn import LEARN_TESTS

        TESTS.update(LEARN_TESTS)
    elif args.lab.startswith("offload"):
        TESTS.update(OFFLOAD_TESTS)
    if args.lab == "swpath":
        TESTS.update(SWPATH_TESTS)
    names = args.tests or list(TESTS)
    unknown = [name for name in names if name not in TESTS]
    if unknown:
        parser.error(f"unknown tests {unknown}; known: {', '.join(TESTS)}")
    suite = f"lab-e2e-{args.lab}"
    if args.lab == "swpath":
        from lab import netns_lab as lab_module

        reason = lab_module.missing()
    elif args.lab.startswith("offload"):
        from lab import offload_lab as lab_module  # type: ignore[no-redef]

        switch = "swx" if args.lab.startswith("offload-swx") else "bmv2"
        reason = "; ".join(lab_module.missing(switch)) or None
    else:
        from lab import bmv2_lab as lab_module  # type: ignore[no-redef]

        reason = "; ".join(lab_module.missing()) or None
    if reason:
        print(f"{suite}: skipped: {reason}")
        print(f"{suite}: 0 passed, 0 failed, {len(names)} skipped")
        return 0
    workdir = Path(tempfile.mkdtemp(prefix=f"quicknat-{suite}-"))
    raise_on_signals()
    try:
        settings: dict[str, Any] = {"switch": switch} if args.lab.startswith("offload") else {}
        if learn:
            from lab.e2e_learn import LEARN_TIMEOUTS_S

            settings["learn_timeouts"] = LEARN_TIMEOUTS_S
        with lab_module.running_lab(workdir, **settings) as lab:
            passed, failed = run_tests(lab, names)
    except (RuntimeError, subprocess.SubprocessError) as exc:
        print(f"{suite}: the lab did not come up: {exc}; logs in {workdir}")
        passed, failed = 0, len(names)
    if failed:
        print(f"logs: {workdir}")
    else:  # a run that passed leaves nothing in /tmp
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{suite}: {passed} passed, {failed} failed, 0 skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
