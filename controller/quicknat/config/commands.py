"""A validated Config as swpath commands (docs/swpath-commands.md).

The DPDK data path reads these instead of TOML, so the configuration keeps a
single parser and validator; the same lines are what its control socket takes.
"""

from __future__ import annotations

from dataclasses import replace

from quicknat.addr import format_ipv4
from quicknat.config.model import DEFAULT_MTU, Config, EventLog, Logging, Pool, Zone
from quicknat.config.values import display
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


# A slow-path instance's link to the switch (docs/offload.md): two /30s of the
# link-local range, one per zone; the switch answers no ARP on a slow-path
# port and checks no destination MAC there, so its side is a static neighbour.
SLOW_PATH_LINK = {
    Zone.INSIDE: ("169.254.0.1/30", "169.254.0.2", "02:00:00:00:fe:01"),
    Zone.OUTSIDE: ("169.254.0.5/30", "169.254.0.6", "02:00:00:00:fe:02"),
}
SLOW_PATH_SWITCH_MAC = "02:00:00:00:fe:fe"
SLOW_PATH_VID = {Zone.INSIDE: 1, Zone.OUTSIDE: 2}  # p4src: the zone is the VID


def slow_path_commands(config: Config, name: str) -> list[str]:
    """The swpath commands of slow-path instance `name` of the switch's
    configuration: the two zones as 802.1Q sub-interfaces of its DPDK port 0,
    the inside networks and everything else back through the switch, and the
    switch's pools cut to the instance's port block (RFC 7422), its rules,
    timeouts, filtering, limits, ICMP and logging as they are.
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
        lines.append(
            f"interface {zone} zone {zone} port 0 address {address} mac {mac} "
            f"vlan {SLOW_PATH_VID[zone]} slow_path true"
        )
    inside = {i.name for i in config.interfaces if i.zone is Zone.INSIDE}
    networks = {
        str(i.address.network) for i in config.interfaces if i.zone is Zone.INSIDE and i.address
    }
    networks |= {str(r.prefix) for r in config.routes if r.interface in inside}
    via_inside, via_outside = SLOW_PATH_LINK[Zone.INSIDE][1], SLOW_PATH_LINK[Zone.OUTSIDE][1]
    lines += [f"route {n} dev inside via {via_inside}" for n in sorted(networks)]
    lines.append(f"route 0.0.0.0/0 dev outside via {via_outside}")
    lines.append(f"neighbor {via_inside} mac {SLOW_PATH_SWITCH_MAC} dev inside")
    lines.append(f"neighbor {via_outside} mac {SLOW_PATH_SWITCH_MAC} dev outside")
    shared = config_commands(replace(config, interfaces=(), routes=(), neighbors=(), pools=()))
    lines += [pool_command(pool) for pool in pools]
    lines += shared[1:]  # rules and settings (after its "# from" line)
    lines.append(f"offload after_packets {config.offload.after_packets}")
    return lines
