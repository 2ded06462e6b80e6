"""A validated Config as swpath commands (docs/swpath-commands.md).

The DPDK data path reads these instead of TOML, so the configuration keeps a
single parser and validator; the same lines are what its control socket takes.
"""

from __future__ import annotations

from dataclasses import replace

from quicknat.addr import format_ipv4
from quicknat.config.instances import peer_commands
from quicknat.config.model import DEFAULT_MTU, Config, EventLog, Logging, Pool, Zone
from quicknat.config.values import display
from quicknat.p4.constants import ZONE_INSIDE, ZONE_OUTSIDE
from quicknat.rules import DnatTo, Rule, SnatToAddress, SnatToPool


def rule_command(rule: Rule) -> str:
    words = ["rule", "add", "id", str(rule.id), "type", str(rule.kind), "prefix", str(rule.prefix)]
    if rule.port is not None:
        words += ["port", str(rule.port)]
    words += ["protocol", str(rule.protocol)]
    target = rule.target
    if isinstance(target, SnatToPool):
        words += ["pool", target.pool]
    elif isinstance(target, SnatToAddress):
        words += ["to", f"{format_ipv4(target.address)}/32"]
    elif isinstance(target, DnatTo):
        words += ["to", str(target.prefix)]
        if target.port is not None:
            words += ["to_port", str(target.port)]
    else:
        raise ValueError(f"rule {rule.id} has no target")
    return " ".join(words)


def logging_command(logging: Logging) -> str:
    line = f"logging events {logging.events}"
    if logging.events is EventLog.FILE:
        line += f" file {logging.file}"
    for word in ("syslog_server", "ipfix_collector"):
        where = getattr(logging, word)
        if where is not None:
            line += f" {word} {where[0]}:{where[1]}"
    return line


def pool_command(pool: Pool) -> str:
    addresses = " ".join(str(prefix) for prefix in pool.addresses)
    return (
        f"pool {pool.name} ports {pool.port_min}-{pool.port_max} "
        f"preserve_parity {display(pool.preserve_parity)} "
        f"preserve_port {display(pool.preserve_port)} addresses {addresses}"
    )


def config_commands(config: Config) -> list[str]:
    lines = [f"# from {config.source}"]
    for index, interface in enumerate(config.interfaces):
        port = interface.port if interface.port is not None else index
        line = f"interface {interface.name} zone {interface.zone} port {port}"
        if interface.address is not None:
            line += f" address {interface.address}"
        if interface.mac is not None:
            line += f" mac {interface.mac}"
        if interface.mtu != DEFAULT_MTU:
            line += f" mtu {interface.mtu}"
        if interface.vlan is not None:
            line += f" vlan {interface.vlan}"
        if interface.slow_path:
            line += " slow_path true"
        lines.append(line)
    for route in config.routes:
        line = f"route {route.prefix} dev {route.interface}"
        if route.via is not None:
            line += f" via {format_ipv4(route.via)}"
        lines.append(line)
    for n in config.neighbors:
        lines.append(f"neighbor {format_ipv4(n.address)} mac {n.mac} dev {n.interface}")
    lines.extend(pool_command(pool) for pool in config.pools)
    lines.extend(rule_command(rule) for rule in config.rules)
    t, f, lim = config.timeouts, config.filtering, config.limits
    lines.append(
        f"timeouts udp {t.udp} tcp_established {t.tcp_established} "
        f"tcp_transitory {t.tcp_transitory} icmp {t.icmp}"
    )
    lines.append(f"filtering udp {f.udp} tcp {f.tcp} icmp {f.icmp}")
    lines.append(
        f"limits ports_per_host {lim.ports_per_host} sessions_per_host {lim.sessions_per_host}"
    )
    icmp = config.icmp
    on = "on" if icmp.unreachable_on_exhaustion else "off"
    lines.append(f"icmp unreachable_on_exhaustion {on} rate {icmp.rate} burst {icmp.burst}")
    lines.append(logging_command(config.logging))
    return lines


RUNTIME_SETTINGS = ("timeouts ", "filtering ", "limits ", "icmp ")


def runtime_commands(running: dict[int, str], wanted: Config, flush: bool) -> list[str]:
    """The run-time commands that turn a swpath process whose rules are
    `running` (id -> its `rule add` line, as `rules` lists them) into
    `wanted`'s rules and settings: a removed or changed rule deleted (with
    `flush`, its sessions too), a new or changed one added, and the
    settings that change at run time. `quicknat reload` sends these to
    swpath, and the controller in offload mode to each instance."""
    target = {rule.id: rule_command(rule) for rule in wanted.rules}
    commands = []
    for rule_id, line in running.items():
        if target.get(rule_id) != line:  # removed or changed
            commands.append(f"rule del {rule_id}")
            if flush:
                commands.append(f"sessions delete rule {rule_id}")
    commands += [line for rule_id, line in target.items() if running.get(rule_id) != line]
    commands += [c for c in config_commands(wanted) if c.startswith(RUNTIME_SETTINGS)]
    return commands


# A slow-path instance's link to the switch (docs/offload.md): two /30s of the
# link-local range, one per zone; the switch answers no ARP on a slow-path
# port and checks no destination MAC there, so its side is a static neighbour.
SLOW_PATH_LINK = {
    Zone.INSIDE: ("169.254.0.1/30", "169.254.0.2", "02:00:00:00:fe:01"),
    Zone.OUTSIDE: ("169.254.0.5/30", "169.254.0.6", "02:00:00:00:fe:02"),
}
SLOW_PATH_SWITCH_MAC = "02:00:00:00:fe:fe"
SLOW_PATH_VID = {Zone.INSIDE: ZONE_INSIDE, Zone.OUTSIDE: ZONE_OUTSIDE}  # p4src: the zone is the VID


def _slow_path_routes(config: Config) -> list[tuple[str, Zone, str]]:
    """An instance's routes, all through the switch: each inside network
    (connected or routed), and the default route outside. Each names the
    switch's own address on the port toward those hosts as the `source` of
    the instance's ICMP errors (RFC 1812 sec. 4.3.2.4: the error comes from
    the router the host talks to, not from the instance's link-local
    address, which the host never sees)."""
    by_name = {i.name: i for i in config.interfaces}

    def source(interface: str) -> str:
        address = by_name[interface].address
        return "" if address is None else f" source {format_ipv4(address.address)}"

    inside: dict[str, str] = {}
    for i in config.interfaces:
        if i.zone is Zone.INSIDE and i.address is not None and not i.slow_path:
            inside[str(i.address.network)] = source(i.name)
    for r in config.routes:
        if by_name[r.interface].zone is Zone.INSIDE:
            inside.setdefault(str(r.prefix), source(r.interface))
    routes = [(prefix, Zone.INSIDE, inside[prefix]) for prefix in sorted(inside)]
    outside = [r.interface for r in config.routes if r.prefix.length == 0]
    outside += [i.name for i in config.interfaces if i.zone is Zone.OUTSIDE and i.address]
    outside = [n for n in outside if by_name[n].zone is Zone.OUTSIDE]
    routes.append(("0.0.0.0/0", Zone.OUTSIDE, source(outside[0]) if outside else ""))
    return routes


def slow_path_commands(config: Config, name: str) -> list[str]:
    """The swpath commands of slow-path instance `name` of the switch's
    configuration: the two zones as 802.1Q sub-interfaces of its DPDK port 0,
    the inside networks and everything else back through the switch, and the
    switch's pools cut to the instance's port block (RFC 7422), its rules,
    timeouts, filtering, limits, ICMP and logging as they are; with several
    instances, each of them as a `peer` (config/instances.py).
    ValueError when there is no such instance, or a pool has no port in its
    block."""
    by_name = {sp.name: sp for sp in config.slow_paths}
    if name not in by_name:
        known = ", ".join(by_name) or "none"
        raise ValueError(f"no [[slow_path]] named {name!r} (there are: {known})")
    sp = by_name[name]
    pools = []
    for pool in config.pools:
        low, high = max(pool.port_min, sp.port_min), min(pool.port_max, sp.port_max)
        if low > high:
            raise ValueError(
                f"pool {pool.name} ({pool.port_min}-{pool.port_max}) has no port in "
                f"slow_path {name}'s block {sp.port_min}-{sp.port_max}"
            )
        pools.append(replace(pool, port_min=low, port_max=high))
    lines = [f"# slow-path instance {name} of {config.source}"]
    for zone in (Zone.INSIDE, Zone.OUTSIDE):
        address, _, mac = SLOW_PATH_LINK[zone]
        # What the instance sends back leaves by one of the switch's ports of
        # the zone, and the switch drops (without an ICMP error) what is over
        # that port's MTU: the instance checks the smallest, and sends the
        # fragmentation needed itself (RFC 1191).
        mtus = [i.mtu for i in config.interfaces if i.zone is zone and not i.slow_path]
        mtu = f" mtu {min(mtus)}" if mtus and min(mtus) != DEFAULT_MTU else ""
        lines.append(
            f"interface {zone} zone {zone} port 0 address {address} mac {mac}{mtu} "
            f"vlan {SLOW_PATH_VID[zone]} slow_path true"
        )
    lines += [
        f"route {prefix} dev {zone} via {SLOW_PATH_LINK[zone][1]}{source}"
        for prefix, zone, source in _slow_path_routes(config)
    ]
    lines += [
        f"neighbor {SLOW_PATH_LINK[zone][1]} mac {SLOW_PATH_SWITCH_MAC} dev {zone}"
        for zone in (Zone.INSIDE, Zone.OUTSIDE)
    ]
    shared = config_commands(replace(config, interfaces=(), routes=(), neighbors=(), pools=()))
    lines += [pool_command(pool) for pool in pools]
    lines += shared[1:]  # rules and settings (after its "# from" line)
    lines.append(f"offload after_packets {config.offload.after_packets}")
    lines += peer_commands(config, name)
    return lines
