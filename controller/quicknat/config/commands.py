"""A validated Config as swpath commands (docs/swpath-commands.md).

The DPDK data path reads these instead of TOML, so the configuration keeps a
single parser and validator; the same lines are what its control socket takes.
Every line is rendered through the language's table (command_render.py, from
swpath/spec/commands.toml, as swpath's parser is), so none can hold a word
swpath does not read.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from quicknat.addr import Prefix, parse_ipv4
from quicknat.config.command_render import render
from quicknat.config.instances import ipfix_identity, peer_commands
from quicknat.config.leases import leases
from quicknat.config.model import (
    DEFAULT_MTU,
    Config,
    EventLog,
    Interface,
    Logging,
    OffloadInstall,
    Pool,
    Zone,
)
from quicknat.p4.constants import ZONE_INSIDE, ZONE_OUTSIDE
from quicknat.rules import DnatTo, Protocol, Rule, SnatToAddress, SnatToPool

# (address, port) of a session's end, host order; ICMP: the identifier
Endpoint = tuple[int, int]


def rule_command(rule: Rule) -> str:
    """`rule add ...`: what swpath's `rules` lists back for the rule."""
    target = rule.target
    to: dict[str, object] = {}
    if isinstance(target, SnatToPool):
        to["pool"] = target.pool
    elif isinstance(target, SnatToAddress):
        to["to"] = Prefix(target.address, 32)
    elif isinstance(target, DnatTo):
        to["to"] = target.prefix
        to["to_port"] = target.port
    else:
        raise ValueError(f"rule {rule.id} has no target")
    return render(
        "rule add",
        id=rule.id,
        type=rule.kind,
        prefix=rule.prefix,
        port=rule.port,
        protocol=rule.protocol,
        **to,
    )


def logging_command(logging: Logging, domain: int, nat_instance: int) -> str:
    """`logging ...` of the NAT that exports in observation domain `domain`
    as natInstanceID `nat_instance` (instances.ipfix_identity)."""
    return render(
        "logging",
        events=logging.events,
        file=logging.file if logging.events is EventLog.FILE else None,
        syslog_server=logging.syslog_server,
        syslog_enterprise=logging.syslog_enterprise,
        ipfix_collector=logging.ipfix_collector,
        ipfix_domain=domain,
        nat_instance=nat_instance,
        ipfix_sessions=logging.ipfix_sessions,
    )


def pool_command(pool: Pool) -> str:
    return render(
        "pool",
        pool.name,
        ports=(pool.port_min, pool.port_max),
        preserve_parity=pool.preserve_parity,
        preserve_port=pool.preserve_port,
        addresses=pool.addresses,
    )


def interface_command(interface: Interface, port: int) -> str:
    return render(
        "interface",
        interface.name,
        zone=interface.zone,
        port=port,
        address=interface.address,
        mac=interface.mac,
        mtu=interface.mtu if interface.mtu != DEFAULT_MTU else None,
        vlan=interface.vlan,
        slow_path=interface.slow_path,
    )


def settings_commands(config: Config) -> list[str]:
    """The run-time settings: timeouts, filtering, limits, ICMP errors."""
    t, f, lim, icmp = config.timeouts, config.filtering, config.limits, config.icmp
    return [
        render(
            "timeouts",
            udp=t.udp,
            tcp_established=t.tcp_established,
            tcp_transitory=t.tcp_transitory,
            icmp=t.icmp,
        ),
        render("filtering", udp=f.udp, tcp=f.tcp, icmp=f.icmp),
        render(
            "limits",
            ports_per_host=lim.ports_per_host,
            sessions_per_host=lim.sessions_per_host,
        ),
        render(
            "icmp",
            unreachable_on_exhaustion=icmp.unreachable_on_exhaustion,
            rate=icmp.rate,
            burst=icmp.burst,
        ),
    ]


def config_commands(config: Config, instance: str | None = None) -> list[str]:
    """The commands of the NAT the file configures, or with `instance` those
    a slow-path instance shares with it (its logging identity its own)."""
    lines = [f"# from {config.source}"]
    for index, interface in enumerate(config.interfaces):
        port = interface.port if interface.port is not None else index
        lines.append(interface_command(interface, port))
    lines += [render("route", r.prefix, dev=r.interface, via=r.via) for r in config.routes]
    lines += [render("neighbor", n.address, mac=n.mac, dev=n.interface) for n in config.neighbors]
    lines.extend(pool_command(pool) for pool in config.pools)
    lines.extend(rule_command(rule) for rule in config.rules)
    lines += settings_commands(config)
    lines.append(logging_command(config.logging, *ipfix_identity(config, instance)))
    return lines


def session_command(
    action: str, session_id: int, protocol: Protocol, internal: Endpoint, remote: Endpoint
) -> str:
    """`session offload|idle|onload ID PROTO INTERNAL REMOTE`: the offload
    manager's word on one session, named by its id and found by its
    inside-to-outside key (docs/swpath-commands.md). Endpoints are
    (address, port); for ICMP the port is the identifier."""
    return render(f"session {action}", session_id, protocol, internal, remote)


def adopt_command(
    protocol: Protocol,
    endpoints: tuple[Endpoint, Endpoint, Endpoint],
    origin: str,
    phase: str | None = None,
) -> str:
    """`session adopt PROTO INTERNAL EXTERNAL REMOTE ORIGIN [PHASE]`: a
    session the switch holds, handed back to an instance that lost it;
    PHASE (opening, established, closing, reset) for TCP only."""
    internal, external, remote = endpoints
    return render("session adopt", protocol, internal, external, remote, origin, phase)


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
            commands.append(render("rule del", rule_id))
            if flush:
                commands.append(render("sessions", "delete", rule=rule_id))
    commands += [line for rule_id, line in target.items() if running.get(rule_id) != line]
    commands += [c for c in config_commands(wanted) if c.startswith(RUNTIME_SETTINGS)]
    return commands


# A swpath process's parts that only a restart changes, by the verb of
# their lines (the one list of them: `startup` answers every line the
# process started with).
RESTART_ONLY = {"interface": "interfaces", "pool": "pools", "logging": "logging"}


def restart_only_changes(running: list[str], wanted: Config) -> list[str]:
    """What of `wanted` a swpath process started with the lines `running`
    (its `startup`) would take only at a restart: interfaces, pools,
    logging, in that order; none when the file keeps them as they run."""

    def kept(lines: list[str]) -> set[str]:
        return {line for line in lines if line.split()[0] in RESTART_ONLY}

    differ = {line.split()[0] for line in kept(config_commands(wanted)) ^ kept(running)}
    return [name for verb, name in RESTART_ONLY.items() if verb in differ]


def neighbor_commands(running: list[dict[str, Any]], wanted: Config) -> list[str]:
    """The run-time commands that turn a swpath process's configured
    neighbours (the rows of its `neighbors` in state "configured") into
    `wanted`'s: one the file no longer has deleted (its next packets ask for
    it by ARP), a new or changed one set (over a learned entry too). Sent by
    `quicknat reload` to swpath alone: a slow-path instance's one neighbour
    is the switch, not the file's."""

    def line(address: int | str, mac: str, dev: str) -> str:
        return render("neighbor", address, mac=mac.lower(), dev=dev)

    target = {
        (n.address, n.interface): line(n.address, n.mac, n.interface) for n in wanted.neighbors
    }
    now = {
        (parse_ipv4(row["address"]), row["interface"]): line(
            row["address"], row["mac"], row["interface"]
        )
        for row in running
        if row.get("state") == "configured"
    }
    commands = [
        render("neighbor del", address, dev=dev)
        for address, dev in now
        if (address, dev) not in target
    ]
    commands += [command for key, command in target.items() if now.get(key) != command]
    return commands


def route_commands(running: list[dict[str, Any]], wanted: Config) -> list[str]:
    """The run-time commands that turn a swpath process's routes (the rows of
    its `routes`, the interfaces' connected networks aside) into `wanted`'s:
    `route del` for a prefix the file no longer routes, `route` for a new or
    changed one (swpath replaces a prefix's route in place, and the sessions
    that used it follow at their next packet: control/routes.h). Sent by
    `quicknat reload` to swpath alone: a slow-path instance's routes all
    lead to the switch."""

    def line(prefix: object, dev: str, via: int | str | None) -> str:
        return render("route", prefix, dev=dev, via=via)

    target = {str(r.prefix): line(r.prefix, r.interface, r.via) for r in wanted.routes}
    now = {
        row["prefix"]: line(row["prefix"], row["interface"], row["via"])
        for row in running
        if not row.get("connected")
    }
    commands = [render("route del", prefix) for prefix in now if prefix not in target]
    commands += [command for prefix, command in target.items() if now.get(prefix) != command]
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


def _slow_path_routes(config: Config) -> list[tuple[str, Zone, int | None]]:
    """An instance's routes, all through the switch: each inside network
    (connected or routed), and the default route outside. Each names the
    switch's own address on the port toward those hosts as the `source` of
    the instance's ICMP errors (RFC 1812 sec. 4.3.2.4: the error comes from
    the router the host talks to, not from the instance's link-local
    address, which the host never sees)."""
    by_name = {i.name: i for i in config.interfaces}

    def source(interface: str) -> int | None:
        address = by_name[interface].address
        return None if address is None else address.address

    inside: dict[str, int | None] = {}
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
    routes.append(("0.0.0.0/0", Zone.OUTSIDE, source(outside[0]) if outside else None))
    return routes


def _slow_path_link(config: Config, zone: Zone) -> list[str]:
    """The zone's sub-interface on the port to the switch, and the switch
    on it as a static neighbour."""
    address, switch, mac = SLOW_PATH_LINK[zone]
    # What the instance sends back leaves by one of the switch's ports of
    # the zone, and the switch drops (without an ICMP error) what is over
    # that port's MTU: the instance checks the smallest, and sends the
    # fragmentation needed itself (RFC 1191).
    mtus = [i.mtu for i in config.interfaces if i.zone is zone and not i.slow_path]
    interface = render(
        "interface",
        str(zone),
        zone=zone,
        port=0,
        address=address,
        mac=mac,
        mtu=min(mtus) if mtus and min(mtus) != DEFAULT_MTU else None,
        vlan=SLOW_PATH_VID[zone],
        slow_path=True,
    )
    return [interface, render("neighbor", switch, mac=SLOW_PATH_SWITCH_MAC, dev=str(zone))]


def learn_commands(config: Config) -> list[str]:
    """install = "learn": the instance tags what it translates for the switch
    to learn, under each kind's lease (config/leases.py: the policy is here,
    swpath applies it)."""
    if config.offload.install is not OffloadInstall.LEARN:
        return []
    lines = [render("offload learn", True)]
    for kind, lease in leases(config.timeouts, config.offload.learn_timeouts).items():
        lines.append(
            render(
                "offload lease", kind, **{"class": lease.timeout_class, "seconds": lease.seconds}
            )
        )
    return lines


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
    links = [_slow_path_link(config, zone) for zone in (Zone.INSIDE, Zone.OUTSIDE)]
    lines += [interface for interface, _ in links]
    lines += [
        render("route", prefix, dev=str(zone), via=SLOW_PATH_LINK[zone][1], source=source)
        for prefix, zone, source in _slow_path_routes(config)
    ]
    lines += [neighbor for _, neighbor in links]
    shared = config_commands(
        replace(config, interfaces=(), routes=(), neighbors=(), pools=()), name
    )
    lines += [pool_command(pool) for pool in pools]
    lines += shared[1:]  # rules and settings (after its "# from" line)
    lines += learn_commands(config)
    lines.append(render("offload", after_packets=config.offload.after_packets))
    lines += peer_commands(config, name)
    return lines
