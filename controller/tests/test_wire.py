"""The per-flow entries encoded straight to protobuf's wire format
(quicknat/p4rt/wire.py) against the same entries built as protobuf messages
with the generic builder (p4rt/entities.py): the same bytes, for random
values of every length, every action and each kind of update."""

from __future__ import annotations

import random

import pytest
from finsy.proto import p4r
from quicknat.controller.program import NatEntries, Pipeline
from quicknat.p4rt.entities import table_entry, update
from quicknat.p4rt.wire import ExactTableUpdates, varint, write_request

P4INFO = Pipeline.load().p4info
KEY = NatEntries.KEY
ACTIONS = NatEntries.ACTIONS
KINDS = (p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE)


def random_value(rng: random.Random, bits: int) -> int:
    """Values of every canonical length: 0, one byte, ..., the full width."""
    width = rng.randint(0, bits)
    return rng.getrandbits(width) if width else 0


@pytest.mark.parametrize("table", ["nat_in2out", "nat_out2in"])
def test_encoded_updates_are_what_protobuf_serializes(table: str) -> None:
    encoder = ExactTableUpdates(P4INFO, table, KEY, ACTIONS[table])
    t = P4INFO.table(table)
    rng = random.Random(table)
    for _ in range(2000):
        key = {name: random_value(rng, t.field(name).bitwidth) for name in KEY}
        kind = rng.choice(KINDS)
        if kind == p4r.Update.DELETE:
            expected = update(kind, table_entry(P4INFO, table, key))
            got = encoder.update(kind, tuple(key.values()))
        else:
            action = rng.choice(list(ACTIONS[table]))
            a = P4INFO.action(action)
            params = {p: random_value(rng, a.param(p).bitwidth) for p in ACTIONS[table][action]}
            timeout = rng.choice([0, 60, 7440]) * 10**9
            entry = table_entry(P4INFO, table, key, action, params, idle_timeout_ns=timeout)
            metadata = rng.getrandbits(64).to_bytes(8, "big") if rng.random() < 0.5 else b""
            entry.metadata = metadata
            expected = update(kind, entry)
            got = encoder.update(
                kind, tuple(key.values()), action, tuple(params.values()), timeout, metadata
            )
        assert got == expected.SerializeToString()


def test_a_value_too_wide_for_its_field_is_refused() -> None:
    encoder = ExactTableUpdates(P4INFO, "nat_in2out", KEY, ACTIONS["nat_in2out"])
    with pytest.raises(IndexError):
        encoder.update(p4r.Update.DELETE, (1, 2, 256, 3, 4))  # ip_proto is 8 bits


def test_a_write_request_parses_as_the_one_protobuf_builds() -> None:
    encoder = ExactTableUpdates(P4INFO, "nat_in2out", KEY, ACTIONS["nat_in2out"])
    encoded = encoder.update(p4r.Update.DELETE, (1, 2, 17, 3, 4))
    message = update(
        p4r.Update.INSERT,
        table_entry(
            P4INFO,
            "nat_in2out",
            dict(zip(KEY, (5, 6, 6, 7, 8), strict=True)),
            "rewrite_src",
            {"addr": 9, "port": 10},
        ),
    )
    # past the lengths table (16 KiB): a varint of its own
    big = p4r.Update()
    big.CopyFrom(message)
    big.entity.table_entry.metadata = b"m" * 20000
    header = p4r.WriteRequest(device_id=1, election_id=p4r.Uint128(high=0, low=1))
    request = p4r.WriteRequest.FromString(
        write_request(header.SerializeToString(), [encoded, message, big])
    )
    assert list(request.updates) == [p4r.Update.FromString(encoded), message, big]
    assert request.device_id == 1 and request.election_id.low == 1


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 16383, 16384, 2**35, 2**63 - 1])
def test_varint(n: int) -> None:
    assert p4r.Uint128.FromString(b"\x10" + varint(n)).low == n
