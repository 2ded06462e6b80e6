#!/usr/bin/env python3
"""Writes generated.json: the NAT behaviour vectors that are a matrix.

Each family below walks one requirement over its parameters (filtering mode x
protocol x peer, timeout x protocol and state, port class x parity, ...). The
expected answers are written here from the requirement's words in
docs/nat-behavior.md, never computed by either NAT core, so the two cores are
held to the specification, not to each other. `make test` checks that the
committed file is what this script writes.

    gen_generated.py [OUT]      (default: generated.json beside this file)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
POOL = "203.0.113.1"
PEER = "198.51.100.10"
MODES = ("endpoint-independent", "address-dependent", "address-and-port-dependent")
DEFAULT_TIMEOUTS = {"udp": 300, "tcp_established": 7440, "tcp_transitory": 240, "icmp": 60}

Vector = dict[str, Any]


def step(at: float, packet: str | None = None, label: str | None = None, **expect: Any) -> Vector:
    s: Vector = {"at": at}
    if packet is not None:
        s["packet"] = packet
    if label is not None:
        s["as"] = label
    s["expect"] = expect
    return s


def vector(name: str, requirements: list[str], steps: list[Vector], **config: Any) -> Vector:
    v: Vector = {"name": name, "requirements": requirements}
    if config:
        v["config"] = config
    v["steps"] = steps
    return v


def packet(zone: str, proto: str, src: str, sport: int, dst: str, dport: int, flags: str) -> str:
    """An ICMP echo's identifier is the inside host's port (sport from inside,
    dport from outside)."""
    if proto == "icmp":
        return f"{zone} icmp {src} > {dst} id {sport if zone == 'inside' else dport}"
    text = f"{zone} {proto} {src}:{sport} > {dst}:{dport}"
    return f"{text} {flags}" if proto == "tcp" else text


def outbound(proto: str, src: str, sport: int, dst: str, dport: int, flags: str = "S") -> str:
    return packet("inside", proto, src, sport, dst, dport, flags)


def inbound(proto: str, src: str, sport: int, dst: str, dport: int, flags: str = "S") -> str:
    return packet("outside", proto, src, sport, dst, dport, flags)


# -- FIL-1/2/3: every mode, protocol and kind of peer --------------------------


def filtering() -> list[Vector]:
    """A mapping 10.0.0.1:4000 -> POOL:4000 (port preserved) after a flow to
    PEER:53. The same peer endpoint is that flow's session; the peer's other
    port gets in unless address-and-port-dependent; another address only when
    endpoint-independent (RFC 4787 sec. 5). ICMP has no peer port: an echo
    from the peer is the session's own."""
    vectors = []
    peers = {
        "same_endpoint": (PEER, 53),
        "same_address_other_port": (PEER, 9999),
        "other_address": ("198.51.100.77", 53),
    }
    for mode in MODES:
        for proto in ("udp", "tcp", "icmp"):
            for peer, (address, port) in peers.items():
                if proto == "icmp" and peer == "same_address_other_port":
                    continue
                if peer == "same_endpoint" or (proto == "icmp" and address == PEER):
                    want = {"session": "a"}
                elif mode == "endpoint-independent" or (
                    mode == "address-dependent" and address == PEER
                ):
                    want = {"session": "new", "internal": "10.0.0.1:4000"}
                else:
                    want = {"refused": "filtered"}
                flags = "SA" if peer == "same_endpoint" else "S"
                vectors.append(
                    vector(
                        f"filtering_{mode}_{proto}_{peer}".replace("-", "_"),
                        ["FIL-1", "FIL-2", "FIL-3"],
                        [
                            step(
                                0,
                                outbound(proto, "10.0.0.1", 4000, PEER, 53),
                                "a",
                                session="new",
                                external=f"{POOL}:4000",
                            ),
                            step(1, inbound(proto, address, port, POOL, 4000, flags), **want),
                            step(
                                2,
                                inbound(proto, "198.51.100.99", 1, POOL, 4001),
                                refused="unsolicited",
                            ),
                        ],
                        filtering={"udp": mode, "tcp": mode, "icmp": mode},
                    )
                )
    return vectors


# -- TIME-1/2/3, TCP-1/2/3: idle timeouts -----------------------------------------

# One family per protocol and per TCP phase (swpath's words: opening,
# established, closing, reset; nat/timeouts.py is the rule): (name, protocol,
# the first packet's TCP flags, the packets after it (zone, flags) at t=1,
# timeout key, requirement).
_TIMED = [
    ("udp", "udp", "", [], "udp", "TIME-1"),
    ("icmp", "icmp", "", [], "icmp", "TIME-3"),
    ("tcp_syn_sent", "tcp", "S", [], "tcp_transitory", "TCP-2"),
    (
        "tcp_established",
        "tcp",
        "S",
        [("outside", "SA"), ("inside", "A")],
        "tcp_established",
        "TCP-1",
    ),
    # picked up mid-way (no SYN seen), with traffic both ways: established
    ("tcp_picked_up", "tcp", "A", [("outside", "A")], "tcp_established", "TCP-1"),
    (
        "tcp_fin_seen",
        "tcp",
        "S",
        [("outside", "SA"), ("inside", "A"), ("inside", "FA")],
        "tcp_transitory",
        "TCP-2",
    ),
    (
        "tcp_fin_both",
        "tcp",
        "S",
        [("outside", "SA"), ("inside", "A"), ("inside", "FA"), ("outside", "FA")],
        "tcp_transitory",
        "TCP-2",
    ),
    # the reset phase: established, then a RST from outside (it ends the
    # established timeout; one from inside would not refresh, timers.json)
    (
        "tcp_reset",
        "tcp",
        "S",
        [("outside", "SA"), ("inside", "A"), ("outside", "RA")],
        "tcp_transitory",
        "TCP-3",
    ),
]


def timeouts() -> list[Vector]:
    """A session idle since t=1 is alive a second before its timeout and gone a
    second after, with the defaults and with other configured values."""
    vectors = []
    custom = {"udp": 180, "tcp_established": 9000, "tcp_transitory": 300, "icmp": 90}
    for name, proto, first, packets, key, requirement in _TIMED:
        for variant, values in (("default", DEFAULT_TIMEOUTS), ("configured", custom)):
            opening = outbound(proto, "10.0.0.1", 4000, PEER, 80, first or "S")
            steps = [step(1, opening, "a", session="new")]
            for zone, flags in packets:
                packet = (outbound if zone == "inside" else inbound)(
                    proto,
                    PEER if zone == "outside" else "10.0.0.1",
                    80 if zone == "outside" else 4000,
                    POOL if zone == "outside" else PEER,
                    4000 if zone == "outside" else 80,
                    flags,
                )
                steps.append(step(1, packet, session="a"))
            timeout = values[key]
            steps += [step(timeout, alive=["a"]), step(timeout + 2, gone=["a"], sessions=0)]
            vectors.append(
                vector(
                    f"timeout_{name}_{variant}",
                    [requirement],
                    steps,
                    **({"timeouts": custom} if variant == "configured" else {}),
                )
            )
    return vectors


# -- MAP-4/5: port class and parity ------------------------------------------------


def port_choice() -> list[Vector]:
    """An internal port below 1024 takes the pool's low ports if it has any,
    one from 1024 up never does; with preserve_parity the parity is kept."""
    vectors = []
    pools = {"both_classes": (1000, 1100), "high_only": (2000, 3000)}
    protos = ("udp", "tcp", "icmp")
    for i, internal in enumerate((53, 1023, 1024, 5000, 5001, 65535)):
        proto = protos[i % 3]
        for pool_name, (low, high) in pools.items():
            for parity in (True, False):
                if internal < 1024 and low < 1024:
                    ports = f"{low}-1023"
                else:
                    ports = f"{max(low, 1024)}-{high}"
                external: Vector = {"in": f"{POOL}/32", "ports": ports}
                if parity:
                    external["parity"] = "internal"
                vectors.append(
                    vector(
                        f"port_{proto}_{internal}_{pool_name}_parity_{'on' if parity else 'off'}",
                        ["MAP-4", "MAP-5"],
                        [
                            step(
                                0,
                                outbound(proto, "10.0.0.1", internal, PEER, 80),
                                "a",
                                session="new",
                                external=external,
                            )
                        ],
                        pool=[
                            {
                                "name": "public",
                                "addresses": [f"{POOL}/32"],
                                "ports": f"{low}-{high}",
                                "preserve_parity": parity,
                            }
                        ],
                    )
                )
    return vectors


# -- MAP-1: endpoint independence ---------------------------------------------------


def endpoint_independence() -> list[Vector]:
    vectors = []
    for proto in ("udp", "tcp", "icmp"):
        # ICMP has no destination port: one other address is the only case
        others = [("198.51.100.20", 80)]
        if proto != "icmp":
            others += [("198.51.100.20", 8080), (PEER, 8080)]
        for address, port in others:
            vectors.append(
                vector(
                    f"eim_{proto}_to_{address.replace('.', '_')}_{port}",
                    ["MAP-1"],
                    [
                        step(0, outbound(proto, "10.0.0.1", 4000, PEER, 80), "a", session="new"),
                        step(
                            1,
                            outbound(proto, "10.0.0.1", 4000, address, port),
                            "b",
                            session="new",
                            external={"same_as": "a"},
                        ),
                    ],
                )
            )
    return vectors


# -- MAP-3: no overloading --------------------------------------------------------


def no_overloading() -> list[Vector]:
    """n hosts with one internal port on one address: n external endpoints."""
    vectors = []
    for n in range(2, 7):
        steps = []
        for h in range(1, n + 1):
            earlier = [f"h{k}" for k in range(1, h)]
            external: Vector = {"in": f"{POOL}/32"}
            if earlier:
                external["differs_from"] = earlier
            steps.append(
                step(
                    0,
                    outbound("udp", f"10.0.0.{h}", 5000, PEER, 53),
                    f"h{h}",
                    session="new",
                    external=external,
                )
            )
        steps.append(step(0, sessions=n))
        vectors.append(vector(f"no_overloading_{n}_hosts", ["MAP-3"], steps))
    return vectors


# -- FIL-5: DNAT prefixes -----------------------------------------------------------


def dnat() -> list[Vector]:
    """203.0.113.32/28 published as 10.0.2.32/28: host bits and port kept."""
    vectors = []
    for proto in ("udp", "tcp", "icmp"):
        for offset in (0, 1, 7, 15, 16):
            public = f"203.0.113.{32 + offset}"
            if offset < 16:
                want = {
                    "session": "new",
                    "internal": f"10.0.2.{32 + offset}:443",
                    "external": f"{public}:443",
                }
            else:
                want = {"refused": "unsolicited"}
            vectors.append(
                vector(
                    f"dnat_{proto}_host_{offset}",
                    ["FIL-5"],
                    [step(0, inbound(proto, PEER, 40000, public, 443), **want)],
                )
            )
    return vectors


# -- TCP-4: a RST opens nothing -------------------------------------------------------


def rst() -> list[Vector]:
    vectors = []
    for zone in ("inside", "outside"):
        for flags in ("R", "RA"):
            for covered in (True, False):
                if zone == "inside":
                    src = "10.0.0.1" if covered else "10.9.0.1"
                    packet = f"inside tcp {src}:4000 > {PEER}:80 {flags}"
                else:
                    dst = "203.0.113.33" if covered else POOL
                    packet = f"outside tcp {PEER}:80 > {dst}:443 {flags}"
                vectors.append(
                    vector(
                        f"rst_{zone}_{flags}_{'ruled' if covered else 'unruled'}",
                        ["TCP-4"],
                        [step(0, packet, refused="rst_no_session", sessions=0, events=[])],
                    )
                )
    return vectors


# -- RES-1/2, LOG-2: per-host limits --------------------------------------------------


def limits() -> list[Vector]:
    vectors = []
    for proto in ("udp", "tcp", "icmp"):
        for limit in (1, 2, 3):
            steps = [
                step(0, outbound(proto, "10.0.0.1", 5000 + 2 * i, PEER, 80), session="new")
                for i in range(limit)
            ]
            steps.append(
                step(
                    0,
                    outbound(proto, "10.0.0.1", 6000, PEER, 80),
                    refused="quota_exceeded",
                    events=["quota ports_per_host 10.0.0.1"],
                )
            )
            steps.append(
                step(
                    0,
                    outbound(proto, "10.0.0.1", 6002, PEER, 80),
                    refused="quota_exceeded",
                    events=[],
                )
            )
            steps.append(step(0, outbound(proto, "10.0.0.2", 6000, PEER, 80), session="new"))
            vectors.append(
                vector(
                    f"ports_per_host_{proto}_{limit}",
                    ["RES-1", "LOG-2"],
                    steps,
                    limits={"ports_per_host": limit, "sessions_per_host": 100},
                )
            )
            steps = [
                step(
                    0, outbound(proto, "10.0.0.1", 5000, f"198.51.100.{20 + i}", 80), session="new"
                )
                for i in range(limit)
            ]
            steps.append(
                step(
                    0,
                    outbound(proto, "10.0.0.1", 5000, "198.51.100.99", 80),
                    refused="session_limit",
                    events=["quota sessions_per_host 10.0.0.1"],
                )
            )
            steps.append(step(0, outbound(proto, "10.0.0.2", 5000, PEER, 80), session="new"))
            vectors.append(
                vector(
                    f"sessions_per_host_{proto}_{limit}",
                    ["RES-2", "LOG-2"],
                    steps,
                    limits={"ports_per_host": 100, "sessions_per_host": limit},
                )
            )
    return vectors


def generate() -> dict[str, Any]:
    return {
        "description": "Generated by gen_generated.py: requirement matrices, expectations "
        "written from docs/nat-behavior.md. Do not edit by hand.",
        "config": {
            "pool": [{"name": "public", "addresses": [f"{POOL}/32"], "preserve_port": True}],
            "rule": [
                {"id": 1, "type": "snat", "prefix": "10.0.0.0/16", "pool": "public"},
                {"id": 2, "type": "dnat", "prefix": "203.0.113.32/28", "to": "10.0.2.32/28"},
            ],
            "filtering": {"udp": MODES[0], "tcp": MODES[0], "icmp": MODES[0]},
        },
        "vectors": filtering()
        + timeouts()
        + port_choice()
        + endpoint_independence()
        + no_overloading()
        + dnat()
        + rst()
        + limits(),
    }


def dump(data: dict[str, Any]) -> str:
    """One vector per line: a diff names the vectors that changed."""
    lines = ["{"]
    lines.append(f'  "description": {json.dumps(data["description"])},')
    lines.append(f'  "config": {json.dumps(data["config"])},')
    lines.append('  "vectors": [')
    lines.append(",\n".join(f"    {json.dumps(v)}" for v in data["vectors"]))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "generated.json"
    out.write_text(dump(generate()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
