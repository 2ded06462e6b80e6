"""A Config as plain JSON data: the golden files' expected form and `quicknat check --json`.

Every value is spelled as a user would write it in the TOML file, so a golden
file reads like the configuration it was parsed from.
"""

from __future__ import annotations

import enum
from dataclasses import fields, is_dataclass
from typing import Any

from quicknat.addr import format_ipv4
from quicknat.config.model import Config, Neighbor, Pool, Route, SlowPath
from quicknat.rules import DnatTo, Rule, SnatToAddress, SnatToPool

# Fields holding a bare address as an int.
_ADDRESS_FIELDS = {(Route, "via"), (Neighbor, "address")}


def _value(owner: type, name: str, value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if (owner, name) in _ADDRESS_FIELDS:
        return format_ipv4(value)
    if isinstance(value, enum.Enum):
        return str(value)
    if name in ("syslog_server", "ipfix_collector"):
        return f"{value[0]}:{value[1]}"  # as written in the TOML
    if isinstance(value, tuple):
        return [_value(owner, name, item) for item in value]
    if is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "length") and hasattr(value, "address"):
            return str(value)  # Prefix, InterfaceAddress
        return to_data(value)
    return value


def _rule(rule: Rule) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": rule.id,
        "type": str(rule.kind),
        "prefix": str(rule.prefix),
        "port": rule.port,
        "protocol": str(rule.protocol),
    }
    target = rule.target
    if isinstance(target, SnatToPool):
        data["pool"] = target.pool
    elif isinstance(target, SnatToAddress):
        data["to"] = format_ipv4(target.address)
    elif isinstance(target, DnatTo):
        data["to"] = str(target.prefix)
        data["to_port"] = target.port
    return data


def _pool(pool: Pool) -> dict[str, Any]:
    return {
        "name": pool.name,
        "addresses": [str(prefix) for prefix in pool.addresses],
        "ports": f"{pool.port_min}-{pool.port_max}",
        "preserve_parity": pool.preserve_parity,
        "preserve_port": pool.preserve_port,
    }


def _slow_path(sp: SlowPath) -> dict[str, Any]:
    return {
        "name": sp.name,
        "port": sp.port,
        "control": sp.control,
        "ports": f"{sp.port_min}-{sp.port_max}",
        "default": sp.default,
    }


def to_data(obj: Any) -> Any:
    if isinstance(obj, Rule):
        return _rule(obj)
    if isinstance(obj, Pool):
        return _pool(obj)
    if isinstance(obj, SlowPath):
        return _slow_path(obj)
    data = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if f.name == "rules":
            data[f.name] = [_rule(rule) for rule in value]
        else:
            data[f.name] = _value(type(obj), f.name, value)
    return data


# config_to_data's plural keys -> the TOML's array-of-tables names
_TOML_ARRAYS = {
    "interfaces": "interface",
    "routes": "route",
    "neighbors": "neighbor",
    "pools": "pool",
    "rules": "rule",
    "slow_paths": "slow_path",
}


def config_to_toml_data(config: Config) -> dict[str, Any]:
    """The TOML data model that parses back to `config` (config_from_data):
    what run-time changes edit and validate with the one parser."""
    data = config_to_data(config)
    del data["warnings"]
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in _TOML_ARRAYS:
            out[_TOML_ARRAYS[key]] = [
                {k: v for k, v in entry.items() if v is not None} for entry in value
            ]
        else:
            out[key] = {k: v for k, v in value.items() if v is not None}
    for rule in out["rule"]:
        if rule["type"] == "snat" and "to" in rule:
            rule["to"] = rule["to"].removesuffix("/32")  # SNAT to one address
    return out


def config_to_data(config: Config) -> dict[str, Any]:
    data = to_data(config)
    del data["source"]  # golden files must not depend on where they were read from
    return dict(data)
