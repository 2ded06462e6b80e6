"""QNS (Quick NAT Search): O(1) NAT rule lookup, as specified in docs/qns.md.

One sub-table per (kind, prefix length). A sub-table maps the masked address to
the rules at that address, keyed by an integer that packs (port or wildcard,
protocol or any), so one probe is one dict lookup on a small int. Only non-empty
sub-tables are visited (the paper's bitmap is the ``_order`` list here), longest
prefix first.

The C implementation (swpath/qns/qns.c) has the same semantics; the vectors in
tests/vectors/qns/ are run against both.
"""

from __future__ import annotations

from collections.abc import Iterator

from quicknat.addr import MAX_PLEN, mask_of
from quicknat.rules import PORTED_PROTOCOLS, Protocol, Rule, RuleKind

# Probe key: (port << 8) | protocol, with port WILDCARD_PORT for "any port" and
# protocol 0 (Protocol.ANY) for "any protocol".
WILDCARD_PORT = 1 << 16
_WILD = WILDCARD_PORT << 8
_PORTED = (int(Protocol.TCP), int(Protocol.UDP))

_SubTable = dict[int, dict[int, Rule]]


class QnsError(Exception):
    """A rule change QNS refuses; the rule set is left as it was."""


class RuleExists(QnsError):
    pass


class RuleNotFound(QnsError):
    pass


class InvalidRule(QnsError):
    pass


def _probe_key(rule: Rule) -> int:
    port = WILDCARD_PORT if rule.port is None else rule.port
    return (port << 8) | int(rule.protocol)


class Qns:
    """The rule table. Not thread-safe: the controller updates and reads it from
    one asyncio loop (the C library is the one with lock-free readers)."""

    __slots__ = ("_by_id", "_order", "_tables")

    def __init__(self) -> None:
        # _tables[kind][plen]: masked address -> probe key -> rule
        self._tables: dict[RuleKind, list[_SubTable]] = {
            kind: [{} for _ in range(MAX_PLEN + 1)] for kind in RuleKind
        }
        # Non-empty sub-tables per kind, longest prefix first: (mask, sub-table).
        self._order: dict[RuleKind, list[tuple[int, _SubTable]]] = {kind: [] for kind in RuleKind}
        self._by_id: dict[int, Rule] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[Rule]:
        return iter(self._by_id.values())

    def get(self, rule_id: int) -> Rule | None:
        return self._by_id.get(rule_id)

    def add(self, rule: Rule) -> None:
        """Add a rule; raises RuleExists (same id or same match) or InvalidRule."""
        if rule.id <= 0:
            raise InvalidRule(f"rule id {rule.id}: must be positive")
        if rule.port is not None and rule.protocol not in (*PORTED_PROTOCOLS, Protocol.ANY):
            raise InvalidRule(f"rule {rule.id}: a port needs protocol tcp, udp or any")
        if rule.id in self._by_id:
            raise RuleExists(f"rule id {rule.id} already exists")
        table = self._tables[rule.kind][rule.prefix.length]
        entries = table.setdefault(rule.prefix.address, {})
        key = _probe_key(rule)
        existing = entries.get(key)
        if existing is not None:
            raise RuleExists(f"rule {rule.id}: same match as rule {existing.id}")
        entries[key] = rule
        self._by_id[rule.id] = rule
        if len(table) == 1 and len(entries) == 1:
            self._reorder(rule.kind)

    def remove(self, rule_id: int) -> Rule:
        """Remove a rule by id and return it; raises RuleNotFound."""
        rule = self._by_id.pop(rule_id, None)
        if rule is None:
            raise RuleNotFound(f"no rule with id {rule_id}")
        table = self._tables[rule.kind][rule.prefix.length]
        entries = table[rule.prefix.address]
        del entries[_probe_key(rule)]
        if not entries:
            del table[rule.prefix.address]
            if not table:
                self._reorder(rule.kind)
        return rule

    def _reorder(self, kind: RuleKind) -> None:
        tables = self._tables[kind]
        # A new list, not an in-place edit: a lookup holding the old one stays valid.
        self._order[kind] = [
            (mask_of(plen), tables[plen]) for plen in range(MAX_PLEN, -1, -1) if tables[plen]
        ]

    def lookup(self, protocol: int, src: int, sport: int, dst: int, dport: int) -> Rule | None:
        """The first matching rule: DNAT (on the destination) before SNAT (on the
        source), each as in lookup_kind. This is the per-new-flow hot path, so the
        two kinds are written out rather than calling lookup_kind twice."""
        if protocol in _PORTED:
            exact = dport << 8
            keys: tuple[int, ...] = (exact | protocol, exact, _WILD | protocol, _WILD)
        else:
            keys = (_WILD | protocol, _WILD)
        for mask, table in self._order[RuleKind.DNAT]:
            entries = table.get(dst & mask)
            if entries is not None:
                for key in keys:
                    rule = entries.get(key)
                    if rule is not None:
                        return rule
        if protocol in _PORTED:
            exact = sport << 8
            keys = (exact | protocol, exact, _WILD | protocol, _WILD)
        for mask, table in self._order[RuleKind.SNAT]:
            entries = table.get(src & mask)
            if entries is not None:
                for key in keys:
                    rule = entries.get(key)
                    if rule is not None:
                        return rule
        return None

    def lookup_kind(self, kind: RuleKind, protocol: int, address: int, port: int) -> Rule | None:
        """Longest prefix first; exact port before wildcard; exact protocol before any.
        ``port`` is ignored unless the protocol is TCP or UDP."""
        if protocol in _PORTED:
            exact = port << 8
            keys: tuple[int, ...] = (exact | protocol, exact, _WILD | protocol, _WILD)
        else:
            keys = (_WILD | protocol, _WILD)
        for mask, table in self._order[kind]:
            entries = table.get(address & mask)
            if entries is not None:
                for key in keys:
                    rule = entries.get(key)
                    if rule is not None:
                        return rule
        return None
