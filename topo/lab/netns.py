"""Network namespaces and veth pairs: the generic helpers every lab uses, and the
PTF topology built from them.

PTF topology: one namespace with one veth pair per port under test. The test
side (PTF, a traffic generator) owns the `qnpN` ends; the data path under test
(BMv2 or swpath) owns the `qnsN` ends. In offload mode one more pair joins the
switch (`qnsp`) to its slow-path instance (`qnsp-sp`). Everything lives in one
namespace, so deleting it removes every veth even when a run is killed, and
nothing touches the host's interfaces.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

NAMESPACE = "qn-ptf"


def run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=30)


def in_namespace(namespace: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", namespace, *args]


def create_namespace(namespace: str) -> None:
    """A fresh namespace with its loopback up (one left over from a killed run
    is deleted first)."""
    delete_namespace(namespace)
    run("ip", "netns", "add", namespace)
    run(*in_namespace(namespace, "ip", "link", "set", "lo", "up"))


def delete_namespace(namespace: str) -> None:
    """Deleting a namespace also deletes every veth end in it (and so its peer)."""
    subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=30, check=False)


def add_veth(namespace: str, name: str, peer_namespace: str, peer: str) -> None:
    run("ip", "-n", namespace, "link", "add", name, "type", "veth", "peer", "name", peer)
    if peer_namespace != namespace:
        run("ip", "-n", namespace, "link", "set", peer, "netns", peer_namespace)


def set_up_plain(namespace: str, dev: str, mtu: int = 1500, mac: str | None = None) -> None:
    set_up_plain_in(functools.partial(in_namespace, namespace), dev, mtu, mac)


def set_up_plain_in(
    inside: Callable[..., list[str]], dev: str, mtu: int = 1500, mac: str | None = None
) -> None:
    """Bring a veth end up with no IPv6 chatter (router solicitations, MLD) and
    no offloads: a kernel sender then puts every packet whole and checksummed on
    the wire, and an 802.1Q tag stays in the frame (offload mode's slow-path
    tag, p4src/README.md) instead of moving to the socket's metadata, which is
    what a data path reading raw frames (af_packet, BMv2, PTF) needs.
    `inside(*args)` is the argument list that runs args where `dev` is."""
    run(*inside("sysctl", "-q", "-w", f"net.ipv6.conf.{dev}.disable_ipv6=1"))
    if mac is not None:
        run(*inside("ip", "link", "set", dev, "address", mac))
    run(*inside("ip", "link", "set", dev, "mtu", str(mtu), "up"))
    offloads = ["tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"]
    offloads += ["rxvlan", "off", "txvlan", "off"]
    # Best effort: without ethtool (or for a feature a kernel lacks) the rest still works.
    subprocess.run(
        inside("ethtool", "-K", dev, *offloads), capture_output=True, timeout=30, check=False
    )


# The switch's port toward the slow-path instance in offload mode (topo/lab's too).
SLOW_PATH_PORT = 9


@dataclass
class Topology:
    ports: int = 3
    namespace: str = NAMESPACE
    # Offload mode: a veth from the switch's SLOW_PATH_PORT to an instance.
    slow_path: bool = False
    slow_path_switch_end = "qnsp"
    slow_path_instance_end = "qnsp-sp"

    def ptf_end(self, index: int) -> str:
        return f"qnp{index}"

    def target_end(self, index: int) -> str:
        return f"qns{index}"

    def target_ports(self) -> dict[int, str]:
        """The data path's port numbers (those of configs/ptf.toml, from 1) on
        the `qnsN` ends: PTF port N faces the data path's port N + 1."""
        return {i + 1: self.target_end(i) for i in range(self.ports)}

    def switch_ports(self) -> dict[int, str]:
        """The switch's ports: the data path's, and the slow-path link's."""
        extra = {SLOW_PATH_PORT: self.slow_path_switch_end} if self.slow_path else {}
        return {**self.target_ports(), **extra}

    def create(self) -> None:
        create_namespace(self.namespace)
        pairs = [(self.ptf_end(i), self.target_end(i)) for i in range(self.ports)]
        if self.slow_path:
            pairs.append((self.slow_path_switch_end, self.slow_path_instance_end))
        for a, b in pairs:
            add_veth(self.namespace, a, self.namespace, b)
            for dev in (a, b):
                set_up_plain(self.namespace, dev, mtu=9000)

    def delete(self) -> None:
        delete_namespace(self.namespace)
