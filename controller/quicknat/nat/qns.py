"""QNS (Quick NAT Search): O(1) NAT rule lookup, as specified in docs/qns.md.

One sub-table per (kind, prefix length). A sub-table maps the masked address to
the rules at that address, keyed by an integer that packs (port or wildcard,
protocol or any), so one probe is one dict lookup on a small int. Only non-empty
sub-tables are visited, longest prefix first; the paper's bitmap of non-empty
sub-tables is refined by /16 blocks (as the C filter's block table does): a
lookup visits the /16../32 sub-tables that have an address in the packet
address's /16, then the non-empty ones shorter than /16. Each visit is a turn of
an interpreted loop, the lookup's main cost, so skipping the sub-tables that
cannot match pays even though each would only be a dict miss.

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

# Blocks are /16s: sub-tables of /16 and longer are listed per block.
_BLOCK_SHIFT = 16
_BLOCK_PLEN = MAX_PLEN - _BLOCK_SHIFT
_BLOCKS = 1 << (MAX_PLEN - _BLOCK_SHIFT)

_SubTable = dict[int, dict[int, Rule]]
# What a lookup visits, in order: (netmask, sub-table) pairs.
_Visits = tuple[tuple[int, _SubTable], ...]


class QnsError(Exception):
    """A rule change QNS refuses; the rule set is left as it was."""


class RuleExists(QnsError):
    pass


class RuleNotFound(QnsError):
    pass


class InvalidRule(QnsError):
    pass


# One int object per probe key in use, shared by all the rules that have it: a
# dict hit compares the stored key with the lookup's, and a shared key is in
# the cache where one per rule would be a cache miss per lookup at 100,000 rules.
_PROBE_KEYS: dict[int, int] = {}


def _probe_key(rule: Rule) -> int:
    port = WILDCARD_PORT if rule.port is None else rule.port
    key = (port << 8) | int(rule.protocol)
    return _PROBE_KEYS.setdefault(key, key)


class _KindTables:
    """The sub-tables of one kind and the visit lists lookups read.

    ``short`` lists the non-empty sub-tables shorter than a block, longest
    first. ``blocks[address >> 16]`` is the visit list for addresses in that
    block: the /16../32 sub-tables with an address in the block, longest first,
    then ``short``; a block with none has ``short`` itself. ``blocks`` is a list
    indexed by block, not a dict: at 100,000 rules a lookup's cost is its cache
    misses, and a list item is one where a dict hit is three (index, entry,
    key). For the same reason the visit lists are shared: one tuple per set of
    long lengths (``visits``), of one (netmask, sub-table) pair per length, so
    the few there are stay in the cache where one per block would be a miss.
    They are replaced, never edited, so a lookup holding one stays valid."""

    __slots__ = ("blocks", "long", "pairs", "short", "tables", "used", "visits")

    def __init__(self) -> None:
        # tables[plen]: masked address -> probe key -> rule
        self.tables: list[_SubTable] = [{} for _ in range(MAX_PLEN + 1)]
        self.pairs = [(mask_of(plen), self.tables[plen]) for plen in range(MAX_PLEN + 1)]
        self.short: _Visits = ()
        self.blocks: list[_Visits] = [self.short] * _BLOCKS
        # Per block, the /16../32 lengths with an address in it, longest first;
        # per (block, length), keyed block << 6 | length, how many addresses of
        # that sub-table lie in the block.
        self.long: dict[int, tuple[int, ...]] = {}
        self.used: dict[int, int] = {}
        # Per set of long lengths, the visit list of the blocks that have it.
        self.visits: dict[tuple[int, ...], _Visits] = {}

    def address_added(self, plen: int, address: int) -> None:
        if plen < _BLOCK_PLEN:
            if len(self.tables[plen]) == 1:
                self._short_changed()
            return
        block = address >> _BLOCK_SHIFT
        key = block << 6 | plen
        count = self.used.get(key, 0)
        self.used[key] = count + 1
        if count == 0:
            self._block_changed(block)

    def address_removed(self, plen: int, address: int) -> None:
        if plen < _BLOCK_PLEN:
            if not self.tables[plen]:
                self._short_changed()
            return
        block = address >> _BLOCK_SHIFT
        key = block << 6 | plen
        count = self.used.pop(key) - 1
        if count:
            self.used[key] = count
        else:
            self._block_changed(block)

    def _block_changed(self, block: int) -> None:
        used = self.used
        lengths = range(MAX_PLEN, _BLOCK_PLEN - 1, -1)
        long = tuple(plen for plen in lengths if block << 6 | plen in used)
        if long:
            self.long[block] = long
            self.blocks[block] = self._visit(long)
        else:
            del self.long[block]
            self.blocks[block] = self.short

    def _visit(self, long: tuple[int, ...]) -> _Visits:
        """The shared visit list for blocks with these long lengths."""
        visit = self.visits.get(long)
        if visit is None:
            pairs = self.pairs
            visit = self.visits[long] = tuple(pairs[plen] for plen in long) + self.short
        return visit

    def _short_changed(self) -> None:
        tables, pairs = self.tables, self.pairs
        self.short = short = tuple(
            pairs[plen] for plen in range(_BLOCK_PLEN - 1, -1, -1) if tables[plen]
        )
        # Rare (a short length gains its first or loses its last address), and
        # then every block's list ends differently.
        self.visits = {}
        blocks = [short] * _BLOCKS
        for block, long in self.long.items():
            blocks[block] = self._visit(long)
        self.blocks = blocks


class Qns:
    """The rule table. Not thread-safe: the controller updates and reads it from
    one asyncio loop (the C library is the one with lock-free readers)."""

    __slots__ = ("_by_id", "_dnat", "_kinds", "_snat")

    def __init__(self) -> None:
        self._kinds: dict[RuleKind, _KindTables] = {kind: _KindTables() for kind in RuleKind}
        self._dnat = self._kinds[RuleKind.DNAT]
        self._snat = self._kinds[RuleKind.SNAT]
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
        kind = self._kinds[rule.kind]
        plen, address = rule.prefix.length, rule.prefix.address
        table = kind.tables[plen]
        entries = table.get(address)
        key = _probe_key(rule)
        if entries is not None and key in entries:
            raise RuleExists(f"rule {rule.id}: same match as rule {entries[key].id}")
        if entries is None:
            table[address] = entries = {}
            kind.address_added(plen, address)
        entries[key] = rule
        self._by_id[rule.id] = rule

    def remove(self, rule_id: int) -> Rule:
        """Remove a rule by id and return it; raises RuleNotFound."""
        rule = self._by_id.pop(rule_id, None)
        if rule is None:
            raise RuleNotFound(f"no rule with id {rule_id}")
        kind = self._kinds[rule.kind]
        plen, address = rule.prefix.length, rule.prefix.address
        table = kind.tables[plen]
        entries = table[address]
        del entries[_probe_key(rule)]
        if not entries:
            del table[address]
            kind.address_removed(plen, address)
        return rule

    def lookup(self, protocol: int, src: int, sport: int, dst: int, dport: int) -> Rule | None:
        """The first matching rule: DNAT (on the destination) before SNAT (on the
        source), each as in lookup_kind. This is the per-new-flow hot path, so the
        two kinds are written out rather than calling lookup_kind twice: a Python
        call costs about as much as visiting a sub-table."""
        if protocol in _PORTED:
            k0, k1 = (dport << 8) | protocol, dport << 8
        else:  # no port: the port forms cannot match, so probe the others twice
            k0, k1 = _WILD | protocol, _WILD
        k2, k3 = _WILD | protocol, _WILD
        tables = self._dnat
        for mask, table in tables.blocks[dst >> _BLOCK_SHIFT]:
            entries = table.get(dst & mask)
            # A Rule is always true: the first found ends the chain.
            if entries is not None and (
                rule := entries.get(k0) or entries.get(k1) or entries.get(k2) or entries.get(k3)
            ):
                return rule
        if protocol in _PORTED:
            k0, k1 = (sport << 8) | protocol, sport << 8
        tables = self._snat
        for mask, table in tables.blocks[src >> _BLOCK_SHIFT]:
            entries = table.get(src & mask)
            if entries is not None and (
                rule := entries.get(k0) or entries.get(k1) or entries.get(k2) or entries.get(k3)
            ):
                return rule
        return None

    def lookup_kind(self, kind: RuleKind, protocol: int, address: int, port: int) -> Rule | None:
        """Longest prefix first; exact port before wildcard; exact protocol before any.
        ``port`` is ignored unless the protocol is TCP or UDP."""
        if protocol in _PORTED:
            k0, k1 = (port << 8) | protocol, port << 8
        else:
            k0, k1 = _WILD | protocol, _WILD
        k2, k3 = _WILD | protocol, _WILD
        tables = self._kinds[kind]
        for mask, table in tables.blocks[address >> _BLOCK_SHIFT]:
            entries = table.get(address & mask)
            if entries is not None and (
                rule := entries.get(k0) or entries.get(k1) or entries.get(k2) or entries.get(k3)
            ):
                return rule
        return None
