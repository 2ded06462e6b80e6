"""The labs' one topology: nodes, links, addresses and routes around the NAT.

Every lab builds it: netns_lab.py out of named network namespaces with the NAT
on quicknat-swpath (offload_lab.py adds a P4 switch and slow-path instances),
bmv2_lab.py in Mininet with the NAT on BMv2. The NAT's
side of each link is a data-plane port of topo/lab.toml, which also holds the
NAT's addresses, neighbours (these MACs) and the route through rtr.

  h1  10.0.0.10 --- port 1 in0 [     ]
  h2  10.0.1.10 --- port 2 in1 [ NAT ] out0 port 3 --- rtr: bridge br0, 198.51.100.254
                                                          |       |
                                      srv 198.51.100.10 --+       +-- 192.0.2.1 --- far 192.0.2.10

The outside link (198.51.100.0/24) is the bridge in rtr, so the NAT, srv and
rtr share it as on an upstream LAN; rtr routes on to far's network, one hop
beyond the NAT, and back to the pool (203.0.113.0/30) through the NAT.
This module is data and plain functions only: no I/O, any Python 3.11.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[1] / "lab.toml"
NAT = "nat"  # the node name of the NAT's side of a link


@dataclass(frozen=True)
class End:
    node: str  # a Node's name, or NAT
    interface: str  # the interface's name in that node (for NAT: the config's name)
    mac: str


@dataclass(frozen=True)
class Link:
    a: End
    b: End


@dataclass(frozen=True)
class Node:
    """A host or router. `commands` configure it once its links are up; each is
    an argument list run inside the node."""

    name: str
    ip: str  # its address for the tests and the demo
    commands: tuple[tuple[str, ...], ...]


def _host(name: str, interface: str, address: str, gateway: str) -> Node:
    return Node(
        name,
        address.split("/")[0],
        (
            ("ip", "addr", "add", address, "dev", interface),
            ("ip", "route", "add", "default", "via", gateway),
        ),
    )


# ICMP errors unthrottled (Linux sends at most one per second and peer by
# default), so that every traceroute probe gets its answer.
_NO_ICMP_RATE_LIMIT = ("sysctl", "-q", "-w", "net.ipv4.icmp_ratelimit=0")

H1 = _host("h1", "h1-eth0", "10.0.0.10/24", "10.0.0.1")
H2 = _host("h2", "h2-eth0", "10.0.1.10/24", "10.0.1.1")
SRV = _host("srv", "srv-eth0", "198.51.100.10/24", "198.51.100.1")
RTR = Node(
    "rtr",
    "198.51.100.254",
    (
        ("ip", "link", "add", "br0", "address", "02:00:00:00:03:fe", "type", "bridge"),
        ("sysctl", "-q", "-w", "net.ipv6.conf.br0.disable_ipv6=1"),
        ("ip", "link", "set", "rtr-eth0", "master", "br0"),
        ("ip", "link", "set", "rtr-eth1", "master", "br0"),
        # A bridge forwards frames, and nothing more: where the host has
        # br_netfilter (the kernel's default for every new namespace once it
        # is loaded), bridged IPv4 would also cross rtr's netfilter hooks and
        # conntrack, a cost on every packet to srv that a switch does not have
        # and that depends on the host. -e: no such keys without br_netfilter.
        ("sysctl", "-q", "-e", "-w", "net.bridge.bridge-nf-call-iptables=0"),
        ("sysctl", "-q", "-e", "-w", "net.bridge.bridge-nf-call-ip6tables=0"),
        ("sysctl", "-q", "-e", "-w", "net.bridge.bridge-nf-call-arptables=0"),
        ("ip", "link", "set", "br0", "up"),
        ("ip", "addr", "add", "198.51.100.254/24", "dev", "br0"),
        ("ip", "addr", "add", "192.0.2.1/24", "dev", "rtr-eth2"),
        ("ip", "route", "add", "203.0.113.0/30", "via", "198.51.100.1"),
        ("sysctl", "-q", "-w", "net.ipv4.ip_forward=1"),
        _NO_ICMP_RATE_LIMIT,
    ),
)
FAR = Node(
    "far",
    "192.0.2.10",
    (*_host("far", "far-eth0", "192.0.2.10/24", "192.0.2.1").commands, _NO_ICMP_RATE_LIMIT),
)
NODES = (H1, H2, SRV, RTR, FAR)

# The NAT's ends carry its MACs of lab.toml; the others those of its [[neighbor]]s.
LINKS = (
    Link(End("h1", "h1-eth0", "02:00:00:00:01:10"), End(NAT, "in0", "02:00:00:00:00:01")),
    Link(End("h2", "h2-eth0", "02:00:00:00:02:10"), End(NAT, "in1", "02:00:00:00:00:02")),
    Link(End("rtr", "rtr-eth0", "02:00:00:00:03:f0"), End(NAT, "out0", "02:00:00:00:00:03")),
    Link(End("srv", "srv-eth0", "02:00:00:00:03:10"), End("rtr", "rtr-eth1", "02:00:00:00:03:f1")),
    Link(End("far", "far-eth0", "02:00:00:00:04:10"), End("rtr", "rtr-eth2", "02:00:00:00:04:01")),
)


def nat_ports() -> dict[int, str]:
    """Data-plane port number -> the NAT's interface name, as lab.toml says."""
    with CONFIG.open("rb") as f:
        interfaces = tomllib.load(f)["interface"]
    return {int(i["port"]): str(i["name"]) for i in interfaces}
