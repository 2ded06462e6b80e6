"""The one rules-configuration parser (TOML), for both data paths.

``load_config`` returns a validated ``Config`` or raises ``ConfigError`` whose
lines each name the file, the entry and the field, e.g.
``nat.toml: rule 7: prefix 10.0.0.0/33: prefix length must be 0..32``.
The format is documented in the README (Configuration reference).
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any

from quicknat.addr import Prefix
from quicknat.config import instances, values
from quicknat.config.model import (
    DEFAULT_IPFIX_DOMAIN,
    DEFAULT_MTU,
    MTU_MAX,
    MTU_MIN,
    TIMEOUT_MINIMUMS,
    WELL_KNOWN_PORT_MAX,
    Config,
    EventLog,
    Filtering,
    FilteringModes,
    IcmpErrors,
    Interface,
    Limits,
    Logging,
    Neighbor,
    OffloadPolicy,
    Pool,
    Route,
    SlowPath,
    Timeouts,
    Zone,
)
from quicknat.config.reader import Problems, TableReader, unknown_name_message
from quicknat.rules import (
    PORTED_PROTOCOLS,
    DnatTo,
    Protocol,
    Rule,
    RuleKind,
    SnatToAddress,
    SnatToPool,
    Target,
)

ARRAY_SECTIONS = ("interface", "route", "neighbor", "pool", "rule", "slow_path")
TABLE_SECTIONS = ("timeouts", "filtering", "limits", "logging", "icmp", "offload")
RULE_MATCH_FIELDS = ("id", "type", "prefix", "port", "protocol")
RULE_FIELDS = (*RULE_MATCH_FIELDS, "pool", "to", "to_port")
POOL_FIELDS = ("name", "addresses", "ports", "preserve_parity", "preserve_port")
_TOML_POSITION = re.compile(r"^(?P<msg>.*) \(at (?P<pos>line \d+, column \d+|end of document)\)$")


class ConfigError(Exception):
    """An invalid configuration: one message per problem found."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("\n".join(messages))
        self.messages = messages


def load_config(path: str | Path) -> Config:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError([f"{path}: cannot read: {reason}"]) from None
    return parse_config(text, str(path))


def parse_config(text: str, source: str = "<config>") -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_POSITION.match(str(exc))
        message = f"{match['pos']}: {match['msg']}" if match else str(exc)
        raise ConfigError([f"{source}: {message}"]) from None
    return config_from_data(data, source)


def config_from_data(data: dict[str, Any], source: str = "<config>") -> Config:
    """A configuration from TOML's data model (the behaviour vectors' JSON too)."""
    problems = Problems(source)
    config = _Parser(problems, data).parse()
    if problems.errors:
        raise ConfigError(problems.errors)
    assert config is not None
    return config


def _entries(problems: Problems, data: dict[str, Any], section: str) -> list[Any]:
    value = data.get(section, [])
    if not isinstance(value, list):
        problems.error(section, f"must be an array of tables, written [[{section}]]")
        return []
    return value


class _Parser:
    def __init__(self, problems: Problems, data: dict[str, Any]) -> None:
        self.p = problems
        self.data = data

    def parse(self) -> Config | None:
        for key in self.data:
            if key not in ARRAY_SECTIONS + TABLE_SECTIONS:
                self.p.error(
                    "", unknown_name_message("section", key, ARRAY_SECTIONS + TABLE_SECTIONS)
                )
        interfaces = self.interfaces()
        by_name = {interface.name: interface for interface in interfaces}
        routes = self.routes(by_name)
        neighbors = self.neighbors(by_name)
        pools = self.pools()
        rules = self.rules({pool.name for pool in pools}, self._declared_names("pool"))
        self._check_fixed_addresses(rules, pools)
        used_pools = {r.target.pool for r in rules if isinstance(r.target, SnatToPool)}
        for pool in pools:
            if pool.name not in used_pools:
                self.p.warn(f"pool '{pool.name}'", "no SNAT rule uses this pool")
        self._check_pool_sizes(pools, rules)
        timeouts = self.timeouts()
        logging = self.logging()
        slow_paths = self.slow_paths(interfaces)
        if self.p.errors:
            return None
        config = Config(
            source=self.p.source,
            interfaces=interfaces,
            routes=routes,
            neighbors=neighbors,
            pools=pools,
            rules=rules,
            timeouts=timeouts,
            filtering=self.filtering(),
            limits=self.limits(),
            logging=logging,
            icmp=self.icmp(),
            slow_paths=slow_paths,
            offload=self.offload(),
            warnings=tuple(self.p.warnings),
        )
        try:
            instances.pins(config)
            instances.check_ipfix_domains(config)
        except ValueError as exc:
            self.p.error("slow_path", str(exc))
            return None
        return config

    def _declared_names(self, section: str) -> set[str]:
        """Names given in a section, valid entries or not: a reference to an entry
        that was itself refused is not reported a second time."""
        entries = self.data.get(section, [])
        if not isinstance(entries, list):
            return set()
        return {
            e["name"] for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)
        }

    def _check_reference(
        self, r: TableReader, kind: str, name: str, valid: set[str] | dict[str, Any], section: str
    ) -> bool:
        if name in valid:
            return True
        if name not in self._declared_names(section):
            r.error(unknown_name_message(kind, name, tuple(sorted(valid))))
        return False

    def _check_fixed_addresses(self, rules: tuple[Rule, ...], pools: tuple[Pool, ...]) -> None:
        """An SNAT `to` address inside a pool would be handed out by two
        allocators, so one address:port could go to two hosts (RFC 4787 REQ-3)."""
        for index, rule in enumerate(rules, 1):
            if not isinstance(rule.target, SnatToAddress):
                continue
            for pool in pools:
                if any(rule.target.address in prefix for prefix in pool.addresses):
                    shown = values.display_address(rule.target.address)
                    self.p.error(
                        f"rule {index}",
                        f"to {shown}: is in pool '{pool.name}'; use pool = \"{pool.name}\" "
                        "(an address is allocated from one place only)",
                    )

    # -- [[interface]] ---------------------------------------------------------

    def interfaces(self) -> tuple[Interface, ...]:
        result: list[Interface] = []
        # (port, vlan) -> interface: a port has one untagged interface and any
        # number of 802.1Q sub-interfaces, one per VID
        ports: dict[tuple[int, int | None], str] = {}
        entries = _entries(self.p, self.data, "interface")
        for index, entry in enumerate(entries, 1):
            r = TableReader(
                self.p,
                f"interface {index}",
                entry,
                ("name", "zone", "port", "address", "mac", "mtu", "vlan", "slow_path"),
            )
            name = r.get("name", values.name, required=True)
            zone = r.get("zone", _enum(Zone), required=True)
            port = r.get("port", lambda v: values.integer(v, 0, 511))
            address = r.get("address", values.interface_address)
            mac = r.get("mac", values.mac)
            mtu = r.get("mtu", lambda v: values.integer(v, MTU_MIN, MTU_MAX))
            # 0 is priority tagging and 4095 reserved (IEEE 802.1Q)
            vlan = r.get("vlan", lambda v: values.integer(v, 1, 4094))
            slow_path = r.get("slow_path", values.boolean) or False
            if (r.has("mtu") and mtu is None) or (r.has("vlan") and vlan is None):
                continue
            if name is not None and any(i.name == name for i in result):
                r.error(f"name {name}: already used by another interface")
                continue
            if slow_path and vlan is None:
                r.error(
                    "slow_path: needs a vlan (the switch tags what it sends with the zone: "
                    "vlan = 1 inside, 2 outside)"
                )
            if port is not None and (port, vlan) in ports:
                what = f"port {port}" if vlan is None else f"vlan {vlan} of port {port}"
                r.error(f"{what}: already used by interface {ports[port, vlan]}")
            if name is None or zone is None:
                continue
            if port is not None:
                ports[port, vlan] = name
            result.append(
                Interface(name, zone, port, address, mac, mtu or DEFAULT_MTU, vlan, slow_path)
            )
        zones = {interface.zone for interface in result}
        if not self.p.errors and zones != {Zone.INSIDE, Zone.OUTSIDE}:
            self.p.error("interfaces", "need at least one inside and one outside interface")
        return tuple(result)

    # -- [[slow_path]] (offload mode) ------------------------------------------

    def slow_paths(self, interfaces: tuple[Interface, ...]) -> tuple[SlowPath, ...]:
        result: list[SlowPath] = []
        ports = {i.port: i.name for i in interfaces if i.port is not None}
        for index, entry in enumerate(_entries(self.p, self.data, "slow_path"), 1):
            r = TableReader(
                self.p,
                f"slow_path {index}",
                entry,
                ("name", "port", "control", "ports", "default", "ipfix_domain"),
            )
            name = r.get("name", values.name, required=True)
            port = r.get("port", lambda v: values.integer(v, 0, 511), required=True)
            control = r.get("control", values.file_path, required=True)
            block = r.get("ports", values.port_range) if r.has("ports") else (1024, 65535)
            default = r.get("default", values.boolean) or False
            domain = r.get("ipfix_domain", values.observation_domain)
            if default and any(sp.default for sp in result):
                r.error("default: another slow_path is the default already (at most one)")
                continue
            if name is not None and any(sp.name == name for sp in result):
                r.error(f"name {name}: already used by another slow_path")
                continue
            if port is not None and port in ports:
                r.error(f"port {port}: already used by {ports[port]}")
                continue
            if block is not None:
                for other in result:
                    if block[0] <= other.port_max and other.port_min <= block[1]:
                        r.error(
                            f"ports {block[0]}-{block[1]}: overlap slow_path {other.name}'s "
                            f"{other.port_min}-{other.port_max} (each owns its own block, RFC 7422)"
                        )
            if name is None or port is None or control is None or block is None:
                continue
            ports[port] = f"slow_path {name}"
            result.append(SlowPath(name, port, control, block[0], block[1], default, domain))
        return tuple(result)

    # -- [[route]] and [[neighbor]] --------------------------------------------

    def routes(self, interfaces: dict[str, Interface]) -> tuple[Route, ...]:
        result: list[Route] = []
        for index, entry in enumerate(_entries(self.p, self.data, "route"), 1):
            r = TableReader(self.p, f"route {index}", entry, ("prefix", "via", "interface"))
            prefix = r.get("prefix", values.prefix, required=True)
            via = r.get("via", values.address)
            interface = r.get("interface", values.name, required=True)
            if interface is not None and not self._check_reference(
                r, "interface", interface, interfaces, "interface"
            ):
                continue
            if prefix is None or interface is None or (r.has("via") and via is None):
                continue
            link = interfaces[interface].address
            if via is not None and link is not None and via not in link.network:
                r.error(
                    f"via {values.display_address(via)}: not on interface {interface}'s "
                    f"network {link.network}"
                )
                continue
            if any(route.prefix == prefix for route in result):
                r.error(f"prefix {prefix}: another route has the same prefix")
                continue
            result.append(Route(prefix, interface, via))
        return tuple(result)

    def neighbors(self, interfaces: dict[str, Interface]) -> tuple[Neighbor, ...]:
        result: list[Neighbor] = []
        for index, entry in enumerate(_entries(self.p, self.data, "neighbor"), 1):
            r = TableReader(self.p, f"neighbor {index}", entry, ("address", "mac", "interface"))
            address = r.get("address", values.address, required=True)
            mac = r.get("mac", values.mac, required=True)
            interface = r.get("interface", values.name, required=True)
            if interface is not None and not self._check_reference(
                r, "interface", interface, interfaces, "interface"
            ):
                continue
            if address is None or mac is None or interface is None:
                continue
            if any(n.address == address and n.interface == interface for n in result):
                r.error(
                    f"address {values.display_address(address)}: already a neighbor on {interface}"
                )
                continue
            result.append(Neighbor(address, mac, interface))
        return tuple(result)

    # -- [[pool]] --------------------------------------------------------------

    def _check_pool_sizes(self, pools: tuple[Pool, ...], rules: tuple[Rule, ...]) -> None:
        """Warns of a pool too small for the hosts its SNAT rules cover: each
        internal endpoint holds one external port (MAP-1), and with parity
        kept (MAP-5) only half the ports serve a given internal port."""
        by_name = {pool.name: pool for pool in pools}
        for pool_name in sorted({r.target.pool for r in rules if isinstance(r.target, SnatToPool)}):
            pool = by_name.get(pool_name)
            if pool is None:
                continue
            ports = pool.port_max - pool.port_min + 1
            hosts = sum(
                r.prefix.size
                for r in rules
                if isinstance(r.target, SnatToPool) and r.target.pool == pool_name
            )
            if pool.preserve_parity and ports == 1:
                self.p.warn(
                    f"pool '{pool_name}'",
                    f"one port ({pool.port_min}) with preserve_parity: flows from "
                    f"{'odd' if pool.port_min % 2 == 0 else 'even'} internal ports get none "
                    "(set preserve_parity = false or give it more ports)",
                )
            capacity = pool.address_count * ports
            if capacity < hosts:
                self.p.warn(
                    f"pool '{pool_name}'",
                    f"{capacity} external port{'s' if capacity != 1 else ''} for the {hosts} "
                    "internal addresses its SNAT rules cover: at most "
                    f"{capacity} internal endpoint{'s' if capacity != 1 else ''} at a time "
                    "get a mapping",
                )

    def pools(self) -> tuple[Pool, ...]:
        result: list[Pool] = []
        for index, entry in enumerate(_entries(self.p, self.data, "pool"), 1):
            r = TableReader(self.p, f"pool {index}", entry, POOL_FIELDS)
            name = r.get("name", values.name, required=True)
            ports = r.get("ports", values.port_range) if r.has("ports") else (1024, 65535)
            prefixes = self._pool_prefixes(r)
            policy = {f: r.get(f, values.boolean) for f in ("preserve_parity", "preserve_port")}
            if name is not None and any(pool.name == name for pool in result):
                r.error(f"name {name}: already used by another pool")
                continue
            if name is None or ports is None or prefixes is None:
                continue
            if any(r.has(f) and value is None for f, value in policy.items()):
                continue
            given = {f: value for f, value in policy.items() if value is not None}
            pool = Pool(name, prefixes, ports[0], ports[1], **given)
            if self._pool_overlaps(r, pool, result):
                continue
            if pool.port_max <= WELL_KNOWN_PORT_MAX:
                self.p.warn(
                    r.where,
                    f"ports {pool.port_min}-{pool.port_max}: all below 1024, so only internal "
                    "ports below 1024 can be translated with this pool (RFC 4787 REQ-3)",
                )
            result.append(pool)
        return tuple(result)

    def _pool_prefixes(self, r: TableReader) -> tuple[Prefix, ...] | None:
        raw = r.table.get("addresses")
        if raw is None:
            if r.ok:
                r.error("missing field 'addresses'")
            return None
        if not isinstance(raw, list) or not raw:
            r.error("addresses: must be a non-empty list of addresses or prefixes")
            return None
        prefixes: list[Prefix] = []
        for item in raw:
            try:
                prefix = values.prefix(item)
            except ValueError as exc:
                r.error(f"addresses: {values.display(item)}: {exc}")
                return None
            for seen in prefixes:
                if prefix.overlaps(seen):
                    r.error(f"addresses: {prefix} overlaps {seen}")
                    return None
            prefixes.append(prefix)
        return tuple(prefixes)

    def _pool_overlaps(self, r: TableReader, pool: Pool, others: list[Pool]) -> bool:
        # Two pools sharing an address:port would hand one mapping to two
        # internal endpoints (RFC 4787 REQ-3 forbids it).
        for other in others:
            if pool.port_max < other.port_min or other.port_max < pool.port_min:
                continue
            for mine in pool.addresses:
                for theirs in other.addresses:
                    if mine.overlaps(theirs):
                        r.error(
                            f"addresses: {mine} overlaps pool '{other.name}' ({theirs}) "
                            f"on ports {max(pool.port_min, other.port_min)}-"
                            f"{min(pool.port_max, other.port_max)}"
                        )
                        return True
        return False

    # -- [[rule]] --------------------------------------------------------------

    def rules(self, pool_names: set[str], declared_pools: set[str]) -> tuple[Rule, ...]:
        result: list[Rule] = []
        ids: dict[int, int] = {}
        keys: dict[tuple[Any, ...], int] = {}
        for index, entry in enumerate(_entries(self.p, self.data, "rule"), 1):
            where = f"rule {index}"
            r = TableReader(self.p, where, entry, RULE_FIELDS)
            rule = _rule(r, index, pool_names, declared_pools)
            if rule is None:
                continue
            if rule.id in ids:
                r.error(f"id {rule.id}: already used by rule {ids[rule.id]}")
                continue
            if rule.match_key in keys:
                r.error(f"same match as rule {keys[rule.match_key]} ({rule.describe_match()})")
                continue
            ids[rule.id] = index
            keys[rule.match_key] = index
            result.append(rule)
        return tuple(result)

    # -- [timeouts], [filtering], [limits] -------------------------------------

    def _table(self, section: str, names: tuple[str, ...]) -> TableReader:
        return TableReader(self.p, section, self.data.get(section, {}), names)

    def timeouts(self) -> Timeouts:
        names = tuple(f.name for f in dataclass_fields(Timeouts))
        r = self._table("timeouts", names)
        chosen: dict[str, int] = {}
        for name in names:
            value = r.get(name, lambda v: values.integer(v, 1, 7 * 24 * 3600))
            if value is None:
                continue
            chosen[name] = value
            if value < TIMEOUT_MINIMUMS[name]:
                self.p.warn(
                    "timeouts",
                    f"{name} {value}: below the RFC minimum of {TIMEOUT_MINIMUMS[name]} s",
                )
        return Timeouts(**chosen)

    def filtering(self) -> FilteringModes:
        names = tuple(f.name for f in dataclass_fields(FilteringModes))
        r = self._table("filtering", names)
        chosen = {name: r.get(name, _enum(Filtering)) for name in names}
        return FilteringModes(**{k: v for k, v in chosen.items() if v is not None})

    def limits(self) -> Limits:
        names = tuple(f.name for f in dataclass_fields(Limits))
        r = self._table("limits", names)
        chosen = {name: r.get(name, lambda v: values.integer(v, 0, 1 << 24)) for name in names}
        return Limits(**{k: v for k, v in chosen.items() if v is not None})

    def icmp(self) -> IcmpErrors:
        r = self._table("icmp", ("unreachable_on_exhaustion", "rate", "burst"))
        default = IcmpErrors()
        on = r.get("unreachable_on_exhaustion", values.boolean)
        rate = r.get("rate", lambda v: values.integer(v, 1, 1_000_000))
        burst = r.get("burst", lambda v: values.integer(v, 1, 1_000_000))
        return IcmpErrors(
            default.unreachable_on_exhaustion if on is None else on,
            rate or default.rate,
            burst or default.burst,
        )

    def offload(self) -> OffloadPolicy:
        r = self._table("offload", ("after_packets", "batch_window_ms"))
        after = r.get("after_packets", lambda v: values.integer(v, 1, 255))
        window = r.get("batch_window_ms", lambda v: values.integer(v, 0, 1000))
        default = OffloadPolicy()
        return OffloadPolicy(
            after or default.after_packets,
            default.batch_window_ms if window is None else window,
        )

    def logging(self) -> Logging:
        r = self._table(
            "logging",
            (
                "events",
                "file",
                "syslog_server",
                "ipfix_collector",
                "ipfix_domain",
                "ipfix_sessions",
            ),
        )
        events = r.get("events", _enum(EventLog)) or EventLog.NONE
        path = r.get("file", values.file_path)
        if events is EventLog.FILE and path is None and not r.has("file"):
            r.error("missing field 'file': events = \"file\" needs the file to append to")
        syslog_server = r.get("syslog_server", values.collector)
        ipfix_collector = r.get("ipfix_collector", values.collector)
        domain = r.get("ipfix_domain", values.observation_domain)
        sessions = r.get("ipfix_sessions", values.boolean) or False
        return Logging(
            events,
            path,
            syslog_server,
            ipfix_collector,
            DEFAULT_IPFIX_DOMAIN if domain is None else domain,
            sessions,
        )


def _enum(cls: Any) -> Any:
    def parse(value: Any) -> Any:
        names = [member.value for member in cls]
        if isinstance(value, str):
            for member in cls:
                if member.value == value:
                    return member
            close = difflib.get_close_matches(value, names, n=1)
            if close:
                raise ValueError(f"must be one of {', '.join(names)} (did you mean '{close[0]}'?)")
        raise ValueError("must be one of " + ", ".join(names))

    return parse


def rule_match(r: TableReader, default_id: int) -> Rule | None:
    """The match part of a rule (id, type, prefix, port, protocol), as QNS keys it.

    Shared by the configuration and the QNS test vectors, so both read rules the
    same way."""
    rule_id = r.get("id", lambda v: values.integer(v, 1, 0xFFFFFFFF))
    kind = r.get("type", _enum(RuleKind), required=True)
    prefix = r.get("prefix", values.prefix, required=True)
    port = r.get("port", values.port)
    protocol = r.get("protocol", values.protocol) if r.has("protocol") else Protocol.ANY
    if port is not None and protocol not in (*PORTED_PROTOCOLS, Protocol.ANY):
        r.error(f"port {port}: protocol {protocol} has no ports (use tcp, udp or any)")
        return None
    if kind is None or prefix is None or protocol is None or (r.has("port") and port is None):
        return None
    if r.has("id") and rule_id is None:
        return None
    return Rule(rule_id or default_id, kind, prefix, port, protocol)


def _rule(
    r: TableReader, index: int, pool_names: set[str], declared_pools: set[str]
) -> Rule | None:
    match = rule_match(r, index)
    if match is None:
        return None
    if match.kind is RuleKind.SNAT:
        target = _snat_target(r, pool_names, declared_pools)
    else:
        target = _dnat_target(r, match)
    if target is None:
        return None
    return Rule(match.id, match.kind, match.prefix, match.port, match.protocol, target)


def _snat_target(r: TableReader, pool_names: set[str], declared_pools: set[str]) -> Target | None:
    if r.has("to_port"):
        r.error("to_port: only DNAT rules rewrite the port to a fixed value")
        return None
    if r.has("pool") == r.has("to"):
        r.error("an SNAT rule needs exactly one of 'pool' or 'to'")
        return None
    if r.has("pool"):
        pool = r.get("pool", values.name)
        if pool is None:
            return None
        if pool not in pool_names:
            if pool not in declared_pools:  # else the pool's own error says it all
                r.error(unknown_name_message("pool", pool, tuple(sorted(pool_names))))
            return None
        return SnatToPool(pool)
    address = r.get("to", values.address)
    return None if address is None else SnatToAddress(address)


def _dnat_target(r: TableReader, match: Rule) -> Target | None:
    if r.has("pool"):
        r.error("pool: DNAT rules translate to 'to' (and 'to_port'), not to a pool")
        return None
    to = r.get("to", values.prefix, required=True)
    to_port = r.get("to_port", values.port)
    if to is None or (r.has("to_port") and to_port is None):
        return None
    if to.length not in (32, match.prefix.length):
        r.error(
            f"to {to}: a prefix target must have the same length as the matched prefix "
            f"/{match.prefix.length} (1:1 mapping), or be a single address"
        )
        return None
    if to_port is not None and match.port is None:
        r.error(f"to_port {to_port}: port forwarding needs the matched 'port' too")
        return None
    return DnatTo(to, to_port)
