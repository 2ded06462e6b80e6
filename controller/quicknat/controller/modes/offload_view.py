"""Offload mode's one view of its instances' sessions and counters, as VPP's
`show nat44 sessions` spans its workers: `quicknat sessions` and `quicknat
stats` on the controller ask every slow-path instance (offload_io.py sends
the lines) and this module makes their answers one (no I/O, unit-tested).

- **The line.** Each instance gets the operator's query as swpath's own
  `sessions` command, written by the command vocabulary (command_render.py),
  so the filters mean on the controller what they mean on an instance.
- **Rows.** Every instance's rows, in the order of the configuration's
  `[[slow_path]]`s, each with its `instance` (name) and `where` its packets
  are translated: "switch" when the switch holds the session (installed by
  the controller, or with learning, under a lease the instance says still
  runs: offload_mode.py decides), else "software" (the instance alone: not
  yet offloaded, deferred, a hairpin, a full table, a lease over). An
  instance's ids are its own, so a row is named by (instance, id).
- **Deletion.** `delete` and `flush` go to every instance; each deletes only
  the sessions it owns (an instance holds no other's), its `closed` events
  then take the switch's entries away (offload_mode.py). The answer is the
  sum.
- **Counters.** Each instance's own `stats` beside their sum: the sessions,
  mappings, workers and every counter added up, the pools by name (each
  instance has its own block of each pool's ports, RFC 7422).
- **An instance that does not answer** makes the listing and the deletion an
  error naming it (a listing without it would look whole; the deletions the
  others made are said), and its `stats` entry an error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from quicknat.config.command_render import render
from quicknat.controller.status import SessionQuery
from quicknat.rules import Protocol

#: `stats` figures that are added up over the instances (swpath's stats keys).
SUMMED = ("sessions", "installed", "mappings", "neighbors", "workers")


class Reply(NamedTuple):
    """One instance's answer to a status command: its decoded JSON, or why
    there is none (`error`)."""

    name: str
    answer: object = None
    error: str | None = None

    def failure(self) -> str | None:
        """Why this reply is not an answer: no connection, or the instance's
        own `{"error": ...}`."""
        if self.error is not None:
            return f"slow path {self.name}: {self.error}"
        if isinstance(self.answer, dict) and "error" in self.answer:
            return f"slow path {self.name}: {self.answer['error']}"
        return None


class InstanceError(ValueError):
    """An instance did not answer, or refused: the message names it."""


def instance_line(query: SessionQuery) -> str:
    """The operator's query as the `sessions` command every instance takes."""
    return render(
        "sessions",
        query.action,
        limit=query.limit,
        proto=str(Protocol(query.proto)),
        src=query.src,
        dst=query.dst,
        port=query.port,
        rule=query.rule,
    )


#: (instance index, the instance's row) -> whether the switch holds it
InSwitch = Callable[[int, dict[str, Any]], bool]


def merged_rows(replies: Sequence[Reply], in_switch: InSwitch) -> list[dict[str, object]]:
    """Every instance's rows, in instance order, each with its `instance`
    and `where`; InstanceError when one did not answer with rows."""
    _raise_failures(replies)
    rows: list[dict[str, object]] = []
    for index, reply in enumerate(replies):
        if not isinstance(reply.answer, list):
            raise InstanceError(f"slow path {reply.name}: not a session list: {reply.answer!r}")
        for row in reply.answer:
            where = "switch" if in_switch(index, row) else "software"
            rows.append({**row, "instance": reply.name, "where": where})
    return rows


def deleted_total(replies: Sequence[Reply]) -> int:
    """How many sessions the instances deleted together; InstanceError when
    one did not answer (saying how many the others deleted)."""
    deleted = sum(_deleted(r) for r in replies if r.failure() is None)
    failures = [f for f in (r.failure() for r in replies) if f is not None]
    if failures:
        raise InstanceError(f"{'; '.join(failures)} ({deleted} deleted by the others)")
    return deleted


def _deleted(reply: Reply) -> int:
    if not isinstance(reply.answer, dict) or not isinstance(reply.answer.get("deleted"), int):
        raise InstanceError(f"slow path {reply.name}: not a deletion count: {reply.answer!r}")
    return int(reply.answer["deleted"])


def _raise_failures(replies: Sequence[Reply]) -> None:
    failures = [f for f in (r.failure() for r in replies) if f is not None]
    if failures:
        raise InstanceError("; ".join(failures))


def stats_view(replies: Sequence[Reply]) -> dict[str, object]:
    """What the controller's `stats` adds in offload mode: `instances`, each
    instance's own answer by name (`{"error": ...}` for one that gave none),
    and `instances_total`, the sum over those that answered."""
    own: dict[str, object] = {}
    answered: list[dict[str, Any]] = []
    for reply in replies:
        failure = reply.failure()
        if failure is not None or not isinstance(reply.answer, dict):
            own[reply.name] = {"error": failure or f"not stats: {reply.answer!r}"}
            continue
        own[reply.name] = reply.answer
        answered.append(reply.answer)
    return {"instances": own, "instances_total": summed_stats(answered)}


def summed_stats(answers: Sequence[dict[str, Any]]) -> dict[str, object]:
    """The instances' `stats` added up: SUMMED, every counter, the pools by
    name; `answered` says how many there were."""
    total: dict[str, object] = {"answered": len(answers)}
    for key in SUMMED:
        total[key] = sum(int(a.get(key, 0)) for a in answers)
    counters: dict[str, int] = {}
    for a in answers:
        for name, value in dict(a.get("counters", {})).items():
            counters[name] = counters.get(name, 0) + int(value)
    total["counters"] = counters
    total["pools"] = _summed_pools(answers)
    return total


def _summed_pools(answers: Sequence[dict[str, Any]]) -> list[dict[str, object]]:
    """The pools of every instance by name, in first-seen order: their ports
    (each instance's block) and ports in use per protocol, added up."""
    pools: dict[str, dict[str, Any]] = {}
    for a in answers:
        for pool in a.get("pools", []):
            into = pools.setdefault(pool["name"], {"name": pool["name"], "ports": 0, "in_use": {}})
            into["ports"] += int(pool["ports"])
            for proto, used in dict(pool["in_use"]).items():
                into["in_use"][proto] = into["in_use"].get(proto, 0) + int(used)
    return list(pools.values())
