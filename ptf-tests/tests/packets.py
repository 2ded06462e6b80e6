"""Packet builders for the PTF topology (addresses from configs/ptf.toml)."""

from __future__ import annotations

from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet

ROUTER_IN_MAC, ROUTER_OUT_MAC, ROUTER_IN2_MAC = (
    "02:00:00:00:00:01",
    "02:00:00:00:00:02",
    "02:00:00:00:00:03",
)
GATEWAY_MAC = "02:00:00:00:02:fe"
NAT_INSIDE, NAT_OUTSIDE, NAT_INSIDE2 = (
    "10.0.0.1",
    "198.51.100.253",
    "10.0.1.1",
)  # interface addresses
HOST_MAC = {
    "10.0.0.10": "02:00:00:00:01:10",
    "10.0.0.20": "02:00:00:00:01:20",
    "10.0.0.30": "02:00:00:00:01:30",
    "10.0.0.31": "02:00:00:00:01:31",
    "10.0.0.40": "02:00:00:00:01:40",
    "10.0.1.10": "02:00:00:00:03:10",
}
REMOTE_MAC = "02:00:00:00:02:99"  # any outside sender: the NAT routes by IP
PUBLIC_POOL = {"203.0.113.0", "203.0.113.1", "203.0.113.2", "203.0.113.3"}
KEPT_POOL = "203.0.113.12"  # ports 1-65535, preserve_port
REST_POOL = "203.0.113.16"  # ports 6000-6007, no parity
PAYLOAD = b"quicknat-ptf-payload"


def from_inside(
    src: str, dst: str, l4: Packet, ttl: int = 64, router_mac: str = ROUTER_IN_MAC
) -> Packet:
    return Ether(src=HOST_MAC[src], dst=router_mac) / IP(src=src, dst=dst, ttl=ttl) / l4 / PAYLOAD


def from_outside(src: str, dst: str, l4: Packet, ttl: int = 64) -> Packet:
    return Ether(src=REMOTE_MAC, dst=ROUTER_OUT_MAC) / IP(src=src, dst=dst, ttl=ttl) / l4 / PAYLOAD


def to_inside(
    src: str, dst: str, l4: Packet, ttl: int = 63, router_mac: str = ROUTER_IN_MAC
) -> Packet:
    """What the NAT must deliver to an inside host (fully known: compared exactly)."""
    return Ether(src=router_mac, dst=HOST_MAC[dst]) / IP(src=src, dst=dst, ttl=ttl) / l4 / PAYLOAD


def tcp(sport: int, dport: int, flags: str = "S") -> Packet:
    return TCP(sport=sport, dport=dport, flags=flags, seq=1000)


def udp(sport: int, dport: int) -> Packet:
    return UDP(sport=sport, dport=dport)


def echo(identifier: int, seq: int = 1, reply: bool = False) -> Packet:
    return ICMP(type=0 if reply else 8, id=identifier, seq=seq)


def checksums_ok(pkt: Packet) -> bool:
    """Recompute every checksum scapy knows and compare with what arrived.
    A UDP checksum of 0 means "none" (RFC 768) and is accepted as such; a
    fragment's transport checksum covers its whole datagram, so only its
    header checksum is checked."""
    if IP not in pkt:
        return True
    rebuilt = pkt.copy()
    del rebuilt[IP].chksum
    if pkt[IP].flags.MF or pkt[IP].frag:
        return IP(bytes(rebuilt[IP]))[IP].chksum == pkt[IP].chksum
    for layer in (TCP, UDP, ICMP):
        if layer in rebuilt:
            if layer is UDP and pkt[UDP].chksum == 0:
                continue
            del rebuilt[layer].chksum
    rebuilt = Ether(bytes(rebuilt))
    fields = [(IP, "chksum")] + [(layer, "chksum") for layer in (TCP, UDP, ICMP) if layer in pkt]
    return all(
        getattr(rebuilt[layer], name) == getattr(pkt[layer], name)
        for layer, name in fields
        if not (layer is UDP and pkt[UDP].chksum == 0)
    )
