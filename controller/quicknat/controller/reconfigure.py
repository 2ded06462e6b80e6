"""Run-time configuration: `rule add`, `rule del`, `reload` (no I/O here).

A change is a new Config, validated by the one configuration parser as a file
would be (the running configuration as TOML data, edited, parsed again), then
compared with the running one: rules, timeouts, filtering, limits, ICMP errors,
routes and neighbours change at run time; interfaces, pools, event logging and
offload mode's instances need a restart (ports in use, sockets open). The
switch gets the difference of the static entries, and in offload mode each
instance the commands of the change first; established sessions keep their
mappings (service.py).

The `rule add` words are swpath's command language (docs/swpath-commands.md),
so one line changes either data path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finsy.proto import p4r

from quicknat.config import load_config
from quicknat.config.commands import rule_command
from quicknat.config.dump import config_to_toml_data
from quicknat.config.model import Config
from quicknat.config.parse import ConfigError, config_from_data

# offload mode's instances and policy are set up with them at start
RESTART_ONLY = ("interfaces", "pools", "logging", "slow_paths", "offload")
_RULE_WORDS = {"id", "type", "prefix", "port", "protocol", "pool", "to", "to_port"}
_INTEGERS = {"id", "port", "to_port"}


class ReconfigureError(ValueError):
    """A change that is refused; the message says why."""


@dataclass(frozen=True, slots=True)
class Change:
    """A run-time change a command asks for."""

    config: Config
    """The configuration wanted: the running one edited, or a file's."""
    flush: bool
    """Whether the sessions of removed or changed rules go too."""


def command_change(line: str, running: Config, config_path: Path | None) -> Change | list[str]:
    """swpath's run-time commands, on the P4 path: `rules` (its answer
    lines), or `rule add ...`, `rule del N [flush]`, `reload [flush] [config
    PATH]` (the change); ReconfigureError with the reason."""
    words = line.split()
    if words == ["rules"]:
        return [rule_command(rule) for rule in running.rules]
    if words[:2] == ["rule", "add"]:
        return Change(with_rule(running, rule_from_words(words[2:])), flush=False)
    if words[:2] == ["rule", "del"] and len(words) in (3, 4) and words[2].isdigit():
        if len(words) == 4 and words[3] != "flush":
            raise ReconfigureError("rule del: expected 'rule del N [flush]'")
        return Change(without_rule(running, int(words[2])), flush=len(words) == 4)
    if words and words[0] == "reload":
        return _reload(words[1:], config_path)
    raise ReconfigureError(f"unknown command {line!r} (rules, rule add, rule del, reload)")


def _reload(words: list[str], config_path: Path | None) -> Change:
    """`reload [flush] [config PATH]`: the file's configuration (by default
    the one the controller started from)."""
    flush = "flush" in words
    rest = [w for w in words if w != "flush"]
    if rest and (len(rest) != 2 or rest[0] != "config"):
        raise ReconfigureError("reload: expected 'reload [flush] [config PATH]'")
    path = Path(rest[1]) if rest else config_path
    if path is None:
        raise ReconfigureError("reload: the controller was not started from a file")
    try:
        return Change(load_config(path), flush)
    except ConfigError as exc:
        raise ReconfigureError("; ".join(exc.messages)) from None


def removed_rules(running: Config, new: Config) -> set[int]:
    """Rules removed, or changed (the same id matching other flows or
    translating them otherwise): those whose sessions `flush` takes."""
    kept = {r.id: r for r in new.rules}
    return {r.id for r in running.rules if kept.get(r.id) != r}


def rule_from_words(words: list[str]) -> dict[str, Any]:
    """`id N type snat|dnat prefix P [port N] protocol X (pool NAME | to P
    [to_port N])` (the words after `rule add`) as a TOML [[rule]] table."""
    if len(words) % 2:
        raise ReconfigureError(f"rule add: {words[-1]}: missing value")
    rule: dict[str, Any] = {}
    for key, value in zip(words[::2], words[1::2], strict=True):
        if key not in _RULE_WORDS:
            raise ReconfigureError(
                f"rule add: unknown word '{key}' ({', '.join(sorted(_RULE_WORDS))})"
            )
        if key in _INTEGERS:
            if not value.isdigit():
                raise ReconfigureError(f"rule add: {key} {value}: must be a number")
            rule[key] = int(value)
        else:
            rule[key] = value
    if "id" not in rule:
        raise ReconfigureError("rule add: needs an id (rule del takes it)")
    if rule.get("type") == "snat" and "to" in rule:
        rule["to"] = rule["to"].removesuffix("/32")  # SNAT to one address
    return rule


def _parse(data: dict[str, Any], source: str) -> Config:
    try:
        return config_from_data(data, source)
    except ConfigError as exc:
        raise ReconfigureError("; ".join(exc.messages)) from None


def with_rule(config: Config, rule: dict[str, Any]) -> Config:
    data = config_to_toml_data(config)
    data["rule"].append(rule)
    return _parse(data, "rule add")


def without_rule(config: Config, rule_id: int) -> Config:
    data = config_to_toml_data(config)
    kept = [r for r in data["rule"] if r["id"] != rule_id]
    if len(kept) == len(data["rule"]):
        raise ReconfigureError(f"rule del: no rule {rule_id}")
    data["rule"] = kept
    return _parse(data, "rule del")


def check_runtime_change(old: Config, new: Config) -> None:
    """Refuses what only a restart changes."""
    changed = [name for name in RESTART_ONLY if getattr(old, name) != getattr(new, name)]
    if changed:
        raise ReconfigureError(
            f"reload: {', '.join(changed)} changed: that needs a restart of the controller "
            "(rules, timeouts, filtering, limits, icmp, routes and neighbours change at run time)"
        )


def _key(entry: p4r.TableEntry) -> tuple[int, bytes, int]:
    matches = b"".join(m.SerializeToString(deterministic=True) for m in entry.match)
    return entry.table_id, matches, entry.priority


@dataclass
class EntryDiff:
    deletes: list[p4r.TableEntry] = field(default_factory=list)
    modifies: list[p4r.TableEntry] = field(default_factory=list)
    inserts: list[p4r.TableEntry] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.deletes or self.modifies or self.inserts)

    def describe(self) -> str:
        inserted, modified, deleted = len(self.inserts), len(self.modifies), len(self.deletes)
        return f"{inserted} inserted, {modified} modified, {deleted} deleted"


def entry_diff(old: Iterable[p4r.TableEntry], new: Iterable[p4r.TableEntry]) -> EntryDiff:
    """What turns the switch's static entries `old` into `new`."""
    before = {_key(e): e for e in old}
    after = {_key(e): e for e in new}
    diff = EntryDiff()
    for key, entry in after.items():
        if key not in before:
            diff.inserts.append(entry)
        elif before[key].action.SerializeToString(
            deterministic=True
        ) != entry.action.SerializeToString(deterministic=True):
            diff.modifies.append(entry)
    diff.deletes = [e for key, e in before.items() if key not in after]
    return diff
