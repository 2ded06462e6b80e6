"""quicknat-swx's telemetry as the lab tests read it
(`/quicknat_swx/tables`, swpath/swx/p4rt/telemetry.cc): each table's and
learner's hits and misses, each packet's once, and what the program's fast
path sent. None where the lab's switch is another."""

from __future__ import annotations

from typing import Any

from lab.nodes import Nodes


def swx_tables(lab: Nodes) -> dict[str, Any] | None:
    """quicknat-swx's `/quicknat_swx/tables` (None: another switch)."""
    from lab import swx
    from lab.offload_lab import OffloadLab

    if not isinstance(lab, OffloadLab) or lab.switch_name != "swx":
        return None
    tables = swx.telemetry(swx.file_prefix(lab.workdir), "/quicknat_swx/tables")
    assert isinstance(tables, dict) and "fastpath" in tables, tables
    return tables


def fastpath_sent(lab: Nodes) -> int | None:
    """Packets quicknat-swx's fast path has sent (None: another switch)."""
    tables = swx_tables(lab)
    return None if tables is None else int(tables["fastpath"]["sent"])


def in2out_lookups(lab: Nodes) -> tuple[int, int] | None:
    """nat_in2out's hits and misses as quicknat-swx reports them."""
    tables = swx_tables(lab)
    if tables is None:
        return None
    (name,) = [n for n in tables if n.endswith("nat_nat_in2out")]
    return int(tables[name]["hits"]), int(tables[name]["misses"])


def in2out_learned_hits(lab: Nodes) -> int | None:
    """The in2out learner's hits, each packet's once (None: another
    switch)."""
    tables = swx_tables(lab)
    if tables is None:
        return None
    (name,) = [n for n in tables if n.endswith("nat_in2out_learned")]
    return int(tables[name]["hits"])
