"""What the QuickNAT P4 program (p4src/) expects from its controller.

The names and enum values here are the program's contract, documented in
p4src/README.md; P4Info lookups fail at start-up if they drift apart.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from finsy.proto import p4r

from quicknat.addr import Prefix, format_ipv4
from quicknat.config.instances import default_index, peer_vid, pins
from quicknat.config.model import Config, Interface, Zone
from quicknat.nat.session import FlowKey, Rewrite, Session
from quicknat.p4.constants import (
    CPU_CLONE_SESSION,
    SLOW_PATH_VID_HANDOFF,
    SLOW_PATH_VID_RELAY,
    V1MODEL_CPU_PORT,
    ZONE_INSIDE,
    ZONE_OUTSIDE,
    ZONE_SLOW_PATH,
    PacketOutMode,
    PuntReason,
)
from quicknat.p4rt.entities import (
    Exact,
    Lpm,
    Ternary,
    action_profile_group,
    action_profile_member,
    table_entry,
)
from quicknat.p4rt.p4info import P4Info
from quicknat.p4rt.wire import EncodedUpdate, ExactTableUpdates
from quicknat.rules import RuleKind

# p4src/build/'s artifacts, as package data (quicknat/p4/: links in the tree).
ARTIFACTS = Path(__file__).resolve().parents[1] / "p4"
P4INFO = ARTIFACTS / "quicknat.p4info.txtpb"
BMV2_JSON = ARTIFACTS / "quicknat.json"
# Each target's build: its P4Info and its device config (BMv2's JSON; the
# SWX pipeline's spec, which quicknat-swx compiles).
PROGRAMS: Mapping[str, tuple[Path, Path]] = {
    "bmv2": (P4INFO, BMV2_JSON),
    "swx": (ARTIFACTS / "pna" / "quicknat.p4info.txtpb", ARTIFACTS / "pna" / "quicknat.spec"),
}
ZONE_VALUE = {Zone.INSIDE: ZONE_INSIDE, Zone.OUTSIDE: ZONE_OUTSIDE}
SLOW_PATH_SELECTOR = "slow_path_selector"
SLOW_PATH_GROUP = 1
SLOW_PATH_MTU = 9216  # the tag adds 4 bytes to what leaves toward an instance


# The device config line quicknat-swx takes its learner timeout classes from
# (swpath/swx/p4rt/program.cc reads the same words).
LEARN_TIMEOUTS_LINE = b"; quicknat learn_timeouts "


@dataclass(frozen=True, slots=True)
class Pipeline:
    p4info: P4Info
    device_config: bytes
    cookie: int

    def with_learn_timeouts(self, seconds: tuple[int, ...]) -> Pipeline:
        """The program with its learner tables' timeout classes (a learning
        target's, quicknat-swx): a first line of the device config in the SWX
        spec's comment syntax, which quicknat-swx applies after building the
        pipeline, and a cookie of its own (other classes, another program to
        push). One source for the switch and the instances' leases: the
        configuration's [offload] learn_timeouts."""
        line = LEARN_TIMEOUTS_LINE + ",".join(str(s) for s in seconds).encode() + b"\n"
        cookie = int.from_bytes(
            hashlib.sha256(self.cookie.to_bytes(8, "big") + line).digest()[:8], "big"
        )
        return Pipeline(self.p4info, line + self.device_config, cookie)

    @classmethod
    def of_target(cls, target: str) -> Pipeline:
        """The committed build for a target (PROGRAMS)."""
        return cls.load(*PROGRAMS[target])

    @classmethod
    def load(cls, p4info_path: Path = P4INFO, device_config_path: Path = BMV2_JSON) -> Pipeline:
        device_config = device_config_path.read_bytes()
        text = p4info_path.read_bytes()
        # The cookie identifies this exact program: a restarted controller that
        # finds it installed keeps the switch's tables instead of wiping them.
        cookie = int.from_bytes(hashlib.sha256(text + device_config).digest()[:8], "big")
        p4info = P4Info.load(p4info_path)
        check_enums(p4info)
        return cls(p4info, device_config, cookie)


class PipelineMismatch(ValueError):
    """The program and the controller disagree on their shared vocabulary."""


# The enums the P4Info carries, held against the generated ones
# (quicknat/p4/constants.py) at every start: a switch running another build of
# the program would misread the packet metadata. (DropReason_t is in no
# P4Info type: it indexes drop_counter.)
_ENUMS: tuple[tuple[str, type[enum.IntEnum]], ...] = (
    ("PuntReason_t", PuntReason),
    ("PacketOutMode_t", PacketOutMode),
)


def check_enums(p4info: P4Info) -> None:
    """Fails with one message naming every difference between the P4Info's
    serializable enums and this module's copies (a program and a controller of
    different versions would misread each other's packet metadata)."""
    problems = []
    for p4_name, ours in _ENUMS:
        theirs = p4info.serializable_enum(p4_name)
        mine = {m.name: m.value for m in ours}
        for name in sorted(theirs.keys() | mine.keys()):
            if theirs.get(name) != mine.get(name):
                problems.append(
                    f"{p4_name}.{name}: program {theirs.get(name, 'absent')}, "
                    f"controller {mine.get(name, 'absent')}"
                )
    if problems:
        raise PipelineMismatch(
            "the P4 program and the controller disagree (rebuild with make p4 "
            "and make constants): " + "; ".join(problems)
        )


def mac_value(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def format_mac(value: int) -> str:
    """mac_value's inverse: a MAC read back from the switch, as written."""
    return ":".join(f"{value >> shift & 0xFF:02x}" for shift in range(40, -8, -8))


class ConfigMismatch(ValueError):
    """The configuration lacks something the P4 path needs."""


def _ported(interface: Interface) -> int:
    if interface.port is None:
        raise ConfigMismatch(f"interface {interface.name}: the P4 path needs its 'port'")
    if interface.vlan is not None or interface.slow_path:
        raise ConfigMismatch(
            f"interface {interface.name}: 'vlan' and 'slow_path' are swpath's (a slow-path "
            "instance's sub-interfaces); the switch's ports are untagged"
        )
    return interface.port


def _mac(interface: Interface) -> int:
    if interface.mac is None:
        raise ConfigMismatch(f"interface {interface.name}: the P4 path needs its 'mac'")
    return mac_value(interface.mac)


def static_entries(p4info: P4Info, config: Config) -> list[p4r.TableEntry]:
    """Everything the configuration puts in the switch before any flow: zones,
    MTUs, ARP answers (own addresses, and proxy ARP for pool and DNAT addresses on the
    outside), own addresses, routes, the prefixes whose misses need NAT, and the
    NAT-owned prefixes no packet from a link may claim as its source."""
    entries: list[p4r.TableEntry] = []
    for interface in config.interfaces:
        entries += _interface_entries(p4info, interface)
    entries += _proxy_arp_entries(p4info, config)
    entries += _route_entries(p4info, config)
    for sp in config.slow_paths:
        entries += _port_entries(p4info, sp.port, ZONE_SLOW_PATH, SLOW_PATH_MTU)
    entries += _scope_entries(p4info, config)
    return entries


def _port_entries(p4info: P4Info, port: int, zone: int, mtu: int) -> list[p4r.TableEntry]:
    """A port's zone and MTU."""
    return [
        table_entry(p4info, "port_zone", {"ingress_port": port}, "set_zone", {"zone": zone}),
        table_entry(p4info, "egress_mtu", {"egress_port": port}, "set_mtu", {"mtu": mtu}),
    ]


def _interface_entries(p4info: P4Info, interface: Interface) -> list[p4r.TableEntry]:
    """An interface's port, and its own address: answered to ARP on its port
    and taken as the router's own (local_address)."""
    port = _ported(interface)
    entries = _port_entries(p4info, port, ZONE_VALUE[interface.zone], interface.mtu)
    if interface.address is None:
        return entries
    address = interface.address.address
    arp = {"ingress_port": port, "arp_target_ip": address}
    return [
        *entries,
        table_entry(p4info, "arp_reply", arp, "reply_arp", {"mac": _mac(interface)}),
        table_entry(p4info, "local_address", {"ipv4_dst": address}, "mark_local"),
    ]


def _proxy_arp_entries(p4info: P4Info, config: Config) -> list[p4r.TableEntry]:
    """Proxy ARP on every outside interface for the addresses the NAT
    publishes (pools, DNAT and SNAT `to` addresses)."""
    return [
        table_entry(
            p4info,
            "arp_reply",
            {"ingress_port": _ported(interface), "arp_target_ip": address},
            "reply_arp",
            {"mac": _mac(interface)},
        )
        for interface in config.interfaces
        if interface.zone is Zone.OUTSIDE
        for address in sorted(public_addresses(config))
    ]


def _route_entries(p4info: P4Info, config: Config) -> list[p4r.TableEntry]:
    """Routes through a next hop, and a /32 route to each neighbour (how
    hosts on a connected prefix are reached)."""
    by_name = {i.name: i for i in config.interfaces}
    neighbors = {(n.interface, n.address): n.mac for n in config.neighbors}
    entries = []
    for route in config.routes:
        if route.via is None:
            continue  # connected: hosts are reached through their /32 neighbour routes
        mac = neighbors.get((route.interface, route.via))
        if mac is None:
            raise ConfigMismatch(
                f"route {route.prefix}: next hop {format_ipv4(route.via)} "
                f"needs a [[neighbor]] entry on {route.interface}"
            )
        entries.append(_route(p4info, route.prefix, by_name[route.interface], mac))
    for n in config.neighbors:
        entries.append(_route(p4info, Prefix(n.address, 32), by_name[n.interface], n.mac))
    return entries


def _scope_entries(p4info: P4Info, config: Config) -> list[p4r.TableEntry]:
    """The prefixes whose misses need NAT (snat_scope, dnat_scope) and the
    NAT-owned ones no packet from a link may claim as its source."""
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
    # A NAT-owned source on a packet from a link is spoofed (IN-IP-5).
    scopes |= {("owned_source", "ipv4_src", p) for p in config.public_prefixes()}
    entries = []
    for table, field, prefix in sorted(scopes, key=lambda s: (s[0], s[2])):
        action = "mark_owned" if table == "owned_source" else "mark_nat_required"
        entries.append(table_entry(p4info, table, {field: (prefix.address, prefix.length)}, action))
    return entries


def port_block_ternaries(low: int, high: int) -> list[Ternary]:
    """A port range as the fewest value/mask pairs that cover exactly it (a
    ternary table has no range match): 1024-65535 is 1024/0xfc00, 2048/0xf800,
    4096/0xf000 ... 32768/0x8000."""
    out = []
    while low <= high:
        size = low & -low if low else 1 << 16
        while low + size - 1 > high:
            size >>= 1
        out.append(Ternary(low, 0xFFFF & ~(size - 1)))
        low += size
    return out


def slow_path_entries(p4info: P4Info, config: Config) -> list[list[p4r.Entity]]:
    """Offload mode's entries (p4src/README.md, slow_path.p4), in the order they
    may be written (members, then the group that names them, then the tables
    that name the group): every instance a member of one selector group for
    the inside zone; outside packets for a pool address by port block (RFC
    7422) to the block's instance, and, at the lowest priority, what has no
    port (ICMP errors), DNAT and SNAT `to` addresses to the default instance.
    With several instances, the hosts of those rules pinned to the instance
    that takes their outside packets, and each instance's peer VID
    (config/instances.py)."""
    instances = config.slow_paths
    if not instances:
        return []
    members = [
        p4r.Entity(
            action_profile_member=action_profile_member(
                p4info, SLOW_PATH_SELECTOR, i + 1, "to_slow_path", {"port": sp.port}
            )
        )
        for i, sp in enumerate(instances)
    ]
    group = p4r.Entity(
        action_profile_group=action_profile_group(
            p4info,
            SLOW_PATH_SELECTOR,
            SLOW_PATH_GROUP,
            list(range(1, len(instances) + 1)),
            len(instances),
        )
    )
    inside = table_entry(
        p4info, "slow_path_in2out", {"zone": ZONE_VALUE[Zone.INSIDE]}, group_id=SLOW_PATH_GROUP
    )
    tables = [p4r.Entity(table_entry=inside)]
    tables += _slow_path_out2in(p4info, config)
    tables += _slow_path_pins(p4info, config)
    if len(instances) > 1:
        tables += _slow_path_peers(p4info, config)
    return [members, [group], tables]


def _to_instance(
    p4info: P4Info,
    table: str,
    match: Mapping[str, Exact | Lpm | Ternary],
    port: int,
    priority: int = 0,
) -> p4r.Entity:
    """A slow-path table's entry sending what it matches to the instance on `port`."""
    return p4r.Entity(
        table_entry=table_entry(
            p4info, table, match, "to_slow_path", {"port": port}, priority=priority
        )
    )


def _slow_path_out2in(p4info: P4Info, config: Config) -> list[p4r.Entity]:
    """Outside packets to a pool address by port block to the block's
    instance (RFC 7422); below them, everything else of the NAT's to the
    default instance."""
    instances, entries = config.slow_paths, []
    prefixes = sorted({p for pool in config.pools for p in pool.addresses}, key=str)
    for prefix in prefixes:
        dst = Ternary(prefix.address, prefix.mask)
        for sp in instances:
            for block in port_block_ternaries(sp.port_min, sp.port_max):
                match = {"ipv4_dst": dst, "has_ports": Ternary(1, 1), "l4_dport": block}
                entries.append(_to_instance(p4info, "slow_path_out2in", match, sp.port, 10))
    public = [p for p in config.public_prefixes() if p not in prefixes]
    default = instances[default_index(config)].port
    for prefix in prefixes + sorted(set(public), key=str):
        match = {"ipv4_dst": Ternary(prefix.address, prefix.mask)}
        entries.append(_to_instance(p4info, "slow_path_out2in", match, default, 1))
    return entries


def _slow_path_pins(p4info: P4Info, config: Config) -> list[p4r.Entity]:
    """The hosts of DNAT and SNAT `to` rules pinned to the instance that
    takes those rules' outside packets."""
    entries = []
    for prefix, index in pins(config):
        pin: dict[str, Exact | Lpm | Ternary] = {
            "zone": ZONE_VALUE[Zone.INSIDE],
            "inside_host": (prefix.address, prefix.length),
        }
        entries.append(_to_instance(p4info, "slow_path_pin", pin, config.slow_paths[index].port))
    return entries


def _slow_path_peers(p4info: P4Info, config: Config) -> list[p4r.Entity]:
    """Each instance's two peer VIDs: a hand-off (re-tagged 4) and a relay
    (re-tagged 5) to it."""
    return [
        p4r.Entity(
            table_entry=table_entry(
                p4info,
                "slow_path_peer",
                {"vid": peer_vid(i) + relay},
                "hand_off",
                {"port": sp.port, "vid": SLOW_PATH_VID_RELAY if relay else SLOW_PATH_VID_HANDOFF},
            )
        )
        for i, sp in enumerate(config.slow_paths)
        for relay in (0, 1)
    ]


def cpu_clone_session() -> p4r.Entity:
    """The clone session of the TCP_STATE copies: one replica, to the CPU port."""
    entry = p4r.CloneSessionEntry(
        session_id=CPU_CLONE_SESSION,
        replicas=[p4r.Replica(egress_port=V1MODEL_CPU_PORT, instance=1)],
    )
    return p4r.Entity(
        packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(clone_session_entry=entry)
    )


def public_addresses(config: Config) -> set[int]:
    """Addresses the NAT answers ARP for on the outside (Config.public_prefixes)."""
    addresses: set[int] = set()
    for prefix in config.public_prefixes():
        addresses.update(range(prefix.address, prefix.address + prefix.size))
    return addresses


def _route(p4info: P4Info, prefix: Prefix, interface: Interface, mac: str) -> p4r.TableEntry:
    return table_entry(
        p4info,
        "routing_v4",
        {"ipv4_dst": (prefix.address, prefix.length)},
        "set_next_hop",
        {"port": _ported(interface), "smac": _mac(interface), "dmac": mac_value(mac)},
    )


class NatEntries:
    """The connection-table updates of a session: the controller's per-flow
    write path, so encoded straight to protobuf's wire format with ids and
    framing resolved once (p4rt/wire.py)."""

    KEY = ("ipv4_src", "ipv4_dst", "ip_proto", "l4_sport", "l4_dport")
    # The two tables' rewrites are the same three, under names of their own:
    # nat_in2out's count the hit (its entries age on their counter, as PNA
    # wants an action to say so), nat_out2in's do not (include/control/nat.p4).
    _REWRITES: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "rewrite_src": ("addr", "port"),
        "rewrite_dst": ("addr", "port"),
        "rewrite_src_dst": ("src_addr", "src_port", "dst_addr", "dst_port"),
    }
    PREFIX: ClassVar[Mapping[str, str]] = {"nat_in2out": "", "nat_out2in": "out2in_"}
    # Each table's actions and their parameters, in the order given.
    ACTIONS: ClassVar[Mapping[str, Mapping[str, tuple[str, ...]]]] = {
        "nat_in2out": {**_REWRITES, "hairpin_pending": ("src_addr", "src_port")},
        "nat_out2in": {"out2in_" + name: p for name, p in _REWRITES.items()},
    }

    def __init__(self, p4info: P4Info) -> None:
        self.tables = {
            name: ExactTableUpdates(p4info, name, self.KEY, actions)
            for name, actions in self.ACTIONS.items()
        }

    @staticmethod
    def _key(key: FlowKey) -> tuple[int, int, int, int, int]:
        return (key.src, key.dst, key.protocol, key.sport, key.dport)

    @classmethod
    def _action(cls, table: str, rewrite: Rewrite) -> tuple[str, tuple[int, ...]]:
        src, dst = rewrite.src, rewrite.dst
        prefix = cls.PREFIX[table]
        if src is not None and dst is not None:
            return prefix + "rewrite_src_dst", (src.address, src.port, dst.address, dst.port)
        if src is not None:
            return prefix + "rewrite_src", (src.address, src.port)
        assert dst is not None
        return prefix + "rewrite_dst", (dst.address, dst.port)

    def _in2out(
        self, kind: p4r.Update.Type.ValueType, session: Session, timeout_s: int, created_ms: int
    ) -> EncodedUpdate:
        rewrite = session.in2out_rewrite
        params: tuple[int, ...]
        if rewrite is None:  # a hairpin session waiting for its second half
            external = session.external
            action, params = "hairpin_pending", (external.address, external.port)
        else:
            action, params = self._action("nat_in2out", rewrite)
        return self.tables["nat_in2out"].update(
            kind,
            self._key(session.in2out),
            action,
            params,
            timeout_s * 1_000_000_000,
            created_ms.to_bytes(8, "big") if created_ms else b"",
        )

    def inserts(self, session: Session, timeout_s: int, created_ms: int = 0) -> list[EncodedUpdate]:
        """The two connection records of a session. Only the inside-to-outside
        one ages: outbound packets refresh a mapping (RFC 4787 REQ-6), inbound
        ones do not (the RFC leaves that choice to the NAT), so one notification
        ends a session. It also carries when the session was opened (wall
        clock, ms; the entry's controller metadata), so that a controller that
        recovers it from the switch knows its age."""
        in2out = self._in2out(p4r.Update.INSERT, session, timeout_s, created_ms)
        action, params = self._action("nat_out2in", session.out2in_rewrite)
        out2in = self.tables["nat_out2in"].update(
            p4r.Update.INSERT, self._key(session.out2in), action, params
        )
        return [in2out, out2in]

    def in2out_modify(self, session: Session, timeout_s: int, created_ms: int = 0) -> EncodedUpdate:
        """The ageing entry again, with the session's timeout and rewrite now (a TCP
        state change, or a hairpin session that gained or lost its partner)."""
        return self._in2out(p4r.Update.MODIFY, session, timeout_s, created_ms)

    def deletes(self, session: Session) -> list[EncodedUpdate]:
        """The two entries of a session, by key alone."""
        return self.deletes_by_key(session.in2out, session.out2in)

    def deletes_by_key(self, in2out: FlowKey, out2in: FlowKey) -> list[EncodedUpdate]:
        return [self.delete_one("nat_in2out", in2out), self.delete_one("nat_out2in", out2in)]

    def delete_one(self, table: str, key: FlowKey) -> EncodedUpdate:
        return self.tables[table].update(p4r.Update.DELETE, self._key(key))
