"""`quicknat routes` on the P4 path: the switch's routing_v4 entries, read
back over P4Runtime, as the rows swpath's `routes` answers (prefix,
interface, via, source, connected), with the next hop's MAC the switch
writes into each packet.

The switch holds a route as a prefix and set_next_hop(port, smac, dmac)
(p4src/include/control/routing.p4). Its interface is the configuration's
interface on that port, its next hop the configured neighbour with that MAC
on it (program.py writes them so); a connected network has no entry of its
own there: each neighbour on it is a /32 route, on link (via null). An entry
the configuration does not explain still shows, with what the switch holds
(the port number, no next hop): the rows say what forwards packets, not what
the file asked for. No I/O here: service.py reads the entries."""

from __future__ import annotations

from collections.abc import Iterable

from finsy.proto import p4r

from quicknat.addr import format_ipv4
from quicknat.config import Config
from quicknat.controller.program import format_mac, mac_value
from quicknat.p4rt.entities import action_params, lpm_fields
from quicknat.p4rt.p4info import P4Info

TABLE = "routing_v4"


def route_rows(
    p4info: P4Info, config: Config, entries: Iterable[p4r.TableEntry]
) -> list[dict[str, object]]:
    """Rows in prefix order (longest first within an address, as ip route)."""
    interfaces = {i.port: i.name for i in config.interfaces if i.port is not None}
    neighbors = {(n.interface, mac_value(n.mac)): n.address for n in config.neighbors}
    rows: list[tuple[tuple[int, int], dict[str, object]]] = []
    for entry in entries:
        address, length = lpm_fields(p4info, entry).get("ipv4_dst", (0, 0))
        _, params = action_params(p4info, entry)
        name = interfaces.get(params["port"])
        hop = neighbors.get((name, params["dmac"])) if name is not None else None
        rows.append(
            (
                (address, -length),
                {
                    "prefix": f"{format_ipv4(address)}/{length}",
                    "interface": name if name is not None else f"port {params['port']}",
                    "via": None
                    if hop is None or (length == 32 and hop == address)
                    else format_ipv4(hop),
                    "source": None,
                    "connected": False,
                    "mac": format_mac(params["dmac"]),
                },
            )
        )
    return [row for _, row in sorted(rows, key=lambda r: r[0])]
