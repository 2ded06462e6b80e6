"""quicknat-swx against the P4Runtime spec (1.3) where a client gets it wrong:
each malformed request answered with the code the spec names for it, and
nothing the switch held lost. The client is p4lang's protos over grpcio
(p4runtime_session.py), so nothing of the controller's encodes the requests:
it never sends most of these.

Where BMv2's server (PI) answers otherwise, docs/p4-targets.md says so;
these tests hold quicknat-swx to the spec, not to BMv2."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from conftest import Switch, requires_switch, running_switch
from finsy.proto import p4i, p4r, rpc_code
from google.protobuf import text_format
from lab.swx import telemetry
from p4runtime_session import WAIT_S, Client, Program, Refused, controller_header

BUILD = Path(__file__).resolve().parents[3] / "p4src" / "build" / "pna"
P4INFO, SPEC = BUILD / "quicknat.p4info.txtpb", BUILD / "quicknat.spec"

pytestmark = requires_switch

OK = rpc_code.OK
INVALID_ARGUMENT = rpc_code.INVALID_ARGUMENT
OUT_OF_RANGE = rpc_code.OUT_OF_RANGE
NOT_FOUND = rpc_code.NOT_FOUND
ALREADY_EXISTS = rpc_code.ALREADY_EXISTS
PERMISSION_DENIED = rpc_code.PERMISSION_DENIED
RESOURCE_EXHAUSTED = rpc_code.RESOURCE_EXHAUSTED


PROGRAM = Program(P4INFO)


def session(n: int, src: bytes | None = None) -> p4r.TableEntry:
    """A nat_in2out entry: 10.0.<n>.1:1000 -> 8.8.8.8:53 UDP, source rewritten."""
    src = src if src is not None else bytes([10, 0, n, 1])
    e = p4r.TableEntry(table_id=PROGRAM.table_id("nat_in2out"))
    key = [("ipv4_src", src), ("ipv4_dst", b"\x08\x08\x08\x08"), ("ip_proto", b"\x11")]
    key += [("l4_sport", b"\x03\xe8"), ("l4_dport", b"\x35")]
    for name, value in key:
        e.match.add(
            field_id=PROGRAM.field_id("nat_in2out", name), exact=p4r.FieldMatch.Exact(value=value)
        )
    e.action.action.CopyFrom(
        PROGRAM.action("rewrite_src", addr=b"\xcb\x00\x71\x01", port=bytes([7, n]))
    )
    return e


def route(value: bytes = b"\xc6\x33\x64\x00", prefix_len: int = 24) -> p4r.TableEntry:
    """A routing_v4 entry (LPM)."""
    e = p4r.TableEntry(table_id=PROGRAM.table_id("routing_v4"))
    e.match.add(
        field_id=PROGRAM.field_id("routing_v4", "ipv4_dst"),
        lpm=p4r.FieldMatch.LPM(value=value, prefix_len=prefix_len),
    )
    e.action.action.CopyFrom(
        PROGRAM.action(
            "set_next_hop", port=b"\x02", smac=b"\x02\0\0\0\0\x02", dmac=b"\x02\0\0\0\0\xfe"
        )
    )
    return e


def pinned(value: bytes, mask: bytes, priority: int) -> p4r.TableEntry:
    """A slow_path_out2in entry (ternary)."""
    e = p4r.TableEntry(table_id=PROGRAM.table_id("slow_path_out2in"), priority=priority)
    e.match.add(
        field_id=PROGRAM.field_id("slow_path_out2in", "ipv4_dst"),
        ternary=p4r.FieldMatch.Ternary(value=value, mask=mask),
    )
    params = {p.name: b"\x01" for p in PROGRAM.actions["to_slow_path"].params}
    e.action.action.CopyFrom(PROGRAM.action("to_slow_path", **params))
    return e


def update(kind: str, entry: p4r.TableEntry) -> p4r.Update:
    return p4r.Update(type=p4r.Update.Type.Value(kind), entity=p4r.Entity(table_entry=entry))


@pytest.fixture(scope="module")
def primary(switch: Switch) -> Iterator[Client]:
    """The primary client, the program pushed."""
    client = Client(switch.address, PROGRAM)
    try:
        client.arbitrate()
        assert client.next_arbitration().status.code == OK
        client.set_pipeline(SPEC.read_bytes())
        yield client
    finally:
        client.close()


def _mutated(entry: p4r.TableEntry, change: Callable[[p4r.TableEntry], object]) -> p4r.TableEntry:
    e = p4r.TableEntry()
    e.CopyFrom(entry)
    change(e)
    return e


def _add_field_twice(e: p4r.TableEntry) -> None:
    e.match.add().CopyFrom(e.match[0])


def _lpm_for_exact(e: p4r.TableEntry) -> None:
    e.match[0].ClearField("exact")
    e.match[0].lpm.value, e.match[0].lpm.prefix_len = b"\x0a\0\0\x05", 32


def _default_insert(e: p4r.TableEntry) -> None:
    e.ClearField("match")
    e.is_default_action = True


# Each: the update, the code of its p4.v1.Error, what in the message says why.
# Keys 40 to 79: one each, so that none meets another's entry.
MALFORMED: dict[str, tuple[Callable[[], p4r.Update], int, str]] = {
    "an unknown table id": (
        lambda: update("INSERT", _mutated(session(40), lambda e: setattr(e, "table_id", 12345))),
        NOT_FOUND,
        "no table id 12345",
    ),
    "an unknown match field id": (
        lambda: update(
            "INSERT", _mutated(session(41), lambda e: setattr(e.match[0], "field_id", 99))
        ),
        INVALID_ARGUMENT,
        "no match field id 99",
    ),
    "an exact value wider than its field": (
        lambda: update(
            "INSERT",
            _mutated(session(42), lambda e: setattr(e.match[2].exact, "value", b"\x01\x11")),
        ),
        OUT_OF_RANGE,
        "ip_proto",
    ),
    "an empty exact value (Bytestrings: never a value)": (
        lambda: update(
            "INSERT", _mutated(session(43), lambda e: setattr(e.match[2].exact, "value", b""))
        ),
        OUT_OF_RANGE,
        "ip_proto",
    ),
    "an exact field left out": (
        lambda: update("INSERT", _mutated(session(44), lambda e: e.match.pop())),
        INVALID_ARGUMENT,
        "l4_dport missing",
    ),
    "a match field given twice": (
        lambda: update("INSERT", _mutated(session(45), _add_field_twice)),
        INVALID_ARGUMENT,
        "given twice",
    ),
    "an LPM match for an exact field": (
        lambda: update("INSERT", _mutated(session(46), _lpm_for_exact)),
        INVALID_ARGUMENT,
        "is exact",
    ),
    "a priority in a table with no ternary field": (
        lambda: update("INSERT", _mutated(session(47), lambda e: setattr(e, "priority", 5))),
        INVALID_ARGUMENT,
        "takes no priority",
    ),
    "an unknown action id": (
        lambda: update(
            "INSERT", _mutated(session(48), lambda e: setattr(e.action.action, "action_id", 999))
        ),
        INVALID_ARGUMENT,
        "no action id 999",
    ),
    "another table's action": (
        lambda: update(
            "INSERT",
            _mutated(
                session(49),
                lambda e: e.action.action.CopyFrom(
                    PROGRAM.action("set_next_hop", port=b"\x02", smac=b"\x02", dmac=b"\x02")
                ),
            ),
        ),
        INVALID_ARGUMENT,
        "no action id",
    ),
    "a parameter left out": (
        lambda: update("INSERT", _mutated(session(50), lambda e: e.action.action.params.pop())),
        INVALID_ARGUMENT,
        "takes 2 parameters, 1 given",
    ),
    "an unknown parameter id": (
        lambda: update(
            "INSERT",
            _mutated(session(51), lambda e: setattr(e.action.action.params[1], "param_id", 77)),
        ),
        INVALID_ARGUMENT,
        "no parameter id 77",
    ),
    "a parameter wider than its bits": (
        lambda: update(
            "INSERT",
            _mutated(
                session(52), lambda e: setattr(e.action.action.params[1], "value", b"\x01\x07\xd0")
            ),
        ),
        OUT_OF_RANGE,
        "parameter port",
    ),
    "an empty parameter": (
        lambda: update(
            "INSERT",
            _mutated(session(53), lambda e: setattr(e.action.action.params[1], "value", b"")),
        ),
        OUT_OF_RANGE,
        "parameter port",
    ),
    "an entry with no action": (
        lambda: update("INSERT", _mutated(session(54), lambda e: e.ClearField("action"))),
        INVALID_ARGUMENT,
        "needs an action",
    ),
    "a DELETE of an entry not there": (
        lambda: update("DELETE", session(55)),
        NOT_FOUND,
        "no such entry",
    ),
    "a MODIFY of an entry not there": (
        lambda: update("MODIFY", session(56)),
        NOT_FOUND,
        "no such entry",
    ),
    "an LPM value with bits past its prefix": (
        lambda: update("INSERT", route(b"\xc6\x33\x39\x01", 24)),
        INVALID_ARGUMENT,
        "past the prefix length",
    ),
    "an LPM prefix longer than its field": (
        lambda: update("INSERT", route(b"\xc6\x33\x3a\x00", 33)),
        INVALID_ARGUMENT,
        "prefix length 33",
    ),
    "an LPM /0 (the field is to be left out)": (
        lambda: update("INSERT", route(b"\x00", 0)),
        INVALID_ARGUMENT,
        "prefix length 0",
    ),
    "an LPM value wider than its field": (
        lambda: update("INSERT", route(b"\x01\xc6\x33\x3b\x00", 24)),
        OUT_OF_RANGE,
        "ipv4_dst",
    ),
    "a ternary entry without a priority": (
        lambda: update("INSERT", pinned(b"\xc6\x33\x3c\x01", b"\xff\xff\xff\xff", 0)),
        INVALID_ARGUMENT,
        "needs a priority",
    ),
    "a ternary zero mask (the field is to be left out)": (
        lambda: update("INSERT", pinned(b"\x00", b"\x00", 61)),
        INVALID_ARGUMENT,
        "a zero mask",
    ),
    "a ternary value with bits outside its mask": (
        lambda: update("INSERT", pinned(b"\xc6\x33\x3e\x01", b"\xff\xff\xff\x00", 62)),
        INVALID_ARGUMENT,
        "outside the mask",
    ),
    "a ternary mask wider than its field": (
        lambda: update("INSERT", pinned(b"\xc6\x33\x3f\x01", b"\x01\xff\xff\xff\xff", 63)),
        OUT_OF_RANGE,
        "the mask",
    ),
    "an INSERT of a default entry": (
        lambda: update("INSERT", _mutated(route(b"\xc6\x33\x40\x00"), _default_insert)),
        INVALID_ARGUMENT,
        "only modified",
    ),
    "a MODIFY of a const default action": (
        lambda: update("MODIFY", _mutated(route(b"\xc6\x33\x41\x00"), _default_insert)),
        PERMISSION_DENIED,
        "const default",
    ),
    "an update of no type": (
        lambda: update("UNSPECIFIED", session(66)),
        INVALID_ARGUMENT,
        "update type",
    ),
    "an idle timeout in a table that has none": (
        lambda: update(
            "INSERT",
            _mutated(route(b"\xc6\x33\x43\x00"), lambda e: setattr(e, "idle_timeout_ns", 10**9)),
        ),
        INVALID_ARGUMENT,
        "no idle timeout",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_update_is_refused_with_its_code_and_the_batch_goes_on(
    primary: Client, case: str
) -> None:
    """Between two good INSERTs: the batch answers UNKNOWN with one error
    per update (P4Runtime "Batching and Ordering of Updates"), the bad
    one's code the spec's; the good ones take and nothing else changes."""
    make, code, why = MALFORMED[case]
    before = primary.table("nat_in2out")
    with pytest.raises(Refused) as refusal:
        primary.write(update("INSERT", session(1)), make(), update("INSERT", session(2)))
    assert refusal.value.code == grpc.StatusCode.UNKNOWN
    codes = [c for c, _ in refusal.value.per_update]
    assert codes == [OK, code, OK], refusal.value
    assert why in refusal.value.per_update[1][1]
    after = primary.table("nat_in2out")
    assert len(after) == len(before) + 2
    primary.write(update("DELETE", session(1)), update("DELETE", session(2)))
    assert primary.table("nat_in2out") == before
    assert primary.table("routing_v4") == [] and primary.table("slow_path_out2in") == []


def test_an_insert_of_an_entry_there_is_already_exists_and_keeps_it(primary: Client) -> None:
    primary.write(update("INSERT", session(3)))
    changed = session(3)
    changed.action.action.params[1].value = b"\x09\x09"
    with pytest.raises(Refused) as refusal:
        primary.write(update("INSERT", changed))
    assert [c for c, _ in refusal.value.per_update] == [ALREADY_EXISTS]
    (held,) = primary.table("nat_in2out")
    assert held.action.action.params[1].value == bytes([7, 3])  # unchanged
    primary.write(update("DELETE", session(3)))


def test_values_with_leading_zeros_are_taken_and_read_back_canonical(primary: Client) -> None:
    """Bytestrings: a server accepts a value padded with zero bytes and
    reads it back in the canonical form (Read-write symmetry)."""
    padded = session(4, src=b"\x00\x00\x0a\x00\x04\x01")
    padded.action.action.params[1].value = b"\x00\x00\x00\x07\x04"
    primary.write(update("INSERT", padded))
    (held,) = primary.table("nat_in2out")
    assert held.match[0].exact.value == b"\x0a\x00\x04\x01"
    assert held.action.action.params[1].value == b"\x07\x04"
    # the same entry, named canonically, is the one deleted
    primary.write(update("DELETE", session(4)))
    assert primary.table("nat_in2out") == []


def test_a_delete_names_the_key_and_ignores_the_rest(primary: Client) -> None:
    """ "In order to delete, the entity specification only needs to include
    the key. Any non-key parts of entity are ignored." (Write RPC)"""
    primary.write(update("INSERT", session(5)))
    key_only = session(5)
    key_only.ClearField("action")
    primary.write(update("DELETE", key_only))
    assert primary.table("nat_in2out") == []


def test_a_full_table_refuses_each_entry_past_its_size_and_keeps_the_rest(primary: Client) -> None:
    """RESOURCE_EXHAUSTED per entry past the P4Info's size (local_address:
    256), the entries before it kept; a delete makes room again."""
    table = PROGRAM.tables["local_address"]
    field = PROGRAM.field_id("local_address", "ipv4_dst")

    def local(i: int) -> p4r.TableEntry:
        e = p4r.TableEntry(table_id=table.preamble.id)
        e.match.add(
            field_id=field, exact=p4r.FieldMatch.Exact(value=(0x0A640000 + i).to_bytes(4, "big"))
        )
        e.action.action.CopyFrom(PROGRAM.action("mark_local"))
        return e

    with pytest.raises(Refused) as refusal:
        primary.write(*(update("INSERT", local(i)) for i in range(table.size + 3)))
    codes = [c for c, _ in refusal.value.per_update]
    assert codes == [OK] * table.size + [RESOURCE_EXHAUSTED] * 3
    assert "full" in refusal.value.per_update[-1][1]
    assert len(primary.table("local_address")) == table.size
    primary.write(update("DELETE", local(0)))
    primary.write(update("INSERT", local(table.size)))
    primary.write(*(update("DELETE", local(i)) for i in range(1, table.size + 1)))
    assert primary.table("local_address") == []


def test_a_group_is_a_set_of_members_weighted_above_zero(primary: Client) -> None:
    """ActionProfileGroup: members with the same id, or a weight below 1,
    are INVALID_ARGUMENT, as is a MODIFY that changes max_size; a member
    the profile lacks is NOT_FOUND. (DPDK's selector refused the first two
    itself, and the switch answered INTERNAL.)"""
    profile = PROGRAM.p4info.action_profiles[0]
    params = {p.name: b"\x01" for p in PROGRAM.actions["to_slow_path"].params}

    def member(i: int) -> p4r.Update:
        m = p4r.ActionProfileMember(
            action_profile_id=profile.preamble.id,
            member_id=i,
            action=PROGRAM.action("to_slow_path", **params),
        )
        return p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(action_profile_member=m))

    def group(kind: str, members: list[tuple[int, int]], max_size: int = 4) -> p4r.Update:
        g = p4r.ActionProfileGroup(
            action_profile_id=profile.preamble.id, group_id=1, max_size=max_size
        )
        for member_id, weight in members:
            g.members.add(member_id=member_id, weight=weight)
        return p4r.Update(
            type=p4r.Update.Type.Value(kind), entity=p4r.Entity(action_profile_group=g)
        )

    primary.write(member(1), member(2))
    for bad, code, why in (
        (group("INSERT", [(1, 1), (1, 2)]), INVALID_ARGUMENT, "member 1 given twice"),
        (group("INSERT", [(1, 1), (2, 0)]), INVALID_ARGUMENT, "weight 0"),
        (group("INSERT", [(1, 1), (2, -3)]), INVALID_ARGUMENT, "weight -3"),
        (group("INSERT", [(1, 1), (3, 1)]), NOT_FOUND, "no member 3"),
    ):
        with pytest.raises(Refused) as refusal:
            primary.write(bad)
        assert refusal.value.per_update[0][0] == code, refusal.value
        assert why in refusal.value.per_update[0][1]
    primary.write(group("INSERT", [(1, 1), (2, 2)]))
    with pytest.raises(Refused) as resized:
        primary.write(group("MODIFY", [(1, 1)], max_size=8))
    assert resized.value.per_update[0][0] == INVALID_ARGUMENT
    primary.write(group("MODIFY", [(1, 1)]))
    delete = group("DELETE", [])
    members = [member(i) for i in (1, 2)]
    for m in members:
        m.type = p4r.Update.DELETE
    primary.write(delete)
    primary.write(*members)


def test_requests_for_another_device_or_from_a_backup_are_refused(
    switch: Switch, primary: Client
) -> None:
    """Write RPC, checked in this order: the device (NOT_FOUND), the
    primary (PERMISSION_DENIED); atomic batches are not implemented."""
    insert = update("INSERT", session(6))
    with pytest.raises(Refused) as other_device:
        primary.write(insert, device_id=7)
    assert other_device.value.code == grpc.StatusCode.NOT_FOUND
    with pytest.raises(Refused) as read_other:
        primary.read(p4r.Entity(table_entry=p4r.TableEntry()), device_id=7)
    assert read_other.value.code == grpc.StatusCode.NOT_FOUND
    backup = Client(switch.address, PROGRAM, election_id=5)
    nobody = Client(switch.address, PROGRAM, election_id=None)
    try:
        backup.arbitrate()
        assert backup.next_arbitration().status.code == ALREADY_EXISTS  # a primary is connected
        with pytest.raises(Refused) as not_primary:
            backup.write(insert)
        assert not_primary.value.code == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(Refused) as no_id:
            nobody.write(insert)
        assert no_id.value.code == grpc.StatusCode.PERMISSION_DENIED
        # a backup may read (Read RPC: no arbitration needed)
        assert backup.table("nat_in2out") == []
    finally:
        backup.close()
        nobody.close()
    with pytest.raises(Refused) as atomic:
        primary.write(insert, atomicity=p4r.WriteRequest.ROLLBACK_ON_ERROR)
    assert atomic.value.code == grpc.StatusCode.UNIMPLEMENTED
    assert primary.table("nat_in2out") == []


def test_a_pipeline_that_does_not_load_leaves_the_running_one(primary: Client) -> None:
    """SetForwardingPipelineConfig with a broken spec, an empty one, or a
    P4Info that is not the spec's: INVALID_ARGUMENT, and the program
    running before still runs with its entries (its cookie, a read, a
    write)."""
    primary.write(update("INSERT", route()))
    cookie = primary.cookie()
    spec = SPEC.read_bytes()
    broken = spec.replace(b"instructions", b"instruction", 1) + b"\nthis is not a spec line\n"
    other = p4i.P4Info()
    text_format.Parse((BUILD.parent / "quicknat.p4info.txtpb").read_text(), other)  # v1model's
    for config, p4info, why in (
        (broken, None, "the spec is not one DPDK's SWX pipeline takes"),
        (b"", None, "needs a P4Info and a device config"),
        (spec, other, "the P4Info does not match the pipeline"),
    ):
        with pytest.raises(Refused) as refusal:
            primary.set_pipeline(config, p4info)
        assert refusal.value.code == grpc.StatusCode.INVALID_ARGUMENT, refusal.value
        assert why in refusal.value.message
        assert primary.cookie() == cookie
        assert [e.match[0].lpm.prefix_len for e in primary.table("routing_v4")] == [24]
    primary.write(update("INSERT", session(7)))
    primary.write(update("DELETE", session(7)), update("DELETE", route()))


def _bent(change: Callable[[p4i.P4Info], object]) -> p4i.P4Info:
    info = p4i.P4Info()
    info.CopyFrom(PROGRAM.p4info)
    change(info)
    return info


def _table(info: p4i.P4Info, name: str) -> p4i.Table:
    return next(t for t in info.tables if t.preamble.name.endswith("." + name))


def _swap_params(info: p4i.P4Info) -> None:
    a = next(a for a in info.actions if a.preamble.name.endswith(".out2in_rewrite_src_dst"))
    a.params[0].name, a.params[2].name = a.params[2].name, a.params[0].name


# What a P4Info can say that the spec pushed with it does not: each refused
# (INVALID_ARGUMENT), and the reason named. Taken, each would have made the
# switch encode entries or packet-outs other than the pipeline reads them.
MISMATCHED = {
    "a match kind": (
        lambda i: setattr(
            _table(i, "routing_v4").match_fields[0], "match_type", p4i.MatchField.TERNARY
        ),
        "is TERNARY in the P4Info",
    ),
    "a controller header field's width": (
        lambda i: setattr(controller_header(i, "packet_out").metadata[2], "bitwidth", 7),
        "packet_out: field 3 is mode of 7 bits",
    ),
    "a controller header field left out": (
        lambda i: controller_header(i, "packet_out").metadata.pop(),
        "packet_out: 2 fields in the P4Info, 3",
    ),
    "two parameters' names swapped": (_swap_params, "is dst_addr in the P4Info, src_addr in the"),
    "an id of two objects": (
        lambda i: setattr(i.tables[1].preamble, "id", i.tables[0].preamble.id),
        "names two objects",
    ),
    "a match field id twice": (
        lambda i: setattr(_table(i, "nat_in2out").match_fields[1], "id", 1),
        "match field id 1 twice",
    ),
    "an action profile of a table not there (it crashed the switch: SIGSEGV)": (
        lambda i: i.action_profiles[0].table_ids.__setitem__(0, 12345),
        "table id 12345 is not a table of the pipeline",
    ),
    "a match field of no bits": (
        lambda i: setattr(_table(i, "nat_in2out").match_fields[2], "bitwidth", 0),
        "of 0 bits",
    ),
}


@pytest.mark.parametrize("case", list(MISMATCHED))
def test_a_p4info_the_spec_disagrees_with_is_refused(primary: Client, case: str) -> None:
    change, why = MISMATCHED[case]
    cookie = primary.cookie()
    with pytest.raises(Refused) as refusal:
        primary.set_pipeline(SPEC.read_bytes(), p4info=_bent(change), cookie=cookie + 1)
    assert refusal.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert why in refusal.value.message, refusal.value.message
    assert primary.cookie() == cookie


def test_verify_checks_alone_and_a_saved_config_starts_on_commit(primary: Client) -> None:
    """SetForwardingPipelineConfig's actions: VERIFY changes nothing;
    VERIFY_AND_SAVE keeps the running program (and its entries) until
    COMMIT starts the saved one, with empty tables and its cookie."""
    spec = SPEC.read_bytes()
    primary.write(update("INSERT", session(10)))
    running = primary.cookie()
    primary.set_pipeline(spec, action="VERIFY", cookie=running + 1)
    assert primary.cookie() == running and len(primary.table("nat_in2out")) == 1
    primary.set_pipeline(spec, action="VERIFY_AND_SAVE", cookie=running + 2)
    assert primary.cookie() == running and len(primary.table("nat_in2out")) == 1
    primary.set_pipeline(action="COMMIT")
    assert primary.cookie() == running + 2
    assert primary.table("nat_in2out") == []
    # and back to the fixture's own cookie, so the tests after see it
    primary.set_pipeline(spec)
    assert primary.cookie() == running


def test_reconcile_keeps_what_runs_and_refuses_another_program(primary: Client) -> None:
    """RECONCILE_AND_COMMIT (P4Runtime sec. 9.2) keeps the forwarding state:
    the running program pushed again keeps its entries and takes the new
    cookie; another program (its spec changed by a comment, so that the
    pipeline would be another build) is refused with UNIMPLEMENTED, and the
    running one, its entries and its cookie stay."""
    spec = SPEC.read_bytes()
    primary.write(update("INSERT", session(11)))
    running = primary.cookie()
    primary.set_pipeline(spec, action="RECONCILE_AND_COMMIT", cookie=running + 5)
    assert primary.cookie() == running + 5
    assert len(primary.table("nat_in2out")) == 1
    with pytest.raises(Refused) as refusal:
        primary.set_pipeline(spec + b"\n; another\n", action="RECONCILE_AND_COMMIT")
    assert refusal.value.code == grpc.StatusCode.UNIMPLEMENTED, refusal.value
    assert "use VERIFY_AND_COMMIT" in refusal.value.message
    assert primary.cookie() == running + 5
    assert len(primary.table("nat_in2out")) == 1
    primary.write(update("DELETE", session(11)))
    # the fixture's own cookie back, without a reload
    primary.set_pipeline(spec, action="RECONCILE_AND_COMMIT", cookie=running)
    assert primary.cookie() == running


def test_counter_and_meter_indexes_as_the_spec_checks_them(primary: Client) -> None:
    """CounterEntry and MeterEntry: a negative index is INVALID_ARGUMENT,
    one past the array OUT_OF_RANGE; a counter write with no index sets
    every cell, one with no data changes none; meter entries are only
    modified."""
    drops = PROGRAM.counters["drop_counter"]
    meter = PROGRAM.meters["punt_meter"]

    def counter(index: int | None, packets: int | None = None) -> p4r.Entity:
        entry = p4r.CounterEntry(counter_id=drops.preamble.id)
        if index is not None:
            entry.index.index = index
        if packets is not None:
            entry.data.packet_count = packets
        return p4r.Entity(counter_entry=entry)

    def meter_config(index: int) -> p4r.Update:
        entry = p4r.MeterEntry(
            meter_id=meter.preamble.id,
            index=p4r.Index(index=index),
            config=p4r.MeterConfig(cir=10, cburst=10, pir=20, pburst=20),
        )
        return p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(meter_entry=entry))

    for index, code in (
        (drops.size, grpc.StatusCode.OUT_OF_RANGE),
        (-1, grpc.StatusCode.INVALID_ARGUMENT),
    ):
        with pytest.raises(Refused) as read:
            primary.read(counter(index))
        assert read.value.code == code, read.value
    with pytest.raises(Refused) as write:
        primary.write(p4r.Update(type=p4r.Update.MODIFY, entity=counter(drops.size, 1)))
    assert [c for c, _ in write.value.per_update] == [OUT_OF_RANGE]
    # every cell, then none
    primary.write(p4r.Update(type=p4r.Update.MODIFY, entity=counter(None, 42)))
    cells = primary.read(counter(None))
    assert len(cells) == drops.size
    assert {c.counter_entry.data.packet_count for c in cells} == {42}
    primary.write(p4r.Update(type=p4r.Update.MODIFY, entity=counter(3)))
    assert primary.read(counter(3))[0].counter_entry.data.packet_count == 42
    primary.write(p4r.Update(type=p4r.Update.MODIFY, entity=counter(None, 0)))
    with pytest.raises(Refused) as past:
        primary.write(meter_config(meter.size))
    assert [c for c, _ in past.value.per_update] == [OUT_OF_RANGE]
    with pytest.raises(Refused) as inserted:
        primary.write(p4r.Update(type=p4r.Update.INSERT, entity=meter_config(0).entity))
    assert [c for c, _ in inserted.value.per_update] == [INVALID_ARGUMENT]
    meter_read = p4r.Entity(
        meter_entry=p4r.MeterEntry(meter_id=meter.preamble.id, index=p4r.Index(index=meter.size))
    )
    with pytest.raises(Refused) as read_past:
        primary.read(meter_read)
    assert read_past.value.code == grpc.StatusCode.OUT_OF_RANGE


def test_meter_profiles_go_with_their_last_cell(switch: Switch, primary: Client) -> None:
    """Each meter configuration is a DPDK meter profile, which DPDK keeps in
    a list that every add and set scans: a controller that kept changing
    rates made the switch hold every profile it ever had (32 MB more after
    100,000 configurations, 56 s to write them, against 1.6 MB and 0.7 s
    now). A profile goes when its last cell leaves it, and the cells that
    still share one keep it."""
    meter = PROGRAM.meters["punt_meter"]
    assert meter.size >= 2

    def config(i: int) -> p4r.MeterConfig:
        return p4r.MeterConfig(cir=10 + i, cburst=10, pir=20 + i, pburst=20)

    def modify(cell: int, c: p4r.MeterConfig | None) -> p4r.Update:
        entry = p4r.MeterEntry(meter_id=meter.preamble.id, index=p4r.Index(index=cell))
        if c is not None:
            entry.config.CopyFrom(c)
        return p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(meter_entry=entry))

    def read(cell: int) -> p4r.MeterConfig:
        entity = p4r.Entity(
            meter_entry=p4r.MeterEntry(meter_id=meter.preamble.id, index=p4r.Index(index=cell))
        )
        return primary.read(entity)[0].meter_entry.config

    def rss_kb() -> int:
        status = Path(f"/proc/{switch.process.pid}/status").read_text().splitlines()
        return int(next(line for line in status if line.startswith("VmRSS")).split()[1])

    # cells 0 and 1 share a profile; cell 0 moves on, cell 1 keeps it
    primary.write(modify(0, config(-5)), modify(1, config(-5)))
    primary.write(modify(0, config(-4)))
    assert read(1) == config(-5) and read(0) == config(-4)
    primary.write(modify(0, config(-5)))  # back to the shared one
    assert read(0) == config(-5)
    primary.write(modify(1, None))  # reset: no config
    assert not read(1).cir
    before = rss_kb()
    for batch in range(100):
        primary.write(*(modify(i % 2, config(batch * 1000 + i)) for i in range(1000)))
    grew = rss_kb() - before
    assert grew < 10_000, f"{grew} kB more after 100,000 meter configurations"
    assert read(0) == config(99_998) and read(1) == config(99_999)
    primary.write(modify(0, None), modify(1, None))


def stream_error(client: Client) -> p4r.StreamError:
    return client.next_of("error")


def test_stream_errors_name_the_packet_and_the_stream_goes_on(
    switch: Switch, primary: Client
) -> None:
    """A packet-out the switch cannot take comes back as a StreamError
    with the packet (P4Runtime "StreamError"); the stream stays up. A
    backup's packet-out is PERMISSION_DENIED; an arbitration naming
    another device on a live stream ends it (FAILED_PRECONDITION), and a
    second client with the primary's election id is refused
    (INVALID_ARGUMENT)."""
    ids = {m.name: m.id for m in PROGRAM.packet_out.metadata}

    def packet_out(**values: bytes) -> p4r.PacketOut:
        """A packet-out with these metadata (by name, or "id<N>")."""
        metadata = [
            p4r.PacketMetadata(metadata_id=ids.get(n) or int(n[2:]), value=v)
            for n, v in values.items()
        ]
        return p4r.PacketOut(payload=b"x" * 60, metadata=metadata)

    whole = {name: b"\x01" for name in ids}  # every field of the header
    for packet, code, why in (
        (
            packet_out(**{**whole, "id77": b"\x01"}),
            INVALID_ARGUMENT,
            "no packet-out metadata id 77",
        ),
        (packet_out(**{**whole, "egress_port": b"\x01" * 5}), OUT_OF_RANGE, "egress_port"),
        (packet_out(**{**whole, "mode": b""}), OUT_OF_RANGE, "mode"),
        (packet_out(ingress_port=b"\x01", mode=b"\x01"), INVALID_ARGUMENT, "egress_port missing"),
    ):
        primary.send(p4r.StreamMessageRequest(packet=packet))
        error = stream_error(primary)
        assert (error.canonical_code, error.packet_out.packet_out) == (code, packet), error
        assert why in error.message
    backup = Client(switch.address, PROGRAM, election_id=5)
    try:
        backup.arbitrate()
        backup.next_arbitration()
        backup.send(p4r.StreamMessageRequest(packet=packet_out(**whole)))
        assert stream_error(backup).canonical_code == PERMISSION_DENIED
        backup.arbitrate(device_id=2)
        ended = backup.next()
        assert (
            isinstance(ended, grpc.RpcError) and ended.code() == grpc.StatusCode.FAILED_PRECONDITION
        )
    finally:
        backup.close()
    twin = Client(switch.address, PROGRAM)
    try:
        twin.arbitrate()
        ended = twin.next()
        assert isinstance(ended, grpc.RpcError) and ended.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        twin.close()
    # the primary's stream is still up and it is still primary
    primary.write(update("INSERT", session(8)))
    primary.write(update("DELETE", session(8)))


def test_a_packet_out_to_a_port_with_no_device_is_a_counted_drop_and_the_switch_lives(
    switch: Switch, primary: Client
) -> None:
    """The program sends to any port 0 to 63 (pna/pipeline.p4's
    SEND_TO_PORT) and SWX's tx indexes its output ports by that number
    unchecked: a port past the last with a device killed the switch. Every
    such number is a sink now, so the packet is dropped there and counted
    (/quicknat_swx/ports' dropped.no_device); one past 63 the program drops
    (dropped.by_program). The switch (ports 1 and 2) then still sends what
    goes to port 1."""

    def counts() -> dict[str, int]:
        ports = telemetry(switch.prefix, "/quicknat_swx/ports")
        assert isinstance(ports, dict), ports
        dropped = ports.pop("dropped")
        assert set(ports) == {"0", "1", "2"}, "the CPU port and the two with a device"
        return {"1": int(ports["1"]["tx_packets"]), "2": int(ports["2"]["tx_packets"])} | {
            k: int(v) for k, v in dropped.items()
        }

    before = counts()
    for port in (3, 5, 63, 64, 100_000):
        primary.send(PROGRAM.packet_out_to(port))
    primary.send(PROGRAM.packet_out_to(1))
    deadline = time.monotonic() + WAIT_S
    while counts()["1"] == before["1"] and time.monotonic() < deadline:
        time.sleep(0.05)
    after = counts()
    assert switch.process.poll() is None, "quicknat-swx died"
    assert {k: after[k] - before[k] for k in before} == {
        "1": 1,
        "2": 0,
        "no_device": 3,
        "by_program": 2,
    }
    primary.write(update("INSERT", session(11)))
    primary.write(update("DELETE", session(11)))


def test_a_switch_with_no_program_answers_failed_precondition() -> None:
    """Read, Write and GetForwardingPipelineConfig before any pipeline,
    and a COMMIT with none saved: FAILED_PRECONDITION."""
    with running_switch() as fresh:
        client = Client(fresh.address, PROGRAM)
        try:
            client.arbitrate()
            assert client.next_arbitration().status.code == OK
            for call in (
                lambda: client.read(p4r.Entity(table_entry=p4r.TableEntry())),
                lambda: client.write(update("INSERT", session(9))),
                client.cookie,
                lambda: client.set_pipeline(action="COMMIT"),
            ):
                with pytest.raises(Refused) as refusal:
                    call()
                assert refusal.value.code == grpc.StatusCode.FAILED_PRECONDITION
        finally:
            client.close()


def test_a_switch_with_a_controller_connected_stops_on_sigterm() -> None:
    """A controller's StreamChannel is an RPC in progress until the
    controller closes it: the switch must not wait for that to stop."""
    with running_switch() as running:
        client = Client(running.address, PROGRAM)
        try:
            client.arbitrate()
            client.next_arbitration()
            started = time.monotonic()
            running.process.send_signal(signal.SIGTERM)
            ended = client.next()
            assert isinstance(ended, grpc.RpcError), ended
            assert running.process.wait(timeout=10) == 0
            assert time.monotonic() - started < 5
        finally:
            client.close()
