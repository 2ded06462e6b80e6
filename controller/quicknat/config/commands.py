"""A validated Config as swpath commands (docs/swpath-commands.md).

The DPDK data path reads these instead of TOML, so the configuration keeps a
single parser and validator; the same lines are what its control socket takes.
"""

from __future__ import annotations

from quicknat.addr import format_ipv4
from quicknat.config.model import DEFAULT_MTU, Config, EventLog, Logging, Pool
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
