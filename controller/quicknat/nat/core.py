"""The NAT's decisions for new flows, with no I/O: QNS, allocation, sessions.

The controller calls `new_flow` for each packet-in and `remove` for each expired
session, and installs or deletes the two flow keys of the result; swpath does the
same in C. Time is passed in, so tests drive it.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Iterator

from quicknat.addr import Prefix, format_ipv4
from quicknat.config.model import Config, Filtering, Pool, Zone
from quicknat.nat import tcp_state
from quicknat.nat.allocator import (
    AllocationError,
    AllocationFailure,
    Endpoint,
    PoolAllocator,
    PortPolicy,
)
from quicknat.nat.qns import Qns
from quicknat.nat.session import FlowKey, Mapping, Origin, Session
from quicknat.nat.timeouts import idle_timeout
from quicknat.rules import DnatTo, Protocol, Rule, RuleKind, SnatToAddress, SnatToPool


class Refusal(enum.Enum):
    """Why a new flow gets no session; the controller counts each."""

    NO_RULE = "no rule matches"
    UNSOLICITED = "inbound packet with no mapping and no DNAT rule"
    FILTERED = "inbound packet refused by the mapping's filtering mode"
    POOL_EXHAUSTED = "pool exhausted"
    QUOTA_EXCEEDED = "per-host port quota exceeded"
    SESSION_LIMIT = "per-host session limit reached"
    UNSUPPORTED = "protocol cannot be translated"
    RST_NO_SESSION = "TCP RST of no session (opens none)"
    TABLE_FULL = "the connection table is full"


class Refused(Exception):
    def __init__(self, reason: Refusal) -> None:
        super().__init__(reason.value)
        self.reason = reason


MappingEvent = Callable[[str, Mapping, float], None]
"""(event "created" or "deleted", the mapping, now)"""

QuotaEvent = Callable[[str, int, int, float], None]
"""(the limit, "ports_per_host" or "sessions_per_host"; the internal address;
the limit's value; now): a host's new flow was refused at that limit."""

SessionEvent = Callable[[str, Session, float], None]
"""(event "created" or "deleted", the session, now): with [logging]
ipfix_sessions, RFC 8158's NAT44 session create and delete."""

ExhaustionEvent = Callable[[str, int, int, int, float], None]
"""(what: "ports" or "addresses"; the pool address out of ports, 0 for
"addresses"; the pool's id, [[pool]] order from 1, 0 for an SNAT rule's own
`to` address; the protocol; now): RFC 8158's NAT ports exhausted and NAT
addresses exhausted, once per episode."""

TRANSLATABLE = frozenset({Protocol.TCP, Protocol.UDP, Protocol.ICMP})
_TCP = int(Protocol.TCP)


# Packed integers as dictionary keys: a session is indexed twice and a mapping
# twice, and an int costs a fraction of a tuple or a dataclass (the controller
# keeps its per-session memory under 1 KiB this way; bench-bmv2 measures it).


def _address_pool(address: int) -> str:
    return f"address {format_ipv4(address)}"


def _pool_name(target: object) -> str:
    """The allocator an SNAT rule's target draws from."""
    if isinstance(target, SnatToPool):
        return target.pool
    assert isinstance(target, SnatToAddress)
    return _address_pool(target.address)


def _check_opens(packet: FlowKey, tcp_flags: int) -> None:
    """Refuses a packet that must not open a session: a TCP RST (Nat.new_flow)."""
    if packet.protocol == Protocol.TCP and tcp_flags & tcp_state.FLAG_RST:
        raise Refused(Refusal.RST_NO_SESSION)


def _endpoint_key(protocol: int, endpoint: Endpoint) -> int:
    return (protocol << 48) | (endpoint.address << 16) | endpoint.port


def _flow_key(key: FlowKey) -> int:
    return (key.protocol << 96) | (key.src << 64) | (key.dst << 32) | (key.sport << 16) | key.dport


def port_policy(pool: Pool, config: Config) -> PortPolicy:
    """A pool's own port choices, with the quota every pool shares."""
    return PortPolicy(
        preserve_port=pool.preserve_port,
        preserve_parity=pool.preserve_parity,
        ports_per_host=config.limits.ports_per_host,
    )


class Nat:
    def __init__(
        self,
        config: Config,
        rng: random.Random | None = None,
        on_mapping: MappingEvent | None = None,
        on_quota: QuotaEvent | None = None,
        capacity: int | None = None,
        on_session: SessionEvent | None = None,
        on_exhausted: ExhaustionEvent | None = None,
    ) -> None:
        self.config = config
        # RES-4: the most sessions the data path's table holds (the switch's
        # table size, swpath's per-worker table); None: unbounded.
        self.capacity = capacity
        # Told of every mapping created and deleted (RFC 6888 REQ-12 logging).
        self.on_mapping = on_mapping
        # Told once per episode of a host at a per-host limit: the first
        # refusal since the host last closed a session (swpath: nat.c
        # limit_event), so a flood is one line, not one per packet.
        self.on_quota = on_quota
        self._quota_logged: set[tuple[int, str]] = set()
        # Told of each session opened and closed (not of one restored).
        self.on_session = on_session
        # Told once per episode of a pool address out of ports of a protocol,
        # and of a pool whose every address is: until one of its ports of
        # that protocol is freed (as quota episodes end with a session).
        self.on_exhausted = on_exhausted
        self._exhausted: dict[str, set[tuple[int, int]]] = {}  # pool -> (address, protocol)
        self._pool_ids = {pool.name: i for i, pool in enumerate(config.pools, 1)}
        self._rng = rng or random.Random()
        self.allocators: dict[str, PoolAllocator] = {
            pool.name: PoolAllocator(pool, port_policy(pool, config), self._rng)
            for pool in config.pools
        }
        self.reconfigure(config)
        self.session_count = 0
        self._by_key: dict[int, Session] = {}  # _flow_key(either direction) -> session
        # Keyed by _endpoint_key(protocol, endpoint): ints are far smaller than tuples.
        self._mappings: dict[int, Mapping] = {}  # internal endpoint -> mapping
        self._external: dict[int, Mapping] = {}  # external endpoint -> mapping
        self._sessions_of: dict[int, int] = {}  # internal address -> sessions
        self._next_id = 1

    def reconfigure(self, config: Config) -> None:
        """Run-time rules and settings (timeouts, filtering, limits): new flows
        get the new ones; established sessions keep their mappings. The pools
        are not changed here (their ports are in use)."""
        qns = Qns()
        for rule in config.rules:
            qns.add(rule)
        for rule in config.rules:
            if isinstance(rule.target, SnatToAddress):
                # One allocator per address, however many rules name it: two
                # would hand one address:port to two hosts (RFC 4787 REQ-3).
                name = _address_pool(rule.target.address)
                if name not in self.allocators:
                    pool = Pool(name, (Prefix(rule.target.address, 32),))
                    self.allocators[name] = PoolAllocator(
                        pool, port_policy(pool, config), self._rng
                    )
        self.config = config
        self.qns = qns
        # A remote among these makes a session a hairpin session (RFC 4787 REQ-9).
        self._public = config.public_prefixes()

    # -- queries ---------------------------------------------------------------

    def sessions(self) -> Iterator[Session]:
        """Every session once. Each is indexed under both of its flow keys, so
        it is yielded when first met and forgotten when met again; the two are
        inserted together, so `open_pairs` stays tiny. No FlowKey is built:
        building two per session took 0.37 s for 100,000 sessions."""
        open_pairs: set[int] = set()
        for session in self._by_key.values():
            ident = id(session)
            if ident in open_pairs:
                open_pairs.remove(ident)
            else:
                open_pairs.add(ident)
                yield session

    def contains(self, session: Session) -> bool:
        return self._by_key.get(_flow_key(session.in2out)) is session

    def session_for(self, key: FlowKey) -> Session | None:
        """The session a packet already belongs to (either direction)."""
        return self._by_key.get(_flow_key(key))

    def mapping_for(self, protocol: int, internal: Endpoint) -> Mapping | None:
        return self._mappings.get(_endpoint_key(protocol, internal))

    def is_public(self, address: int) -> bool:
        """One of the NAT's own outside addresses (Config.public_prefixes)."""
        return any(address in prefix for prefix in self._public)

    # -- new flows -------------------------------------------------------------

    def new_flow(self, zone: Zone, packet: FlowKey, now: float, tcp_flags: int = 0) -> Session:
        """A session for the first packet of a flow, or Refused. A packet of a flow
        that already has a session gets that session back (a retransmitted first
        packet, or a packet-in that raced its install). `tcp_flags` are the TCP
        header's flags (0 for other protocols): a RST opens no session. It ends a
        connection, and with no session there is none here to end; a session
        opened for it would hold a port (inside) or a slot of a host's session
        limit (outside: a spoofed RST flood at a port forward) for the transitory
        timeout, for a packet no peer can use (RFC 6888's resource exhaustion;
        Linux conntrack calls such a RST invalid). swpath does the same."""
        existing = self._by_key.get(_flow_key(packet))
        if existing is not None:
            return existing
        if packet.protocol not in TRANSLATABLE:
            raise Refused(Refusal.UNSUPPORTED)
        _check_opens(packet, tcp_flags)
        session = self._outbound(packet, now) if zone is Zone.INSIDE else self._inbound(packet, now)
        if self.on_session is not None:
            self.on_session("created", session, now)
        return session

    def _outbound(self, packet: FlowKey, now: float) -> Session:
        rule = self.qns.lookup_kind(RuleKind.SNAT, packet.protocol, packet.src, packet.sport)
        if rule is None:
            raise Refused(Refusal.NO_RULE)
        self._check_session_limit(packet.src, now)
        self._check_room()
        internal = Endpoint(packet.src, packet.sport)
        mapping = self._mappings.get(_endpoint_key(packet.protocol, internal))
        if mapping is None:
            mapping = self._new_mapping(rule, packet.protocol, internal, now)
        remote_port = packet.sport if packet.protocol == Protocol.ICMP else packet.dport
        remote = Endpoint(packet.dst, remote_port)
        return self._open(rule.id, Origin.SNAT, mapping, remote, now)

    def _new_mapping(self, rule: Rule, protocol: int, internal: Endpoint, now: float) -> Mapping:
        target = rule.target
        pool = _pool_name(target)
        try:
            external = self.allocators[pool].allocate(protocol, internal, now)
        except AllocationError as exc:
            if exc.reason is AllocationFailure.QUOTA_EXCEEDED:
                self._quota_event("ports_per_host", internal.address, now)
            else:
                self._exhaustion_event(pool, exc.address, protocol, now)
            raise Refused(Refusal[exc.reason.name]) from None
        mapping = self._add_mapping(Mapping(protocol, internal, external, pool))
        if self.on_mapping is not None:
            self.on_mapping("created", mapping, now)
        return mapping

    def _add_mapping(self, mapping: Mapping) -> Mapping:
        self._mappings[_endpoint_key(mapping.protocol, mapping.internal)] = mapping
        self._external[_endpoint_key(mapping.protocol, mapping.external)] = mapping
        return mapping

    def open_hairpin(self, session: Session, now: float, tcp_flags: int = 0) -> Session:
        """The second half of hairpinning (RFC 4787 REQ-9, RFC 5382 REQ-8): the
        packet that `session` (an inside host's session to one of our public
        endpoints) sends out comes back in as if from outside, and enters by the
        session that owns its key, or opens one as any inbound packet would
        (DNAT rule, or the peer's mapping and its filtering). The two are linked,
        so each translates straight to the other's inside host; swpath does the
        same in two passes (sp_hairpin). Raises Refused as _inbound does (and
        for a RST, as new_flow does); the hairpin session stays, unlinked, so a
        later packet can try again."""
        if session.partner is not None:
            return session.partner
        key = session.hairpin_key
        partner = self._by_key.get(_flow_key(key))
        if partner is None:
            _check_opens(key, tcp_flags)
            partner = self._inbound(key, now)
            if self.on_session is not None:
                self.on_session("created", partner, now)
        elif partner.out2in != key:
            raise Refused(Refusal.UNSOLICITED)  # a public address as an inside source
        session.partner = partner
        partner.partner = session
        return partner

    def _inbound(self, packet: FlowKey, now: float) -> Session:
        external = Endpoint(packet.dst, packet.dport)
        remote = Endpoint(packet.src, packet.sport)
        rule = self.qns.lookup_kind(RuleKind.DNAT, packet.protocol, packet.dst, packet.dport)
        if rule is not None and isinstance(rule.target, DnatTo):
            return self._dnat(rule, rule.target, packet, external, remote, now)
        mapping = self._external.get(_endpoint_key(packet.protocol, external))
        if mapping is None:
            raise Refused(Refusal.UNSOLICITED)
        if not self._filter_allows(mapping, remote):
            raise Refused(Refusal.FILTERED)
        self._check_session_limit(mapping.internal.address, now)
        self._check_room()
        return self._open(0, Origin.INBOUND, mapping, remote, now)

    def _filter_allows(self, mapping: Mapping, remote: Endpoint) -> bool:
        # RFC 4787 sec. 5. Address-and-port-dependent filtering never opens a new
        # session from outside: the one allowed 5-tuple already has its entries.
        mode = {
            Protocol.TCP: self.config.filtering.tcp,
            Protocol.UDP: self.config.filtering.udp,
            Protocol.ICMP: self.config.filtering.icmp,
        }[Protocol(mapping.protocol)]
        if mode is Filtering.ENDPOINT_INDEPENDENT:
            return True
        if mode is Filtering.ADDRESS_DEPENDENT:
            return remote.address in mapping.remotes
        return False

    def _dnat(
        self,
        rule: Rule,
        target: DnatTo,
        packet: FlowKey,
        external: Endpoint,
        remote: Endpoint,
        now: float,
    ) -> Session:
        host_bits = packet.dst & ~rule.prefix.mask & 0xFFFFFFFF
        address = target.prefix.address | (host_bits if target.prefix.length < 32 else 0)
        port = target.port if target.port is not None else packet.dport
        internal = Endpoint(address, port)
        self._check_session_limit(address, now)
        self._check_room()
        session = Session(
            self._next_id,
            rule.id,
            Origin.DNAT,
            packet.protocol,
            internal,
            external,
            remote.address,
            remote.port,
            now,
            hairpin=self.is_public(remote.address),
        )
        return self._register(session)

    def _check_session_limit(self, internal_address: int, now: float) -> None:
        limit = self.config.limits.sessions_per_host
        if limit and self._sessions_of.get(internal_address, 0) >= limit:
            self._quota_event("sessions_per_host", internal_address, now)
            raise Refused(Refusal.SESSION_LIMIT)

    def _check_room(self) -> None:
        """RES-4: a full table refuses new flows; nothing established is evicted."""
        if self.capacity is not None and self.session_count >= self.capacity:
            raise Refused(Refusal.TABLE_FULL)

    def _quota_event(self, limit: str, internal_address: int, now: float) -> None:
        key = (internal_address, limit)
        if key in self._quota_logged:
            return
        self._quota_logged.add(key)
        if self.on_quota is not None:
            value = getattr(self.config.limits, limit)
            self.on_quota(limit, internal_address, value, now)

    def _exhaustion_event(self, pool: str, address: int, protocol: int, now: float) -> None:
        exhausted = self._exhausted.setdefault(pool, set())
        if (address, protocol) in exhausted:
            return
        exhausted.add((address, protocol))
        if self.on_exhausted is None:
            return
        pool_id = self._pool_ids.get(pool, 0)
        self.on_exhausted("ports", address, pool_id, protocol, now)
        out = sum(1 for _, p in exhausted if p == protocol)
        if pool_id and out == self.allocators[pool].address_count:
            self.on_exhausted("addresses", 0, pool_id, protocol, now)

    def _open(
        self, rule_id: int, origin: Origin, mapping: Mapping, remote: Endpoint, now: float
    ) -> Session:
        session = Session(
            self._next_id,
            rule_id,
            origin,
            mapping.protocol,
            mapping.internal,
            mapping.external,
            remote.address,
            remote.port,
            now,
            mapping,
            hairpin=self.is_public(remote.address),
        )
        mapping.sessions += 1
        mapping.remotes.append(remote.address)
        return self._register(session)

    def _register(self, session: Session) -> Session:
        self._next_id += 1
        self.session_count += 1
        self._by_key[_flow_key(session.in2out)] = session
        self._by_key[_flow_key(session.out2in)] = session
        host = session.internal.address
        self._sessions_of[host] = self._sessions_of.get(host, 0) + 1
        return session

    # -- recovery --------------------------------------------------------------

    def restore(self, in2out: FlowKey, external: Endpoint, now: float) -> Session | None:
        """Adopt a session found in the data plane after a restart, from its
        inside-to-outside key and the source it is rewritten to. None when the
        configuration no longer allows it or it conflicts with what is known;
        the caller then deletes its entries."""
        existing = self._by_key.get(_flow_key(in2out))
        if existing is not None:
            return existing if existing.external == external else None
        protocol = in2out.protocol
        internal = Endpoint(in2out.src, in2out.sport)
        remote = Endpoint(in2out.dst, in2out.sport if protocol == Protocol.ICMP else in2out.dport)
        dnat = self.qns.lookup_kind(RuleKind.DNAT, protocol, external.address, external.port)
        if dnat is not None and isinstance(dnat.target, DnatTo):
            probe = FlowKey(protocol, remote.address, external.address, remote.port, external.port)
            session = self._dnat(dnat, dnat.target, probe, external, remote, now)
            if session.internal == internal:
                self._relink(session)
                return session
            self.remove(session, now)
            return None
        rule = self.qns.lookup_kind(RuleKind.SNAT, protocol, internal.address, internal.port)
        if rule is None:
            return None
        mapping = self._mappings.get(_endpoint_key(protocol, internal))
        if mapping is None:
            target = rule.target
            pool = _pool_name(target)
            if not self.allocators[pool].reserve(protocol, internal.address, external):
                return None
            mapping = self._add_mapping(Mapping(protocol, internal, external, pool))
        elif mapping.external != external:
            return None
        session = self._open(rule.id, Origin.SNAT, mapping, remote, now)
        self._relink(session)
        if protocol == Protocol.TCP:
            # Its history is lost with the old controller; it had an entry, so
            # it is taken as a flow picked up mid-way (established, tcp_state.py)
            # rather than given the 4-minute transitory timeout.
            session.tcp = tcp_state.SEEN_I2O | tcp_state.SEEN_O2I
        return session

    def _relink(self, session: Session) -> None:
        """Link a restored hairpin session to its partner if that is back already
        (whichever of the two is restored second links them)."""
        if not session.hairpin:
            return
        key = session.hairpin_key
        partner = self._by_key.get(_flow_key(key))
        if partner is not None and partner.out2in == key and partner.partner is None:
            session.partner = partner
            partner.partner = session

    # -- removal ---------------------------------------------------------------

    def remove(self, session: Session, now: float) -> None:
        """Forget a session (idle timeout); its mapping, and the mapping's port,
        go when its last session does."""
        if not self.contains(session):
            raise KeyError(f"session {session.id} is not in the table")
        if session.partner is not None:
            # The partner stays (it ages on its own packets) but must not
            # translate to an endpoint that may be handed to someone else.
            session.partner.partner = None
            session.partner = None
        self._by_key.pop(_flow_key(session.in2out), None)
        self._by_key.pop(_flow_key(session.out2in), None)
        self.session_count -= 1
        if self.on_session is not None:
            self.on_session("deleted", session, now)
        host = session.internal.address
        if self._quota_logged:  # below its limits again: the next episode is logged
            self._quota_logged.discard((host, "ports_per_host"))
            self._quota_logged.discard((host, "sessions_per_host"))
        left = self._sessions_of[host] - 1
        if left:
            self._sessions_of[host] = left
        else:
            del self._sessions_of[host]
        mapping = session.mapping
        if mapping is not None:
            mapping.sessions -= 1
            mapping.remotes.remove(session.remote.address)
            if mapping.sessions == 0:
                del self._mappings[_endpoint_key(mapping.protocol, mapping.internal)]
                del self._external[_endpoint_key(mapping.protocol, mapping.external)]
                self.allocators[mapping.pool].release(
                    mapping.protocol, mapping.internal.address, mapping.external, now
                )
                exhausted = self._exhausted.get(mapping.pool)
                if exhausted:  # a port is free again: the next episode is logged
                    exhausted.discard((mapping.external.address, mapping.protocol))
                if self.on_mapping is not None:
                    self.on_mapping("deleted", mapping, now)

    def timeout(self, session: Session) -> int:
        """Idle timeout in seconds: the one rule (timeouts.py), by protocol and,
        for TCP, by the phase of the state tracked (tcp_state.py)."""
        phase = tcp_state.phase(session.tcp) if session.protocol == _TCP else None
        return idle_timeout(self.config.timeouts, session.protocol, phase)

    def tcp_segment(self, session: Session, packet: FlowKey, tcp_flags: int) -> list[Session]:
        """Record a TCP segment of the session (its key as it arrived); returns the
        sessions whose timeout changed. A hairpinned segment is also the partner's
        inbound segment: it passes both sessions, as in swpath's two passes."""
        outbound = packet == session.in2out
        changed = self._track(session, outbound, tcp_flags)
        if outbound and session.partner is not None:
            changed += self._track(session.partner, False, tcp_flags)
        return changed

    def _track(self, session: Session, outbound: bool, tcp_flags: int) -> list[Session]:
        before = self.timeout(session)
        session.tcp = tcp_state.track(session.tcp, outbound, tcp_flags)
        return [session] if self.timeout(session) != before else []
