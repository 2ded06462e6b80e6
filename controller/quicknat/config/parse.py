"""The one rules-configuration parser (TOML), for both data paths.

``load_config`` returns a validated ``Config`` or raises ``ConfigError`` with
every problem of the file at once (each section is checked whatever the
others hold), each line naming the file, the line, the entry and the field,
e.g. ``nat.toml:31: rule 7: prefix 10.0.0.0/33: prefix length must be 0..32``;
the warnings come with the errors, not only once those are fixed.
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
    SYSLOG_ENTERPRISE_EXAMPLE,
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
    OffloadInstall,
    OffloadPolicy,
    Pool,
    Route,
    SlowPath,
    Timeouts,
    Zone,
)
from quicknat.config.positions import SourcePositions
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
_TOML_POSITION = re.compile(
    r"^(?P<msg>.*) \(at (line (?P<line>\d+), column (?P<column>\d+)|end of document)\)$"
)


class ConfigError(Exception):
    """An invalid configuration: one message per problem found, and the
    warnings found beside them (a user fixing the file wants both at once)."""

    def __init__(self, messages: list[str], warnings: list[str] | None = None) -> None:
        super().__init__("\n".join(messages))
        self.messages = messages
        self.warnings = warnings or []


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
        # one message only: tomllib stops at the first syntax error
        match = _TOML_POSITION.match(str(exc))
        if match and match["line"]:
            message = f"{source}:{match['line']}: column {match['column']}: {match['msg']}"
        elif match:
            message = f"{source}: at the end: {match['msg']}"
        else:
            message = f"{source}: {exc}"
        raise ConfigError([message]) from None
    return config_from_data(data, source, SourcePositions(text))


def config_from_data(
    data: dict[str, Any], source: str = "<config>", positions: SourcePositions | None = None
) -> Config:
    """A configuration from TOML's data model (the behaviour vectors' JSON
    too); `positions` (of the TOML text) puts line numbers in the messages."""
    problems = Problems(source, positions)
    config = _Parser(problems, data).parse()
    if problems.errors:
        raise ConfigError(problems.errors, problems.warnings)
    assert config is not None
    return config


def _entries(problems: Problems, data: dict[str, Any], section: str) -> list[Any]:
    value = data.get(section, [])
    if not isinstance(value, list):
        problems.error(
            section, f"must be an array of tables, written [[{section}]]", problems.line(section)
        )
        return []
    return value


class _Parser:
    def __init__(self, problems: Problems, data: dict[str, Any]) -> None:
        self.p = problems
        self.data = data
        self._rule_entries: dict[int, int] = {}  # a valid rule's id -> its [[rule]] index

    def parse(self) -> Config | None:
        for key in self.data:
            if key not in ARRAY_SECTIONS + TABLE_SECTIONS:
                self.p.error(
                    "",
                    unknown_name_message("section", key, ARRAY_SECTIONS + TABLE_SECTIONS),
                    self._section_line(key),
                )
        interfaces = self.interfaces()
        by_name = {interface.name: interface for interface in interfaces}
        routes = self.routes(by_name)
        neighbors = self.neighbors(by_name)
        pools = self.pools()
        rules = self.rules({pool.name for pool in pools}, self._declared_names("pool"))
        self._check_fixed_addresses(rules, pools)
        # the pools rules name, valid rules or not: a refused rule's pool is
        # not unused, its rule is wrong
        used_pools = {
            e["pool"] for e in self._section_entries("rule") if isinstance(e.get("pool"), str)
        }
        for pool in pools:
            if pool.name not in used_pools:
                self.p.warn(
                    f"pool '{pool.name}'",
                    "no SNAT rule uses this pool",
                    self._entry_line("pool", pool.name),
                )
        self._check_pool_sizes(pools, rules)
        # every section is read whatever the others held: all problems at once
        logging = self.logging()
        config = Config(
            source=self.p.source,
            interfaces=interfaces,
            routes=routes,
            neighbors=neighbors,
            pools=pools,
            rules=rules,
            timeouts=self.timeouts(),
            filtering=self.filtering(),
            limits=self.limits(),
            logging=logging,
            icmp=self.icmp(),
            slow_paths=self.slow_paths(interfaces, logging.ipfix_domain),
            offload=self.offload(),
            warnings=tuple(self.p.warnings),
        )
        if self.p.errors:
            return None
        try:
            instances.pins(config)
        except ValueError as exc:
            self.p.error("slow_path", str(exc))
            return None
        return config

    def _section_line(self, key: str) -> int | None:
        """A section's line: its header, its first entry's, or its key's."""
        return self.p.line(key) or self.p.line(key, 1)

    def _section_entries(self, section: str) -> list[dict[str, Any]]:
        """The tables of an array section as written, valid or not."""
        entries = self.data.get(section, [])
        return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []

    def _entry_line(self, section: str, name: str) -> int | None:
        """The line of the first `[[section]]` entry called `name`."""
        entries = self.data.get(section, [])
        for index, entry in enumerate(entries if isinstance(entries, list) else [], 1):
            if isinstance(entry, dict) and entry.get("name") == name:
                return self.p.line(section, index)
        return None

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
            r.error(unknown_name_message(kind, name, tuple(sorted(valid))), kind)
        return False

    def _check_fixed_addresses(self, rules: tuple[Rule, ...], pools: tuple[Pool, ...]) -> None:
        """An SNAT `to` address inside a pool would be handed out by two
        allocators, so one address:port could go to two hosts (RFC 4787 REQ-3)."""
        for rule in rules:
            if not isinstance(rule.target, SnatToAddress):
                continue
            for pool in pools:
                if any(rule.target.address in prefix for prefix in pool.addresses):
                    shown = values.display_address(rule.target.address)
                    self.p.error(
                        f"rule {self._rule_entries[rule.id]}",
                        f"to {shown}: is in pool '{pool.name}'; use pool = \"{pool.name}\" "
                        "(an address is allocated from one place only)",
                        self.p.line("rule", self._rule_entries[rule.id], "to"),
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
                ("interface", index),
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
                r.error(f"name {name}: already used by another interface", "name")
                continue
            if slow_path and vlan is None:
                r.error(
                    "slow_path: needs a vlan (the switch tags what it sends with the zone: "
                    "vlan = 1 inside, 2 outside)",
                    "slow_path",
                )
            if port is not None and (port, vlan) in ports:
                what = f"port {port}" if vlan is None else f"vlan {vlan} of port {port}"
                r.error(f"{what}: already used by interface {ports[port, vlan]}", "port")
            if name is None or zone is None:
                continue
            if port is not None:
                ports[port, vlan] = name
            result.append(
                Interface(name, zone, port, address, mac, mtu or DEFAULT_MTU, vlan, slow_path)
            )
        # the zones written, entries valid or not (one refused for another
        # reason still has its zone); an entry without a valid zone may be
        # the one missing, and its own message says so already
        zones = {Zone.INSIDE.value, Zone.OUTSIDE.value}
        written = {e.get("zone") if isinstance(e, dict) else None for e in entries}
        if written <= zones and written != zones:
            self.p.error("interfaces", "need at least one inside and one outside interface")
        return tuple(result)

    # -- [[slow_path]] (offload mode) ------------------------------------------

    def slow_paths(
        self, interfaces: tuple[Interface, ...], base_domain: int
    ) -> tuple[SlowPath, ...]:
        """The instances; `base_domain` ([logging] ipfix_domain) is the one
        their observation domains must differ from (_check_ipfix_domain)."""
        result: list[SlowPath] = []
        ports = {i.port: i.name for i in interfaces if i.port is not None}
        domains = {base_domain: "[logging]'s"}
        for index, entry in enumerate(_entries(self.p, self.data, "slow_path"), 1):
            r = TableReader(
                self.p,
                f"slow_path {index}",
                entry,
                ("name", "port", "control", "ports", "default", "ipfix_domain"),
                ("slow_path", index),
            )
            name = r.get("name", values.name, required=True)
            port = r.get("port", lambda v: values.integer(v, 0, 511), required=True)
            control = r.get("control", values.file_path, required=True)
            block = r.get("ports", values.port_range) if r.has("ports") else (1024, 65535)
            default = r.get("default", values.boolean) or False
            domain = r.get("ipfix_domain", values.observation_domain)
            if not r.has("ipfix_domain") or domain is not None:
                self._check_ipfix_domain(r, domains, index, name, domain, base_domain)
            if default and any(sp.default for sp in result):
                r.error(
                    "default: another slow_path is the default already (at most one)", "default"
                )
                continue
            if name is not None and any(sp.name == name for sp in result):
                r.error(f"name {name}: already used by another slow_path", "name")
                continue
            if port is not None and port in ports:
                r.error(f"port {port}: already used by {ports[port]}", "port")
                continue
            if block is not None:
                for other in result:
                    if block[0] <= other.port_max and other.port_min <= block[1]:
                        r.error(
                            f"ports {block[0]}-{block[1]}: overlap slow_path {other.name}'s "
                            f"{other.port_min}-{other.port_max} "
                            "(each owns its own block, RFC 7422)",
                            "ports",
                        )
            if name is None or port is None or control is None or block is None:
                continue
            ports[port] = f"slow_path {name}"
            result.append(SlowPath(name, port, control, block[0], block[1], default, domain))
        return tuple(result)

    @staticmethod
    def _check_ipfix_domain(
        r: TableReader,
        domains: dict[int, str],
        index: int,
        name: str | None,
        domain: int | None,
        base_domain: int,
    ) -> None:
        """Each exporter its own observation domain (RFC 7011 sec. 3.1: a
        collector keys records by exporter and domain, so two instances in one
        would mix their records). Unnamed, an instance's is the base's + its
        position in the file (instances.ipfix_identity), checked here with the
        entry's line whatever the other entries hold."""
        field = "ipfix_domain" if domain is not None else None
        if domain is None:
            domain = base_domain + index
            if domain > 0xFFFFFFFF:
                r.error(
                    f"ipfix_domain: [logging] ipfix_domain {base_domain} + {index} = {domain} "
                    "is past 4294967295 (name one with ipfix_domain)"
                )
                return
        shown = "is" if field else f"(the default, [logging]'s + {index}) is"
        if domain in domains:
            r.error(
                f"ipfix_domain {domain} {shown} {domains[domain]} already "
                "(each instance exports in its own observation domain)",
                field,
            )
            return
        domains[domain] = f"slow_path {name}'s" if name else f"slow_path {index}'s"

    # -- [[route]] and [[neighbor]] --------------------------------------------

    def routes(self, interfaces: dict[str, Interface]) -> tuple[Route, ...]:
        result: list[Route] = []
        for index, entry in enumerate(_entries(self.p, self.data, "route"), 1):
            r = TableReader(
                self.p, f"route {index}", entry, ("prefix", "via", "interface"), ("route", index)
            )
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
                    f"network {link.network}",
                    "via",
                )
                continue
            if any(route.prefix == prefix for route in result):
                r.error(f"prefix {prefix}: another route has the same prefix", "prefix")
                continue
            result.append(Route(prefix, interface, via))
        return tuple(result)

    def neighbors(self, interfaces: dict[str, Interface]) -> tuple[Neighbor, ...]:
        result: list[Neighbor] = []
        for index, entry in enumerate(_entries(self.p, self.data, "neighbor"), 1):
            r = TableReader(
                self.p,
                f"neighbor {index}",
                entry,
                ("address", "mac", "interface"),
                ("neighbor", index),
            )
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
                    f"address {values.display_address(address)}: already a neighbor on {interface}",
                    "address",
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
                    self._entry_line("pool", pool_name),
                )
            capacity = pool.address_count * ports
            if capacity < hosts:
                self.p.warn(
                    f"pool '{pool_name}'",
                    f"{capacity} external port{'s' if capacity != 1 else ''} for the {hosts} "
                    "internal addresses its SNAT rules cover: at most "
                    f"{capacity} internal endpoint{'s' if capacity != 1 else ''} at a time "
                    "get a mapping",
                    self._entry_line("pool", pool_name),
                )

    def pools(self) -> tuple[Pool, ...]:
        result: list[Pool] = []
        for index, entry in enumerate(_entries(self.p, self.data, "pool"), 1):
            r = TableReader(self.p, f"pool {index}", entry, POOL_FIELDS, ("pool", index))
            name = r.get("name", values.name, required=True)
            ports = r.get("ports", values.port_range) if r.has("ports") else (1024, 65535)
            prefixes = self._pool_prefixes(r)
            policy = {f: r.get(f, values.boolean) for f in ("preserve_parity", "preserve_port")}
            if name is not None and any(pool.name == name for pool in result):
                r.error(f"name {name}: already used by another pool", "name")
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
                r.warn(
                    f"ports {pool.port_min}-{pool.port_max}: all below 1024, so only internal "
                    "ports below 1024 can be translated with this pool (RFC 4787 REQ-3)",
                    "ports",
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
            r.error("addresses: must be a non-empty list of addresses or prefixes", "addresses")
            return None
        prefixes: list[Prefix] = []
        for item in raw:
            try:
                prefix = values.prefix(item)
            except ValueError as exc:
                r.error(f"addresses: {values.display(item)}: {exc}", "addresses")
                return None
            for seen in prefixes:
                if prefix.overlaps(seen):
                    r.error(f"addresses: {prefix} overlaps {seen}", "addresses")
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
                            f"{min(pool.port_max, other.port_max)}",
                            "addresses",
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
            r = TableReader(self.p, where, entry, RULE_FIELDS, ("rule", index))
            rule = _rule(r, index, pool_names, declared_pools)
            if rule is None:
                continue
            if rule.id in ids:
                r.error(f"id {rule.id}: already used by rule {ids[rule.id]}", "id")
                continue
            if rule.match_key in keys:
                r.error(f"same match as rule {keys[rule.match_key]} ({rule.describe_match()})")
                continue
            ids[rule.id] = index
            self._rule_entries[rule.id] = index
            keys[rule.match_key] = index
            result.append(rule)
        return tuple(result)

    # -- [timeouts], [filtering], [limits] -------------------------------------

    def _table(self, section: str, names: tuple[str, ...]) -> TableReader:
        return TableReader(self.p, section, self.data.get(section, {}), names, (section, 0))

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
                r.warn(f"{name} {value}: below the RFC minimum of {TIMEOUT_MINIMUMS[name]} s", name)
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
        r = self._table(
            "offload", ("after_packets", "batch_window_ms", "install", "learn_timeouts")
        )
        after = r.get("after_packets", lambda v: values.integer(v, 1, 255))
        window = r.get("batch_window_ms", lambda v: values.integer(v, 0, 1000))
        install = r.get("install", _enum(OffloadInstall))
        timeouts = r.get("learn_timeouts", _learn_timeouts)
        default = OffloadPolicy()
        return OffloadPolicy(
            after or default.after_packets,
            default.batch_window_ms if window is None else window,
            install or default.install,
            timeouts or default.learn_timeouts,
        )

    def logging(self) -> Logging:
        r = self._table(
            "logging",
            (
                "events",
                "file",
                "syslog_server",
                "syslog_enterprise",
                "ipfix_collector",
                "ipfix_domain",
                "ipfix_sessions",
            ),
        )
        events = r.get("events", _enum(EventLog)) or EventLog.NONE
        path = r.get("file", values.file_path)
        if events is EventLog.FILE and path is None and not r.has("file"):
            r.error("missing field 'file': events = \"file\" needs the file to append to", "events")
        syslog_server = r.get("syslog_server", values.collector)
        enterprise = r.get("syslog_enterprise", lambda v: values.integer(v, 1, 0xFFFFFFFF))
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
            SYSLOG_ENTERPRISE_EXAMPLE if enterprise is None else enterprise,
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


def _learn_timeouts(value: Any) -> tuple[int, ...]:
    """A learner's timeout classes (1 to 8, DPDK's classes: seconds, each at
    least 1; quicknat-swx --learn-timeouts takes the same list)."""
    if not isinstance(value, list) or not 1 <= len(value) <= 8:
        raise ValueError("must be a list of 1 to 8 timeouts in seconds (the switch's classes)")
    return tuple(values.integer(v, 1, 7 * 86400) for v in value)


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
        r.error(f"port {port}: protocol {protocol} has no ports (use tcp, udp or any)", "port")
        return None
    if kind is None or prefix is None or protocol is None or (r.has("port") and port is None):
        return None
    if r.has("id") and rule_id is None:
        return None
    return Rule(rule_id or default_id, kind, prefix, port, protocol)


def rule_problems(table: dict[str, Any], source: str) -> list[str]:
    """The problems of one rule on its own, as a file's [[rule]] would have
    them (`quicknat rule add` checks its words so before it connects).
    Whether its pool exists only the running configuration knows."""
    problems = Problems(source)
    reader = TableReader(problems, "", table, RULE_FIELDS)
    pool = table.get("pool")
    named = {pool} if isinstance(pool, str) else set()
    _rule(reader, 0, named, named)
    return problems.errors


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
        r.error("to_port: only DNAT rules rewrite the port to a fixed value", "to_port")
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
                r.error(unknown_name_message("pool", pool, tuple(sorted(pool_names))), "pool")
            return None
        return SnatToPool(pool)
    address = r.get("to", values.address)
    return None if address is None else SnatToAddress(address)


def _dnat_target(r: TableReader, match: Rule) -> Target | None:
    if r.has("pool"):
        r.error("pool: DNAT rules translate to 'to' (and 'to_port'), not to a pool", "pool")
        return None
    to = r.get("to", values.prefix, required=True)
    to_port = r.get("to_port", values.port)
    if to is None or (r.has("to_port") and to_port is None):
        return None
    if to.length not in (32, match.prefix.length):
        r.error(
            f"to {to}: a prefix target must have the same length as the matched prefix "
            f"/{match.prefix.length} (1:1 mapping), or be a single address",
            "to",
        )
        return None
    if to_port is not None and match.port is None:
        r.error(f"to_port {to_port}: port forwarding needs the matched 'port' too", "to_port")
        return None
    return DnatTo(to, to_port)
