"""Which slow-path instance owns what, with several behind one switch
(offload mode, docs/offload.md "Several instances"). The switch's steering
(`program.slow_path_entries`) and each instance's `peer` lines
(`commands.slow_path_commands`) both follow these functions, so the switch
and the instances agree on every packet:

- an outside packet for a pool address with a port in an instance's block
  (RFC 7422) is that instance's;
- everything else for the NAT's own addresses (DNAT and SNAT `to`
  addresses, pool ports in no block, ICMP errors, whose quoted port the
  switch does not read) is the *default* instance's (`default = true`, or
  the first);
- an inside host goes where the switch's selector hashes its address,
  unless a rule that is not a pool's covers it (a DNAT server, a source of
  an SNAT `to` rule): then it is *pinned* to the instance that takes that
  rule's outside packets, so the replies meet the session the first packet
  opened.

Instances are numbered in the configuration's order; instance i's peer
VIDs are SLOW_PATH_VID_PEER_MIN + 2i (what the switch hands it as a hairpin's
second pass, SLOW_PATH_VID_HANDOFF) and the next (what it relays as from the
outside link, SLOW_PATH_VID_RELAY): p4src/include/define.p4's numbers.
"""

from __future__ import annotations

from quicknat.addr import Prefix
from quicknat.config.command_render import render
from quicknat.config.model import Config
from quicknat.p4.constants import SLOW_PATH_VID_PEER_MIN
from quicknat.rules import DnatTo, SnatToAddress


def peer_vid(index: int) -> int:
    """The VID an instance sends a hairpin for instance `index` with; the
    next one is for what it relays from the outside link."""
    return SLOW_PATH_VID_PEER_MIN + 2 * index


def default_index(config: Config) -> int:
    """The instance that takes what no block names: the one marked
    `default`, or the first."""
    return next((i for i, sp in enumerate(config.slow_paths) if sp.default), 0)


def owner(config: Config, address: int, port: int | None) -> int:
    """The index of the instance that takes outside packets to (address,
    port); port None for a packet without one."""
    if port is not None and any(address in p for pool in config.pools for p in pool.addresses):
        for index, instance in enumerate(config.slow_paths):
            if instance.port_min <= port <= instance.port_max:
                return index
    return default_index(config)


def pins(config: Config) -> list[tuple[Prefix, int]]:
    """(inside prefix, instance index) for each rule that is not a pool's,
    when there are several instances: a DNAT rule's servers go to the owner
    of its published address and port, an SNAT `to` rule's sources to the
    default instance. ValueError when two rules would put overlapping hosts
    on two instances (their replies could reach only one)."""
    if len(config.slow_paths) < 2:
        return []
    pinned: list[tuple[Prefix, int, int]] = []  # prefix, instance, rule id
    for rule in config.rules:
        target = rule.target
        if isinstance(target, DnatTo):
            prefix, index = target.prefix, owner(config, rule.prefix.address, rule.port)
        elif isinstance(target, SnatToAddress):
            prefix, index = rule.prefix, default_index(config)
        else:
            continue
        for other, other_index, other_id in pinned:
            if other_index != index and other.overlaps(prefix):
                names = config.slow_paths
                raise ValueError(
                    f"rule {rule.id} puts {prefix} on slow_path {names[index].name} but rule "
                    f"{other_id} puts {other} on slow_path {names[other_index].name}: "
                    "the hosts of one rule's replies must be on one instance"
                )
        if not any(p == prefix for p, _, _ in pinned):
            pinned.append((prefix, index, rule.id))
    return [(prefix, index) for prefix, index, _ in sorted(pinned, key=lambda p: str(p[0]))]


def peer_commands(config: Config, name: str) -> list[str]:
    """Instance `name`'s `peer` lines: every instance, in order, with its peer
    VID and block, itself marked `self`, the default instance `default`;
    none when it is alone."""
    if len(config.slow_paths) < 2:
        return []
    default = default_index(config)
    return [
        render(
            "peer",
            vid=peer_vid(i),
            ports=(sp.port_min, sp.port_max),
            self=sp.name == name,
            default=i == default,
        )
        for i, sp in enumerate(config.slow_paths)
    ]


def ipfix_identity(config: Config, name: str | None) -> tuple[int, int]:
    """(observation domain, natInstanceID) of the NAT that exports events:
    None, the one this file configures (controller mode, swpath alone),
    instance 0 in [logging] ipfix_domain; else slow-path instance `name`,
    natInstanceID its index + 1 and its own ipfix_domain or the base's
    + 1 + index (RFC 7011 sec. 3.1: a collector keys records by exporter and
    domain; RFC 8158 sec. 4.1.1: natInstanceID names the instance)."""
    base = config.logging.ipfix_domain
    if name is None:
        return base, 0
    for index, sp in enumerate(config.slow_paths):
        if sp.name == name:
            domain = sp.ipfix_domain if sp.ipfix_domain is not None else base + 1 + index
            return domain, index + 1
    raise ValueError(f"no [[slow_path]] named {name!r}")
