"""swpath's NAT events to collectors on loopback (RFC 5424 syslog, IPFIX),
as sp_e2e.py runs swpath (its helpers): read by the controller's reader
(quicknat/ipfix.py) and by tshark (lab/ipfix_decode.py).

Run (root): pytest swpath/tests/sp_e2e_events.py, QUICKNAT_SWPATH as for
sp_e2e.py.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab import ipfix_decode
from quicknat.addr import parse_ipv4
from quicknat.ipfix import parse_ipfix
from scapy.layers.inet import UDP
from sp_e2e import ONE_PORT, PREFIX, eq, from_host, run


@pytest.fixture(autouse=True, scope="module")
def _runtime_dir() -> Iterator[None]:
    yield
    shutil.rmtree(f"/var/run/dpdk/{PREFIX}", ignore_errors=True)


def _received(sock: socket.socket) -> list[bytes]:
    got = []
    sock.settimeout(0.5)
    try:
        while True:
            got.append(sock.recv(4096))
    except TimeoutError:
        return got


def test_events_to_collectors(tmp_path: Path) -> None:
    """RFC 5424 and IPFIX over UDP to collectors on loopback: the mapping's
    created and deleted events and (ipfix_sessions) its session's, read by
    the controller's own reader (quicknat/ipfix.py), so both paths send the
    same bytes, and by tshark (lab/ipfix_decode.py) where it is installed:
    records gathered into messages (the flush interval; the exit sends what
    waits), in the observation domain and as the natInstanceID the command
    names, under the SD-ID of the operator's enterprise number."""
    syslog = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ipfix = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for s in (syslog, ipfix):
            s.bind(("127.0.0.1", 0))
        cmds = ONE_PORT + (
            "timeouts udp 1\nlogging events none "
            f"syslog_server 127.0.0.1:{syslog.getsockname()[1]} "
            f"ipfix_collector 127.0.0.1:{ipfix.getsockname()[1]} ipfix_domain 5 nat_instance 2 "
            "ipfix_sessions true syslog_enterprise 54321\n"
        )
        inside = [from_host("10.0.0.2", "8.8.8.8") / UDP(sport=5000, dport=53)]
        r = run(tmp_path, cmds, [inside, []], idle_ms=2500)
        eq((r.counters["mappings_created"], r.counters["mappings_freed"]), (1, 1))
        messages = [m.decode() for m in _received(syslog)]
        eq(len(messages), 2, f"syslog messages (mappings only) {messages}")
        for message, event in zip(messages, ("created", "deleted"), strict=True):
            assert message.startswith("<30>1 "), message
            assert " quicknat-swpath " in message and " MAPPING [nat@54321 " in message, message
            assert (
                f'event="{event}" proto="udp" inside="10.0.0.2:5000" outside="203.0.113.1:40000"]'
            ) in message, message
            assert message.endswith(f"mapping {event} udp 10.0.0.2:5000 203.0.113.1:40000")
        datagrams = _received(ipfix)
        records: list[dict[str, int]] = []
        templates: dict[int, list[tuple[int, int]]] = {}
        for data in datagrams:
            message = parse_ipfix(data, templates)
            eq((message.sequence, message.domain), (len(records), 5), "sequence and domain")
            records += message.records
        eq(sorted(rec["230"] for rec in records), [4, 5, 8, 9], "natEvent: session, BIB")
        eq({rec["463"] for rec in records}, {2}, "natInstanceID")
        for rec in records:
            eq((rec["4"], rec["8"], rec["7"]), (17, parse_ipv4("10.0.0.2"), 5000))
            eq((rec["225"], rec["227"]), (parse_ipv4("203.0.113.1"), 40000))
        for rec in (r for r in records if r["230"] in (4, 5)):
            eq((rec["12"], rec["11"]), (parse_ipv4("8.8.8.8"), 53), "session destination")
        _tshark_agrees(datagrams, tmp_path)
    finally:
        syslog.close()
        ipfix.close()


def _tshark_agrees(datagrams: list[bytes], tmp: Path) -> None:
    """What tshark decodes of swpath's messages: the same events."""
    if ipfix_decode.TSHARK is None:
        print(f"IPFIX through tshark skipped: {ipfix_decode.MISSING}")
        return
    pcap = tmp / "ipfix.pcap"
    ipfix_decode.write_pcap(datagrams, pcap)
    decoded = ipfix_decode.decoded_messages(pcap)
    eq({m["od_id"] for m in decoded}, {"5"}, "tshark: observation domain")
    flows = [f for m in decoded for f in m["records"]]
    eq(sorted(int(f["cflow.nat_event"]) for f in flows), [4, 5, 8, 9], "tshark: natEvent")
    eq({f["cflow.nat_instanceid"] for f in flows}, {"2"}, "tshark: natInstanceID")
    sessions = [f for f in flows if f["cflow.nat_event"] in ("4", "5")]
    eq({(f["cflow.dstaddr"], f["cflow.dstport"]) for f in sessions}, {("8.8.8.8", "53")})
    eq(
        {(f["cflow.srcaddr"], f["cflow.post_natsource_ipv4_address"]) for f in flows},
        {("10.0.0.2", "203.0.113.1")},
        "tshark: inside and translated source",
    )
