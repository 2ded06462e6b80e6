"""A network namespace with one veth pair per port under test.

The test side (PTF, a traffic generator) owns the `qnpN` ends; the data path
under test (BMv2 or swpath) owns the `qnsN` ends. Everything lives in one
namespace, so deleting it removes every veth even when a run is killed, and
nothing touches the host's interfaces.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

NAMESPACE = "qn-ptf"


def run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=30)


def in_namespace(namespace: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", namespace, *args]


@dataclass
class Topology:
    ports: int = 3
    namespace: str = NAMESPACE

    def ptf_end(self, index: int) -> str:
        return f"qnp{index}"

    def target_end(self, index: int) -> str:
        return f"qns{index}"

    def create(self) -> None:
        self.delete()  # a namespace left over from a killed run
        run("ip", "netns", "add", self.namespace)
        ns = self.namespace
        run(*in_namespace(ns, "ip", "link", "set", "lo", "up"))
        for i in range(self.ports):
            a, b = self.ptf_end(i), self.target_end(i)
            run(*in_namespace(ns, "ip", "link", "add", a, "type", "veth", "peer", "name", b))
            for dev in (a, b):
                # No IPv6 chatter (router solicitations, MLD) on the test ports,
                # and no offloads: every packet is whole and checksummed on the wire.
                run(*in_namespace(ns, "sysctl", "-q", "-w", f"net.ipv6.conf.{dev}.disable_ipv6=1"))
                run(*in_namespace(ns, "ip", "link", "set", dev, "mtu", "9000", "up"))
                subprocess.run(
                    in_namespace(
                        ns,
                        "ethtool",
                        "-K",
                        dev,
                        "tx",
                        "off",
                        "rx",
                        "off",
                        "tso",
                        "off",
                        "gso",
                        "off",
                        "gro",
                        "off",
                    ),
                    capture_output=True,
                    timeout=30,
                    check=False,
                )

    def delete(self) -> None:
        subprocess.run(
            ["ip", "netns", "del", self.namespace], capture_output=True, timeout=30, check=False
        )
