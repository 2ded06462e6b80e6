"""What the controller exports over IPFIX, read by a decoder nobody here
wrote: Wireshark's (tshark, Debian's package; `make deps` installs it).

The NAT core opens and closes sessions and runs a pool dry; the event
logger sends to a collector socket on loopback; the datagrams it gets go to
a pcap, and tshark decodes them with the templates they carry
(lab/ipfix_decode.py). Skipped, with the reason, where tshark is missing."""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator
from pathlib import Path

import configs
import pytest
from lab import ipfix_decode
from quicknat.addr import parse_ipv4 as ip
from quicknat.config import parse_config
from quicknat.config.model import Zone
from quicknat.events import EventLogger
from quicknat.nat.core import Nat, Refused
from quicknat.nat.session import FlowKey

pytestmark = pytest.mark.skipif(ipfix_decode.TSHARK is None, reason=ipfix_decode.MISSING)


@pytest.fixture
def collector() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(2)
    yield sock
    sock.close()


def run_the_nat(collector: socket.socket) -> list[bytes]:
    """Sessions on a one-port pool: two opened (one host, two remotes on its
    mapping), a second host refused (port and pool exhaustion), then both
    closed; returns the datagrams the collector got."""
    host, port = collector.getsockname()
    config = parse_config(
        configs.text("zones", "snat_pool_one_port")
        + f'[logging]\nipfix_collector = "{host}:{port}"\nipfix_domain = 42\n'
        + "ipfix_sessions = true\n"
        + "[filtering]\nudp = 'endpoint-independent'\n"
    )
    events = EventLogger(config.logging)
    nat = Nat(
        config,
        rng=random.Random(1),
        on_mapping=events,
        on_quota=events.quota,
        on_session=events.session,
        on_exhausted=events.exhausted,
    )
    dns = nat.new_flow(Zone.INSIDE, FlowKey(17, ip("10.0.0.1"), ip("8.8.8.8"), 4000, 53), 0)
    ntp = nat.new_flow(Zone.INSIDE, FlowKey(17, ip("10.0.0.1"), ip("9.9.9.9"), 4000, 123), 0)
    with pytest.raises(Refused):
        nat.new_flow(Zone.INSIDE, FlowKey(17, ip("10.0.0.2"), ip("8.8.8.8"), 5000, 53), 1)
    nat.remove(dns, 2)
    nat.remove(ntp, 2)
    events.close()  # sends the records waiting, as the controller's stop does
    return [collector.recv(2048)]


def test_tshark_decodes_every_event_with_instance_and_domain(
    collector: socket.socket, tmp_path: Path
) -> None:
    messages = run_the_nat(collector)
    pcap = tmp_path / "ipfix.pcap"
    ipfix_decode.write_pcap(messages, pcap)
    (message,) = ipfix_decode.decoded_messages(pcap)
    assert message["od_id"] == "42", "the observation domain of [logging] ipfix_domain"
    records = message["records"]
    assert len(records) == 8, "several records in one message"
    assert all(r["cflow.nat_instanceid"] == "0" for r in records)
    by_event: dict[str, list[dict[str, str]]] = {}
    for r in records:
        by_event.setdefault(r["cflow.nat_event"], []).append(r)
    assert sorted((e, len(rs)) for e, rs in by_event.items()) == [
        ("12", 1),  # NAT ports exhausted
        ("3", 1),  # NAT addresses exhausted
        ("4", 2),  # NAT44 session create
        ("5", 2),  # NAT44 session delete
        ("8", 1),  # NAT44 BIB create
        ("9", 1),  # NAT44 BIB delete
    ]
    sessions = [(r["cflow.dstaddr"], r["cflow.dstport"]) for r in by_event["4"]]
    assert sessions == [("8.8.8.8", "53"), ("9.9.9.9", "123")]
    for r in by_event["4"] + by_event["5"] + by_event["8"]:
        assert (r["cflow.protocol"], r["cflow.srcaddr"], r["cflow.srcport"]) == (
            "17",
            "10.0.0.1",
            "4000",
        )
        assert r["cflow.post_natsource_ipv4_address"] == "203.0.113.1"
        assert r["cflow.post_naptsource_transport_port"] == "2000"
    assert by_event["12"][0]["cflow.post_natsource_ipv4_address"] == "203.0.113.1"
    assert by_event["3"][0]["cflow.nat_pool_id"] == "1"
    names = set(ipfix_decode.event_names(pcap))
    assert names == {
        "NAT44 BIB create (8)",
        "NAT44 BIB delete (9)",
        "NAT44 session create (4)",
        "NAT44 session delete (5)",
        "NAT Addresses exhausted (3)",
        "NAT ports exhausted (12)",
    }
