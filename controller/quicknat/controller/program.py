"""What the QuickNAT P4 program (p4src/) expects from its controller.

The names and enum values here are the program's contract, documented in
p4src/README.md; P4Info lookups fail at start-up if they drift apart.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from pathlib import Path

from finsy.proto import p4r

from quicknat.addr import Prefix, format_ipv4
from quicknat.config.model import Config, Interface, Zone
from quicknat.nat.session import FlowKey, Rewrite, Session
from quicknat.p4rt.entities import table_entry
from quicknat.p4rt.p4info import P4Info
from quicknat.rules import DnatTo, RuleKind, SnatToAddress

REPO = Path(__file__).resolve().parents[3]
P4INFO = REPO / "p4src" / "build" / "quicknat.p4info.txtpb"
BMV2_JSON = REPO / "p4src" / "build" / "quicknat.json"
CPU_PORT = 255
ZONE_VALUE = {Zone.INSIDE: 1, Zone.OUTSIDE: 2}


class PuntReason(enum.IntEnum):
    NEW_FLOW = 1
    NEW_FLOW_DNAT = 2
    ARP = 3
    ICMP_ERROR = 4


class PacketOutMode(enum.IntEnum):
    DIRECT = 0
    INJECT = 1


class DropReason(enum.IntEnum):
    """Index of the data plane's drop_counter (p4src/include/define.p4)."""

    PARSER_ERROR = 1
    IPV4_CHECKSUM = 2
    UNKNOWN_PORT = 3
    UNSUPPORTED_ETHERTYPE = 4
    ARP_IGNORED = 5
    NOT_UNICAST = 6
    IPV4_FRAGMENT = 7
    UNSUPPORTED_L4 = 8
    NO_MAPPING = 9
    LOCAL_ADDRESS = 10
    TTL_EXPIRED = 11
    NO_ROUTE = 12
    PUNT_RATE_LIMITED = 13
    PUNT_LOOP = 14
    BAD_PACKET_OUT = 15
    NO_DECISION = 16


@dataclass(frozen=True, slots=True)
class Pipeline:
    p4info: P4Info
    device_config: bytes
    cookie: int

    @classmethod
    def load(cls, p4info_path: Path = P4INFO, json_path: Path = BMV2_JSON) -> Pipeline:
        device_config = json_path.read_bytes()
        text = p4info_path.read_bytes()
        # The cookie identifies this exact program: a restarted controller that
        # finds it installed keeps the switch's tables instead of wiping them.
        cookie = int.from_bytes(hashlib.sha256(text + device_config).digest()[:8], "big")
        return cls(P4Info.load(p4info_path), device_config, cookie)


def mac_value(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


class ConfigMismatch(ValueError):
    """The configuration lacks something the P4 path needs."""


def _ported(interface: Interface) -> int:
    if interface.port is None:
        raise ConfigMismatch(f"interface {interface.name}: the P4 path needs its 'port'")
    return interface.port


def _mac(interface: Interface) -> int:
    if interface.mac is None:
        raise ConfigMismatch(f"interface {interface.name}: the P4 path needs its 'mac'")
    return mac_value(interface.mac)


def static_entries(p4info: P4Info, config: Config) -> list[p4r.TableEntry]:
    """Everything the configuration puts in the switch before any flow: zones,
    ARP answers (own addresses, and proxy ARP for pool and DNAT addresses on the
    outside), own addresses, routes, and the prefixes whose misses need NAT."""
    entries: list[p4r.TableEntry] = []
    by_name = {i.name: i for i in config.interfaces}
    for interface in config.interfaces:
        port = _ported(interface)
        entries.append(
            table_entry(
                p4info,
                "port_zone",
                {"ingress_port": port},
                "set_zone",
                {"zone": ZONE_VALUE[interface.zone]},
            )
        )
        if interface.address is not None:
            entries.append(
                table_entry(
                    p4info,
                    "arp_reply",
                    {"ingress_port": port, "arp_target_ip": interface.address.address},
                    "reply_arp",
                    {"mac": _mac(interface)},
                )
            )
            entries.append(
                table_entry(
                    p4info, "local_address", {"ipv4_dst": interface.address.address}, "mark_local"
                )
            )
    for interface in config.interfaces:
        if interface.zone is Zone.OUTSIDE:
            for address in sorted(public_addresses(config)):
                entries.append(
                    table_entry(
                        p4info,
                        "arp_reply",
                        {"ingress_port": _ported(interface), "arp_target_ip": address},
                        "reply_arp",
                        {"mac": _mac(interface)},
                    )
                )
    neighbors = {(n.interface, n.address): n.mac for n in config.neighbors}
    for route in config.routes:
        interface = by_name[route.interface]
        if route.via is None:
            continue  # connected: hosts are reached through their /32 neighbour routes
        mac = neighbors.get((route.interface, route.via))
        if mac is None:
            raise ConfigMismatch(
                f"route {route.prefix}: next hop {format_ipv4(route.via)} "
                f"needs a [[neighbor]] entry on {route.interface}"
            )
        entries.append(_route(p4info, route.prefix, interface, mac))
    for n in config.neighbors:
        entries.append(_route(p4info, Prefix(n.address, 32), by_name[n.interface], n.mac))
    scopes = {("snat_scope", "ipv4_src", r.prefix) for r in config.rules if r.kind is RuleKind.SNAT}
    scopes |= {
        ("dnat_scope", "ipv4_dst", r.prefix) for r in config.rules if r.kind is RuleKind.DNAT
    }
    if any(
        mode.value != "address-and-port-dependent"
        for mode in (config.filtering.udp, config.filtering.tcp, config.filtering.icmp)
    ):
        # Inbound packets to a mapped pool port may open a session (RFC 4787
        # REQ-8 filtering); the controller decides, so they must reach it.
        scopes |= {("dnat_scope", "ipv4_dst", p) for pool in config.pools for p in pool.addresses}
    for table, field, prefix in sorted(scopes, key=lambda s: (s[0], s[2])):
        entries.append(
            table_entry(
                p4info, table, {field: (prefix.address, prefix.length)}, "mark_nat_required"
            )
        )
    return entries


def public_addresses(config: Config) -> set[int]:
    """Addresses the NAT answers ARP for on the outside: pools, SNAT `to` addresses,
    and DNAT published addresses."""
    addresses: set[int] = set()
    for pool in config.pools:
        for prefix in pool.addresses:
            addresses.update(range(prefix.address, prefix.address + prefix.size))
    for rule in config.rules:
        if isinstance(rule.target, DnatTo):
            addresses.update(range(rule.prefix.address, rule.prefix.address + rule.prefix.size))
        elif isinstance(rule.target, SnatToAddress):
            addresses.add(rule.target.address)
    return addresses


def _route(p4info: P4Info, prefix: Prefix, interface: Interface, mac: str) -> p4r.TableEntry:
    return table_entry(
        p4info,
        "routing_v4",
        {"ipv4_dst": (prefix.address, prefix.length)},
        "set_next_hop",
        {"port": _ported(interface), "smac": _mac(interface), "dmac": mac_value(mac)},
    )


def _nat_entry(
    p4info: P4Info, table: str, key: FlowKey, rewrite: Rewrite, idle_timeout_ns: int
) -> p4r.TableEntry:
    match = {
        "ipv4_src": key.src,
        "ipv4_dst": key.dst,
        "ip_proto": key.protocol,
        "l4_sport": key.sport,
        "l4_dport": key.dport,
    }
    if rewrite.src is not None and rewrite.dst is None:
        action, params = "rewrite_src", {"addr": rewrite.src.address, "port": rewrite.src.port}
    elif rewrite.dst is not None and rewrite.src is None:
        action, params = "rewrite_dst", {"addr": rewrite.dst.address, "port": rewrite.dst.port}
    else:
        assert rewrite.src is not None and rewrite.dst is not None
        action = "rewrite_src_dst"
        params = {
            "src_addr": rewrite.src.address,
            "src_port": rewrite.src.port,
            "dst_addr": rewrite.dst.address,
            "dst_port": rewrite.dst.port,
        }
    return table_entry(p4info, table, match, action, params, idle_timeout_ns)


def session_entries(p4info: P4Info, session: Session, timeout_s: int) -> list[p4r.TableEntry]:
    """The two connection records of a session. Only the inside-to-outside one
    ages: outbound packets refresh a mapping (RFC 4787 REQ-6), inbound ones do
    not (the RFC leaves that choice to the NAT), so one notification ends a session."""
    return [
        _nat_entry(
            p4info, "nat_in2out", session.in2out, session.in2out_rewrite, timeout_s * 1_000_000_000
        ),
        _nat_entry(p4info, "nat_out2in", session.out2in, session.out2in_rewrite, 0),
    ]


def session_keys_only(p4info: P4Info, session: Session) -> list[p4r.TableEntry]:
    """The two entries by key alone, for DELETE."""
    return [
        table_entry(
            p4info,
            table,
            {
                "ipv4_src": k.src,
                "ipv4_dst": k.dst,
                "ip_proto": k.protocol,
                "l4_sport": k.sport,
                "l4_dport": k.dport,
            },
        )
        for table, k in (("nat_in2out", session.in2out), ("nat_out2in", session.out2in))
    ]
