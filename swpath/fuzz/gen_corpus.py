#!/usr/bin/env python3
"""Write the seed corpus of fuzz_swpath: one valid frame of each kind.

Each file is byte 0 (bit 0: outside port; bits 1-2: copies - 1; bits 3-7:
clock steps) followed by the Ethernet frame, for the configuration in
fuzz_swpath.c. Usage: gen_corpus.py DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_RR, IPOption_SSRR
from scapy.layers.l2 import ARP, Ether

MAC_IN = "02:00:00:00:00:01"
MAC_OUT = "02:00:00:00:00:02"
H2 = "02:00:00:00:10:02"
GW = "02:00:00:00:00:fe"
INSIDE, OUTSIDE = 0, 1


def ein() -> Ether:
    return Ether(src=H2, dst=MAC_IN)


def eout() -> Ether:
    return Ether(src=GW, dst=MAC_OUT)


def seeds() -> dict[str, tuple[int, bytes]]:
    tcp = IP(src="10.0.0.2", dst="192.0.2.80") / TCP(sport=40000, dport=80, flags="S")
    udp = IP(src="10.0.0.2", dst="192.0.2.53") / UDP(sport=5353, dport=53) / b"q"
    # the reply to a session 10.0.0.2 would get (port unknown to the fuzzer)
    quoted = IP(src="203.0.113.1", dst="192.0.2.53") / UDP(sport=1024, dport=53)
    frames = {
        "tcp-syn-in": (INSIDE | 2, ein() / tcp),
        "udp-in": (INSIDE | 6, ein() / udp),
        "udp-tiny-pool": (INSIDE, ein() / IP(src="10.0.0.130", dst="192.0.2.1") / UDP()),
        "icmp-echo-in": (INSIDE, ein() / IP(src="10.0.0.2", dst="192.0.2.1") / ICMP(id=7)),
        "icmp-echo-router": (INSIDE, ein() / IP(src="10.0.0.2", dst="10.0.0.1") / ICMP()),
        "icmp-error-in": (
            INSIDE,
            ein()
            / IP(src="10.0.0.2", dst="192.0.2.53")
            / ICMP(type=3, code=3)
            / IP(src="192.0.2.53", dst="10.0.0.2")
            / UDP(sport=53, dport=5353),
        ),
        "icmp-error-out": (
            OUTSIDE,
            eout() / IP(src="192.0.2.9", dst="203.0.113.1") / ICMP(type=11) / quoted,
        ),
        "udp-out-unsolicited": (
            OUTSIDE,
            eout() / IP(src="192.0.2.53", dst="203.0.113.1") / UDP(sport=53, dport=1024),
        ),
        "tcp-dnat-out": (
            OUTSIDE | 2,
            eout() / IP(src="192.0.2.7", dst="203.0.113.11") / TCP(sport=1234, dport=443),
        ),
        "udp-dnat-range": (
            OUTSIDE,
            eout() / IP(src="192.0.2.7", dst="203.0.113.40") / UDP(sport=9, dport=9),
        ),
        "hairpin": (
            INSIDE,
            ein() / IP(src="10.0.0.2", dst="203.0.113.11") / TCP(sport=999, dport=443),
        ),
        "tcp-rst-fin": (INSIDE, ein() / IP(src="10.0.0.2", dst="192.0.2.80") / TCP(flags="FR")),
        "arp-request-in": (
            INSIDE,
            Ether(src=H2, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc="10.0.0.2", pdst="10.0.0.1"),
        ),
        "arp-request-pool": (
            OUTSIDE,
            Ether(src=GW, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc="198.51.100.254", pdst="203.0.113.1"),
        ),
        "arp-reply-out": (
            OUTSIDE,
            Ether(src=GW, dst=MAC_OUT) / ARP(op=2, psrc="198.51.100.254", pdst="198.51.100.1"),
        ),
        # another MAC claiming our addresses: RFC 5227's conflict and defence
        "arp-conflict-in": (
            INSIDE,
            Ether(src=H2, dst="ff:ff:ff:ff:ff:ff")
            / ARP(hwsrc=H2, psrc="10.0.0.1", pdst="10.0.0.2"),
        ),
        "arp-conflict-pool": (
            OUTSIDE,
            Ether(src=GW, dst="ff:ff:ff:ff:ff:ff")
            / ARP(op=2, hwsrc=GW, psrc="203.0.113.1", pdst="203.0.113.1"),
        ),
        "fragment-first": (
            INSIDE,
            ein() / IP(src="10.0.0.2", dst="192.0.2.1", flags="MF") / UDP() / (b"x" * 16),
        ),
        "fragment-later": (
            INSIDE,
            ein() / IP(src="10.0.0.2", dst="192.0.2.1", frag=3, proto=17) / (b"x" * 16),
        ),
        "ip-options-rr": (
            INSIDE,
            ein() / IP(src="10.0.0.2", dst="192.0.2.1", options=[IPOption_RR()]) / UDP(),
        ),
        "ip-options-ssrr": (
            INSIDE,
            ein()
            / IP(src="10.0.0.2", dst="192.0.2.1", options=[IPOption_SSRR(routers=["192.0.2.9"])])
            / UDP(),
        ),
        # over out0's MTU (576): fragments without DF (RFC 4787 REQ-13), with
        # options (record route in the first only); fragmentation needed with
        "udp-over-mtu": (
            INSIDE,
            ein()
            / IP(src="10.0.0.2", dst="192.0.2.1", options=[IPOption_RR()])
            / UDP(sport=5353, dport=53)
            / (b"f" * 1200),
        ),
        "udp-over-mtu-df": (
            INSIDE,
            ein() / IP(src="10.0.0.2", dst="192.0.2.1", flags="DF") / UDP() / (b"d" * 1200),
        ),
        "ttl-1": (INSIDE, ein() / IP(src="10.0.0.2", dst="192.0.2.1", ttl=1) / UDP()),
        "udp-zero-csum": (INSIDE, ein() / IP(src="10.0.0.2", dst="192.0.2.1") / UDP(chksum=0)),
    }
    return {name: (ctl, bytes(frame)) for name, (ctl, frame) in frames.items()}


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "corpus")
    out.mkdir(parents=True, exist_ok=True)
    for name, (ctl, frame) in seeds().items():
        (out / f"seed-{name}").write_bytes(bytes([ctl]) + frame)
    return 0


if __name__ == "__main__":
    sys.exit(main())
