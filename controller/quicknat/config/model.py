"""The validated configuration: frozen dataclasses, one per section.

Everything else (controller, data-path compiler, CLI) receives a ``Config``;
nothing reads the file or globals. Defaults: docs/nat-behavior.md sec. 9.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from quicknat.addr import InterfaceAddress, Prefix
from quicknat.rules import DnatTo, Rule, SnatToAddress


class Zone(enum.Enum):
    INSIDE = "inside"  # private side: new flows from here may be translated
    OUTSIDE = "outside"  # public side: only existing mappings and DNAT rules let traffic in

    def __str__(self) -> str:
        return self.value


class Filtering(enum.Enum):
    """Which inbound packets an existing mapping lets through (RFC 4787 sec. 5)."""

    ENDPOINT_INDEPENDENT = "endpoint-independent"
    ADDRESS_DEPENDENT = "address-dependent"
    ADDRESS_AND_PORT_DEPENDENT = "address-and-port-dependent"

    def __str__(self) -> str:
        return self.value


#: [[interface]] mtu bounds: the NAT's own ICMP errors are up to 576 bytes
#: (RFC 1812 sec. 4.3.2.3) and must fit any link; 9216 is the usual jumbo limit.
MTU_MIN, MTU_MAX = 576, 9216
DEFAULT_MTU = 1500  # Ethernet


@dataclass(frozen=True, slots=True)
class Interface:
    name: str
    """Device name: a Linux/DPDK interface, or the P4 port's name in a lab."""
    zone: Zone
    """Which side of the NAT the interface is on."""
    port: int | None = None
    """Data-plane port number (P4 switch port or DPDK port id), if it differs by target."""
    address: InterfaceAddress | None = None
    """The router's own address on this link (answers ARP), with the link's prefix length."""
    mac: str | None = None
    """The router's MAC on this link (lower-case aa:bb:cc:dd:ee:ff)."""
    mtu: int = DEFAULT_MTU
    """Largest IPv4 packet (header included) sent on this link. Bigger ones are
    dropped, never fragmented; with DF set the sender gets an ICMP
    fragmentation-needed carrying this value (RFC 1191)."""
    vlan: int | None = None
    """802.1Q VID of a sub-interface of ``port`` (swpath); None: untagged."""
    slow_path: bool = False
    """swpath's link to a P4 switch in offload mode (docs/offload.md): frames are
    the switch's misses, tagged with their zone (``vlan`` 1 inside, 2 outside)
    and sent to the switch's own MACs, so their destination MAC is not checked."""


@dataclass(frozen=True, slots=True)
class Route:
    prefix: Prefix
    """Destination prefix, longest match wins."""
    interface: str
    """Interface the route leaves by."""
    via: int | None = None
    """Next-hop address; None for a directly connected prefix."""


@dataclass(frozen=True, slots=True)
class Neighbor:
    address: int
    """A host or next hop on a link, whose MAC is configured statically."""
    mac: str
    interface: str


#: The last well-known port (RFC 4787 REQ-3 keeps 0-1023 and 1024-65535 apart).
WELL_KNOWN_PORT_MAX = 1023


@dataclass(frozen=True, slots=True)
class Pool:
    name: str
    """Referenced by SNAT rules."""
    addresses: tuple[Prefix, ...]
    """Public addresses and prefixes (a bare address is a /32)."""
    port_min: int = 1024
    """First external port handed out. Internal ports below 1024 get external ports
    below 1024 when the range has any, others never do (RFC 4787 REQ-3)."""
    port_max: int = 65535
    """Last external port handed out."""
    preserve_parity: bool = True
    """An even internal port gets an even external port, odd gets odd (RFC 4787 REQ-4)."""
    preserve_port: bool = False
    """Hand out the internal port itself when it is free (else the usual random choice)."""

    @property
    def address_count(self) -> int:
        return sum(prefix.size for prefix in self.addresses)


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Idle timeouts in seconds (docs/nat-behavior.md TIME-*, TCP-*; sec. 9 defaults)."""

    udp: int = 300
    """RFC 4787 REQ-5: at least 120 s, default 300 s."""
    tcp_established: int = 7440
    """RFC 5382 REQ-5: at least 2 h 4 min."""
    tcp_transitory: int = 240
    """SYN sent, FIN, RST, TIME_WAIT (RFC 5382, RFC 7857 sec. 2.2)."""
    icmp: int = 60
    """ICMP query sessions (RFC 5508 REQ-1: at least 60 s)."""


#: RFC minimums; a configured value below one is accepted (labs age flows
#: quickly on purpose) but reported as a warning.
TIMEOUT_MINIMUMS = {"udp": 120, "tcp_established": 7440, "tcp_transitory": 240, "icmp": 60}


@dataclass(frozen=True, slots=True)
class FilteringModes:
    """Per protocol. Default address-dependent: RFC 4787 REQ-8 recommends it where
    security matters more than transparency, and UDP hole punching still works."""

    udp: Filtering = Filtering.ADDRESS_DEPENDENT
    tcp: Filtering = Filtering.ADDRESS_DEPENDENT
    icmp: Filtering = Filtering.ADDRESS_DEPENDENT


#: Per-host limits by default: 1/16 of a 65,536-session table (the P4 program's
#: nat_in2out / nat_out2in, a swpath worker's default), so that one host's flood
#: leaves 15/16 of it to the others (RFC 6888 REQ-4/5). swpath: sp.h.
DEFAULT_HOST_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class Limits:
    """RFC 6888 REQ-4/5: per-subscriber (internal address) quotas; 0 = no limit."""

    ports_per_host: int = DEFAULT_HOST_LIMIT
    """External ports one internal address may hold at once."""
    sessions_per_host: int = DEFAULT_HOST_LIMIT
    """Sessions one internal address may have at once."""


@dataclass(frozen=True, slots=True)
class IcmpErrors:
    """The ICMP errors the NAT itself originates (RFC 1812 sec. 4.3.2, RFC 5508)."""

    unreachable_on_exhaustion: bool = True
    """Destination unreachable, code 13 (administratively prohibited), to an inside
    host whose new flow is refused for want of a port, or over its per-host quota
    or session limit (RFC 5508; docs/nat-behavior.md ICMP-4)."""
    rate: int = 100
    """Errors per second the NAT sends at most (token bucket, RFC 1812 sec. 4.3.2.8);
    swpath shares it among its workers."""
    burst: int = 50
    """Errors the bucket holds: how many may leave at once after a quiet spell."""


class OffloadInstall(enum.Enum):
    """How offload mode puts sessions in the switch (docs/offload.md)."""

    WRITE = "write"
    """The controller writes both entries of each session (P4Runtime)."""
    LEARN = "learn"
    """The switch learns them from the instances' learn tags (PNA
    add_on_miss, a target that learns: quicknat-swx); no write per flow."""

    def __str__(self) -> str:
        return self.value


# The learner tables' timeout classes as p4c-dpdk 1.2.4.17 compiles them
# (every learner of p4src/build/pna/, test_p4_source.py holds this to the
# spec); quicknat-swx --learn-timeouts replaces them.
P4C_DPDK_LEARN_TIMEOUTS = (10, 30, 60, 120, 300, 43200, 120, 120)


@dataclass(frozen=True, slots=True)
class OffloadPolicy:
    """Which sessions offload mode puts in the switch (docs/offload.md)."""

    after_packets: int = 1
    """A session is offered to the switch once it has had this many packets
    (1..255): with 2, flows of one packet (most DNS) never cost a switch write."""
    batch_window_ms: int = 25
    """How long the offload manager gathers work before each write (0..1000):
    more sessions per WriteRequest, so less controller CPU per flow, at the
    price of that much longer in the instance before the switch holds them
    (the instance translates them meanwhile). Each write costs the manager
    about 0.4 ms of gRPC besides its flows' own ~25 us, so at 1,000 new flows/s
    25 ms takes a quarter off 10 ms's CPU per flow (docs/benchmarks.md)."""
    install: OffloadInstall = OffloadInstall.WRITE
    """Who puts sessions in the switch: the controller's writes, or the
    switch itself, learning from the instances (a target that learns)."""
    learn_timeouts: tuple[int, ...] = P4C_DPDK_LEARN_TIMEOUTS
    """The switch's learner timeout classes in seconds, as it runs them
    (quicknat-swx --learn-timeouts): the leases the instances count on."""


DEFAULT_IPFIX_DOMAIN = 1
SYSLOG_ENTERPRISE_EXAMPLE = 32473
"""RFC 5612's enterprise number for documentation: the syslog SD-ID's
(`nat@32473`) until the operator names its own IANA number."""


class EventLog(enum.Enum):
    """Where mapping created / deleted events go (RFC 6888 REQ-12)."""

    NONE = "none"
    SYSLOG = "syslog"
    FILE = "file"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Logging:
    events: EventLog = EventLog.NONE
    """Off by default: a busy NAT makes a mapping per connection."""
    file: str | None = None
    """The file events are appended to, with events = "file"."""
    syslog_server: tuple[str, int] | None = None
    """Where events also go as RFC 5424 syslog over UDP (event_export.py)."""
    ipfix_collector: tuple[str, int] | None = None
    """Where events also go as IPFIX over UDP (RFC 8158 elements, docs/ipfix.md)."""
    ipfix_domain: int = DEFAULT_IPFIX_DOMAIN
    """The IPFIX observation domain of the NAT this file configures
    (controller mode, or swpath alone); offload mode's instances take the
    next ones unless they name their own (SlowPath.ipfix_domain)."""
    ipfix_sessions: bool = False
    """Also export each NAT44 session's creation and deletion (natEvent 4
    and 5). Off by default: a session record carries the destination, which
    RFC 6888 REQ-12 says not to log unless the operator chooses to, and it is
    a record per connection rather than per mapping."""
    syslog_enterprise: int = SYSLOG_ENTERPRISE_EXAMPLE
    """The enterprise number of the syslog structured data's SD-ID, `nat@N`
    (RFC 5424 sec. 6.3.2, 7.2.2: a private SD-ID names its owner's IANA
    Private Enterprise Number)."""


@dataclass(frozen=True, slots=True)
class SlowPath:
    """A slow-path instance behind the P4 switch (offload mode, docs/offload.md):
    a swpath process that takes what the switch does not hold."""

    name: str
    port: int
    """The switch's port toward it (zone 3: its frames come back translated)."""
    control: str
    """Its control socket (the session event stream and `session` commands)."""
    port_min: int = 1024
    port_max: int = 65535
    """Its block of every pool's ports (RFC 7422): outside packets to a pool
    address with a port in it go to this instance. Blocks do not overlap; the
    instance's own configuration must give its pools the same range."""
    default: bool = False
    """The instance that takes what no block names (ICMP errors from outside,
    DNAT and SNAT `to` addresses, pool ports in no block) and the inside hosts
    of those rules (config/instances.py). At most one; none: the first."""
    ipfix_domain: int | None = None
    """Its IPFIX observation domain; None: [logging] ipfix_domain + 1 + its
    index (config/instances.py ipfix_identity)."""


@dataclass(frozen=True, slots=True)
class Config:
    source: str
    """The file the configuration was read from (for messages)."""
    interfaces: tuple[Interface, ...]
    routes: tuple[Route, ...] = ()
    neighbors: tuple[Neighbor, ...] = ()
    pools: tuple[Pool, ...] = ()
    rules: tuple[Rule, ...] = ()
    timeouts: Timeouts = field(default_factory=Timeouts)
    filtering: FilteringModes = field(default_factory=FilteringModes)
    limits: Limits = field(default_factory=Limits)
    logging: Logging = field(default_factory=Logging)
    icmp: IcmpErrors = field(default_factory=IcmpErrors)
    slow_paths: tuple[SlowPath, ...] = ()
    """Offload mode's instances; none: controller mode."""
    offload: OffloadPolicy = field(default_factory=OffloadPolicy)
    warnings: tuple[str, ...] = ()
    """Accepted but questionable settings, e.g. timeouts below the RFC minimums."""

    def public_prefixes(self) -> tuple[Prefix, ...]:
        """Every address the NAT owns on the outside: pools, SNAT `to` addresses and
        DNAT published prefixes (proxy ARP answers them; a packet from inside to
        one of them is hairpinned, RFC 4787 REQ-9)."""
        prefixes = [prefix for pool in self.pools for prefix in pool.addresses]
        for rule in self.rules:
            if isinstance(rule.target, DnatTo):
                prefixes.append(rule.prefix)
            elif isinstance(rule.target, SnatToAddress):
                prefixes.append(Prefix(rule.target.address, 32))
        return tuple(prefixes)

    def pool(self, name: str) -> Pool:
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(name)
