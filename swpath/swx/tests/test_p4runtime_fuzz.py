"""Random P4Runtime writes and reads against quicknat-swx: whatever a
client sends, the switch answers every update and read with a code and
keeps serving. Seeded, so a
failure is replayed by its seed; FUZZ_UPDATES updates a run (`make test`).

Each update starts from something the program's P4Info describes (a table,
an action profile, a counter or a meter) and is then bent at random: ids,
fields left out or given twice, values of any length, any action, any
priority, default entries, idle timeouts, members and groups. The codes
allowed are those the spec gives a Write's updates; INTERNAL or UNKNOWN on
an update, a dead switch or a stream that ends are failures. Reads are bent
the same way, from the entities the writes left."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import grpc
import pytest
from conftest import Switch, requires_switch
from finsy.proto import p4i, p4r, rpc_code
from p4runtime_session import Client, Program, Refused
from test_p4runtime_conformance import P4INFO, SPEC

FUZZ_UPDATES = 10_000
FUZZ_READS = 1_000
FUZZ_PACKET_OUTS = 3_000
BATCH = 16
SEEDS = (1, 2, 3)

pytestmark = requires_switch

PROGRAM = Program(P4INFO)
ACTIONS = {a.preamble.id: a for a in PROGRAM.p4info.actions}
ALLOWED = {
    rpc_code.OK,
    rpc_code.INVALID_ARGUMENT,
    rpc_code.OUT_OF_RANGE,
    rpc_code.NOT_FOUND,
    rpc_code.ALREADY_EXISTS,
    rpc_code.RESOURCE_EXHAUSTED,
    rpc_code.PERMISSION_DENIED,
    rpc_code.FAILED_PRECONDITION,
    rpc_code.UNIMPLEMENTED,
}


def value(rng: random.Random, bitwidth: int, bits: int | None = None) -> bytes:
    """Mostly a value that fits (`bits`, or random bits), sometimes padded
    with zero bytes, empty or too wide."""
    roll = rng.random()
    width = (bitwidth + 7) // 8
    if roll < 0.01:
        return b""
    if roll < 0.04:
        return rng.randbytes(rng.randint(width + 1, width + 4))
    fit = (rng.getrandbits(bitwidth) if bits is None else bits).to_bytes(width, "big")
    return (b"\0" * rng.randint(1, 3) + fit) if roll < 0.12 else fit


def field_match(rng: random.Random, field: object) -> p4r.FieldMatch:
    kinds = {2: "exact", 3: "lpm", 4: "ternary", 6: "optional"}  # p4info MatchType
    kind = kinds[field.match_type] if rng.random() < 0.97 else rng.choice(list(kinds.values()))  # type: ignore[attr-defined]
    width = field.bitwidth  # type: ignore[attr-defined]
    m = p4r.FieldMatch(field_id=field.id if rng.random() < 0.98 else rng.randint(0, 9))  # type: ignore[attr-defined]
    bits = rng.getrandbits(width)
    if kind == "exact":
        m.exact.value = value(rng, width, bits)
    elif kind == "lpm":
        # a prefix whose value has no bit past it, now and then one that has
        m.lpm.prefix_len = (
            rng.randint(1, width) if rng.random() < 0.95 else rng.randint(-1, width + 1)
        )
        mask = ((1 << width) - 1) ^ ((1 << (width - max(0, min(width, m.lpm.prefix_len)))) - 1)
        m.lpm.value = value(rng, width, bits & mask if rng.random() < 0.95 else bits)
    elif kind == "ternary":
        mask = rng.getrandbits(width) | 1
        m.ternary.mask = value(rng, width, mask)
        m.ternary.value = value(rng, width, bits & mask if rng.random() < 0.95 else bits)
    else:
        m.optional.value = value(rng, width, bits)
    return m


def action(rng: random.Random, action_ids: list[int]) -> p4r.Action:
    a = rng.choice(list(ACTIONS.values()))
    if action_ids and rng.random() < 0.8:
        a = ACTIONS[rng.choice(action_ids)]
    params = [p4r.Action.Param(param_id=p.id, value=value(rng, p.bitwidth)) for p in a.params]
    if params and rng.random() < 0.03:
        params.pop(rng.randrange(len(params)))
    if params and rng.random() < 0.05:
        params.append(params[0])
    return p4r.Action(action_id=a.preamble.id, params=params)


def table_entry(rng: random.Random) -> p4r.Entity:
    table = rng.choice(list(PROGRAM.tables.values()))
    e = p4r.TableEntry(table_id=table.preamble.id if rng.random() < 0.98 else rng.randint(0, 99))
    fields = [f for f in table.match_fields if rng.random() < 0.97]
    if fields and rng.random() < 0.05:
        fields.append(fields[0])
    e.match.extend(field_match(rng, f) for f in fields)
    roll = rng.random()
    ids = [a.id for a in table.action_refs]
    if roll < 0.8:
        e.action.action.CopyFrom(action(rng, ids))
    elif roll < 0.88:
        e.action.action_profile_member_id = rng.randint(0, 8)
    elif roll < 0.94:
        e.action.action_profile_group_id = rng.randint(0, 8)
    ternary = any(f.match_type in (4, 6) for f in table.match_fields)  # TERNARY, OPTIONAL
    if rng.random() < (0.95 if ternary else 0.05):
        e.priority = rng.choice((0, 1, 10, 1000, 2**29 - 1, 2**29, 2**31 - 1, -1))
    if rng.random() < 0.05:
        e.ClearField("match")
        e.is_default_action = True
    if rng.random() < 0.1:
        e.idle_timeout_ns = rng.choice((1, 10**9, 2**62))
    return p4r.Entity(table_entry=e)


def profile_entity(rng: random.Random) -> p4r.Entity:
    profile = PROGRAM.p4info.action_profiles[0]
    pid = profile.preamble.id if rng.random() < 0.95 else rng.randint(0, 99)
    table = next(t for t in PROGRAM.tables.values() if t.preamble.id in profile.table_ids)
    if rng.random() < 0.5:
        member = p4r.ActionProfileMember(
            action_profile_id=pid,
            member_id=rng.randint(0, 8),
            action=action(rng, [a.id for a in table.action_refs]),
        )
        return p4r.Entity(action_profile_member=member)
    group = p4r.ActionProfileGroup(
        action_profile_id=pid, group_id=rng.randint(0, 8), max_size=rng.randint(0, 100)
    )
    for _ in range(rng.randint(0, 4)):
        group.members.add(member_id=rng.randint(0, 8), weight=rng.randint(-1, 3))
    return p4r.Entity(action_profile_group=group)


def array_entity(rng: random.Random) -> p4r.Entity:
    if rng.random() < 0.5:
        c = rng.choice(list(PROGRAM.counters.values()))
        entry = p4r.CounterEntry(counter_id=c.preamble.id)
        if rng.random() < 0.8:
            entry.index.index = rng.randint(-2, c.size + 2)
        if rng.random() < 0.8:
            entry.data.packet_count = rng.randint(0, 2**40)
        return p4r.Entity(counter_entry=entry)
    m = rng.choice(list(PROGRAM.meters.values()))
    meter = p4r.MeterEntry(meter_id=m.preamble.id)
    if rng.random() < 0.8:
        meter.index.index = rng.randint(-2, m.size + 2)
    if rng.random() < 0.8:
        meter.config.cir, meter.config.pir = rng.randint(-1, 10**6), rng.randint(-1, 10**6)
        meter.config.cburst, meter.config.pburst = rng.randint(-1, 10**4), rng.randint(-1, 10**4)
    return p4r.Entity(meter_entry=meter)


def updates(rng: random.Random, n: int) -> Iterator[p4r.Update]:
    for _ in range(n):
        roll = rng.random()
        entity = (
            table_entry(rng)
            if roll < 0.75
            else profile_entity(rng)
            if roll < 0.88
            else array_entity(rng)
        )
        kind = rng.choices((1, 2, 3, 0), weights=(60, 15, 20, 5))[0]
        if entity.HasField("counter_entry") or entity.HasField("meter_entry"):
            kind = 2 if rng.random() < 0.9 else kind  # their one update
        yield p4r.Update(type=kind, entity=entity)


@pytest.fixture(scope="module")
def primary(switch: Switch) -> Iterator[Client]:
    client = Client(switch.address, PROGRAM)
    try:
        client.arbitrate()
        assert client.next_arbitration().status.code == rpc_code.OK
        yield client
    finally:
        client.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_random_writes_get_an_answer_each_and_the_switch_serves_on(
    switch: Switch, primary: Client, seed: int
) -> None:
    primary.set_pipeline(SPEC.read_bytes())  # a program with empty tables
    rng = random.Random(seed)
    batch: list[p4r.Update] = []
    answered = {code: 0 for code in ALLOWED}
    for n, update in enumerate(updates(rng, FUZZ_UPDATES)):
        batch.append(update)
        if len(batch) < BATCH and n < FUZZ_UPDATES - 1:
            continue
        try:
            primary.write(*batch)
            answered[rpc_code.OK] += len(batch)
        except Refused as refusal:
            assert refusal.code == grpc.StatusCode.UNKNOWN, (seed, n, refusal)
            codes = [c for c, _ in refusal.per_update]
            assert len(codes) == len(batch) and set(codes) <= ALLOWED, (seed, n, refusal, batch)
            for c in codes:
                answered[c] += 1
        batch = []
        assert switch.process.poll() is None, f"quicknat-swx died (seed {seed}, update {n})"
    # the fuzz reached past the first checks: some took, some were refused
    assert answered[rpc_code.OK] > FUZZ_UPDATES // 20, answered
    assert answered[rpc_code.INVALID_ARGUMENT] > FUZZ_UPDATES // 20, answered
    # everything it holds reads back, and the stream is still the primary's
    entities = primary.read(p4r.Entity(table_entry=p4r.TableEntry()))
    assert all(e.HasField("table_entry") for e in entities)
    primary.set_pipeline(SPEC.read_bytes())
    assert primary.table("nat_in2out") == []


READ_CODES = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.OUT_OF_RANGE,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.UNIMPLEMENTED,
}


def read_entity(rng: random.Random) -> p4r.Entity:
    """What a Read asks for: an entity of any kind, bent as the writes are,
    or left a wildcard (its ids 0)."""
    roll = rng.random()
    if roll < 0.6:
        entity = table_entry(rng)
        e = entity.table_entry
        e.ClearField("action")
        if rng.random() < 0.3:
            e.ClearField("match")
        if rng.random() < 0.1:
            e.table_id = 0
        if rng.random() < 0.2:
            e.counter_data.SetInParent()
        return entity
    if roll < 0.75:
        entity = profile_entity(rng)
        if rng.random() < 0.3:
            which = entity.WhichOneof("entity")
            getattr(entity, which).Clear()
        return entity
    if roll < 0.9:
        return array_entity(rng)
    kinds = (
        p4r.Entity(register_entry=p4r.RegisterEntry()),
        p4r.Entity(direct_counter_entry=p4r.DirectCounterEntry()),
        p4r.Entity(value_set_entry=p4r.ValueSetEntry(value_set_id=rng.randint(0, 9))),
        p4r.Entity(digest_entry=p4r.DigestEntry(digest_id=rng.randint(0, 9))),
        p4r.Entity(),
    )
    return rng.choice(kinds)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_reads_get_an_answer_each_and_the_switch_serves_on(
    switch: Switch, primary: Client, seed: int
) -> None:
    primary.set_pipeline(SPEC.read_bytes())
    rng = random.Random(seed)
    # something to read: the valid share of a few hundred random writes
    for _ in range(20):
        with contextlib.suppress(Refused):  # refusals are the other test's
            primary.write(*updates(rng, BATCH))
    answered = {"ok": 0, "entities": 0, "refused": 0}
    for n in range(FUZZ_READS):
        entities = [read_entity(rng) for _ in range(rng.randint(1, 3))]
        try:
            got = primary.read(*entities)
            answered["ok"] += 1
            answered["entities"] += len(got)
        except Refused as refusal:
            assert refusal.code in READ_CODES, (seed, n, refusal, entities)
            answered["refused"] += 1
        assert switch.process.poll() is None, f"quicknat-swx died (seed {seed}, read {n})"
    assert answered["ok"] > FUZZ_READS // 10 and answered["entities"] > 0, answered
    assert answered["refused"] > FUZZ_READS // 10, answered
    primary.set_pipeline(SPEC.read_bytes())


def frame(rng: random.Random) -> bytes:
    """Mostly an Ethernet/IPv4 frame with UDP or TCP, its bytes then bent;
    sometimes bytes at random, empty or longer than a packet buffer."""
    roll = rng.random()
    if roll < 0.05:
        return b""
    if roll < 0.1:
        return rng.randbytes(rng.randint(1, 4000))
    l4 = rng.choice((6, 17, 1, rng.randint(0, 255)))
    ihl = 5 if rng.random() < 0.9 else rng.randint(0, 15)
    ip = bytearray(20)
    ip[0], ip[2:4], ip[8], ip[9] = 0x40 | ihl, (40).to_bytes(2, "big"), rng.randint(0, 3), l4
    ip[12:20] = bytes([10, 0, 0, rng.randint(1, 3), 198, 51, 100, rng.randint(1, 3)])
    body = bytes(ip) + rng.randbytes(rng.randint(0, 60))
    data = bytearray(b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00" + body)
    for _ in range(rng.randint(0, 3)):
        data[rng.randrange(len(data))] = rng.randint(0, 255)
    return bytes(data)


def packet_out(rng: random.Random, header: dict[str, object]) -> p4r.StreamMessageRequest:
    metadata = []
    for name, m in header.items():
        if rng.random() < 0.03:
            continue
        width = m.bitwidth  # type: ignore[attr-defined]
        bits = {
            "egress_port": rng.choice((0, 1, 2, 3, 5, 63, 64, rng.getrandbits(width))),
            "ingress_port": rng.choice((0, 1, 2, 7, rng.getrandbits(width))),
            "mode": rng.choice((0, 1, 2, rng.getrandbits(width))),
        }.get(name, rng.getrandbits(width))
        metadata.append(p4r.PacketMetadata(metadata_id=m.id, value=value(rng, width, bits)))  # type: ignore[attr-defined]
    if rng.random() < 0.02:
        metadata.append(p4r.PacketMetadata(metadata_id=rng.randint(0, 9), value=b"\x01"))
    return p4r.StreamMessageRequest(packet=p4r.PacketOut(payload=frame(rng), metadata=metadata))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_packet_outs_never_end_the_stream_or_the_switch(
    switch: Switch, primary: Client, seed: int
) -> None:
    """Packet-outs with metadata and payloads at random, through the CPU
    port into the program (INJECT, ROUTE) or out of a port (DIRECT): the
    switch drops or sends each, or answers a StreamError, and stays up;
    the primary's stream with it."""
    primary.set_pipeline(SPEC.read_bytes())
    rng = random.Random(seed)
    fields = {m.name: m for m in PROGRAM.packet_out.metadata}
    for n in range(FUZZ_PACKET_OUTS):
        primary.send(packet_out(rng, fields))
        if n % 500 == 499:
            assert switch.process.poll() is None, f"quicknat-swx died (seed {seed}, {n})"
    # The stream answers in order, so a last packet-out it must refuse (a
    # metadata id the header lacks) closes the count: every error before its
    # own is one of the random packet-outs'. A write is no such mark: the
    # client's stream thread may not even have sent them all when it returns
    # (seed 4 counted none that way).
    last = p4r.PacketOut(
        payload=b"the fuzz's last packet-out",
        metadata=[p4r.PacketMetadata(metadata_id=77, value=b"\x01")],
    )
    primary.send(p4r.StreamMessageRequest(packet=last))
    errors = 0
    while True:
        got = primary.next_of("error")
        assert isinstance(got, p4r.StreamError), got
        if got.packet_out.packet_out == last:
            assert got.canonical_code == rpc_code.INVALID_ARGUMENT, got
            break
        assert got.canonical_code in ALLOWED, got
        errors += 1
    # and the unary calls beside it
    drops = PROGRAM.counters["drop_counter"].preamble.id
    reset = p4r.CounterEntry(counter_id=drops, index=p4r.Index(index=0), data=p4r.CounterData())
    primary.write(p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(counter_entry=reset)))
    assert switch.process.poll() is None, f"quicknat-swx died (seed {seed})"
    assert 0 < errors < FUZZ_PACKET_OUTS, errors


FUZZ_P4INFOS = 60


def bend_one(rng: random.Random, items: object) -> None:
    """One of a repeated field's elements (match fields, parameters,
    header fields: each an id and a bitwidth) dropped, doubled, resized or
    renumbered."""
    if not items:
        return
    item = rng.choice(items)  # type: ignore[call-overload]
    what = rng.choice(("drop", "double", "width", "id"))
    if what == "drop":
        items.remove(item)  # type: ignore[attr-defined]
    elif what == "double":
        items.add().CopyFrom(item)  # type: ignore[attr-defined]
    elif what == "width":
        item.bitwidth = rng.choice((0, 1, 7, 9, 33, 128, 4096, 2**31 - 1))
    else:
        item.id = rng.randint(0, 9)


def bent_p4info(rng: random.Random) -> p4i.P4Info:
    """The program's P4Info with one to three things changed at random:
    a field, parameter or metadata dropped, doubled, resized or retyped, an
    id moved onto another's, a size, a name; most no longer match the
    spec pushed with them."""
    info = p4i.P4Info()
    info.CopyFrom(PROGRAM.p4info)
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        if roll < 0.3:
            t = rng.choice(info.tables)
            if rng.random() < 0.2 and t.match_fields:
                rng.choice(t.match_fields).match_type = rng.randint(0, 7)
            else:
                bend_one(rng, t.match_fields)
        elif roll < 0.45:
            t = rng.choice(info.tables)
            what = rng.choice(("size", "action", "id", "gone"))
            if what == "size":
                t.size = rng.choice((0, 1, 2**40))
            elif what == "action":
                t.action_refs.add(id=rng.randint(1, 2**31))
            elif what == "id":
                t.preamble.id = rng.choice(info.tables).preamble.id
            else:
                info.tables.remove(t)
        elif roll < 0.65:
            bend_one(rng, rng.choice([a for a in info.actions if a.params]).params)
        elif roll < 0.8:
            bend_one(rng, rng.choice(info.controller_packet_metadata).metadata)
        elif roll < 0.9:
            arrays = list(info.counters) + list(info.meters) + list(info.direct_counters)
            x = rng.choice(arrays)
            if hasattr(x, "size"):
                x.size = rng.choice((0, 1, 2**40))
            x.preamble.name = rng.choice(("", "x", x.preamble.name + "_"))
        else:
            p = info.action_profiles[0]
            what = rng.choice(("table", "size", "group"))
            if what == "table":
                p.table_ids[rng.randrange(len(p.table_ids))] = rng.randint(1, 2**31)
            elif what == "size":
                p.size = rng.choice((0, 1, 2**40))
            else:
                p.max_group_size = rng.choice((0, 1, 2**31 - 1))
    return info


@pytest.mark.parametrize("seed", SEEDS)
def test_a_bent_p4info_is_refused_or_taken_and_the_switch_serves_on(
    switch: Switch, primary: Client, seed: int
) -> None:
    """SetForwardingPipelineConfig with the program's spec and a P4Info bent
    at random: INVALID_ARGUMENT, with the running program kept (its cookie),
    or taken; either way the switch goes on serving, and the true P4Info
    is taken after."""
    spec = SPEC.read_bytes()
    rng = random.Random(seed)
    taken = refused = 0
    for n in range(FUZZ_P4INFOS):
        primary.set_pipeline(spec, cookie=1)
        try:
            primary.set_pipeline(spec, p4info=bent_p4info(rng), cookie=2)
            taken += 1
            assert primary.cookie() == 2
        except Refused as refusal:
            assert refusal.code == grpc.StatusCode.INVALID_ARGUMENT, (seed, n, refusal)
            assert primary.cookie() == 1
            refused += 1
        assert switch.process.poll() is None, f"quicknat-swx died (seed {seed}, {n})"
    assert refused > FUZZ_P4INFOS // 2, (taken, refused)
    primary.set_pipeline(spec)
    assert primary.table("nat_in2out") == []
