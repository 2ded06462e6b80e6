"""IPFIX messages read by a decoder nobody here wrote: Wireshark's tshark
(Debian's package, which `make deps` installs). The controller's and
swpath's tests both read what their exporter sent with it
(controller/tests/test_ipfix_tshark.py, swpath/tests/sp_e2e.py), beside
quicknat.ipfix.parse_ipfix, so a mistake the two share cannot pass."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

TSHARK = shutil.which("tshark")
MISSING = "tshark is not installed (make deps installs Debian's package)"
COLLECTOR_PORT = 4739  # IANA's IPFIX port: decoded as cflow (-d)


def write_pcap(messages: list[bytes], path: Path) -> None:
    """The messages as UDP datagrams to the IPFIX port, in order."""
    udp = UDP(sport=50000, dport=COLLECTOR_PORT)
    wrpcap(str(path), [Ether() / IP(src="127.0.0.1", dst="127.0.0.1") / udp / m for m in messages])


def _tshark(pcap: Path, *args: str) -> str:
    if TSHARK is None:
        raise RuntimeError(MISSING)
    return subprocess.run(
        [TSHARK, "-r", str(pcap), "-d", f"udp.port=={COLLECTOR_PORT},cflow", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout


def decoded_messages(pcap: Path) -> list[dict[str, Any]]:
    """Each message as tshark decoded it: "od_id", "sequence" and
    "records", each record the fields of one "Flow" (cflow.nat_event,
    cflow.srcaddr, ...), in order."""
    messages = []
    for packet in json.loads(_tshark(pcap, "-T", "json")):
        cflow = packet["_source"]["layers"]["cflow"]
        records = [
            flow
            for key, data_set in cflow.items()
            if key.startswith("Set ")
            for name, flow in data_set.items()
            if name.startswith("Flow ")
        ]
        messages.append(
            {"od_id": cflow["cflow.od_id"], "sequence": cflow["cflow.sequence"], "records": records}
        )
    return messages


def event_names(pcap: Path) -> list[str]:
    """natEvent of each record as tshark names it ("NAT44 session create
    (4)"): its own table of RFC 8158's values."""
    out = _tshark(pcap, "-V")
    return [line.split(":", 1)[1].strip() for line in out.splitlines() if "Nat Event:" in line]
