"""A P4Runtime session as a client nobody here wrote opens one: p4lang's
protos (as finsy ships them) over grpcio, nothing of the controller's
encoding in between, every wait bounded. For tests that send a switch what
the controller never would (test_p4runtime_conformance.py)."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from finsy.proto import p4i, p4r, p4r_grpc, rpc_status
from google.protobuf import text_format

DEVICE = 1
ELECTION = 10
WAIT_S = 5


def controller_header(p4info: p4i.P4Info, name: str) -> p4i.ControllerPacketMetadata:
    """The controller header `name` ("packet_in", "packet_out") of a P4Info."""
    return next(c for c in p4info.controller_packet_metadata if c.preamble.name == name)


class Program:
    """The PNA build's P4Info, looked up by short names."""

    def __init__(self, p4info: Path) -> None:
        self.p4info = p4i.P4Info()
        text_format.Parse(p4info.read_text(), self.p4info)
        self.tables = {t.preamble.name.rsplit(".", 1)[-1]: t for t in self.p4info.tables}
        self.actions = {a.preamble.name.rsplit(".", 1)[-1]: a for a in self.p4info.actions}
        self.counters = {c.preamble.name.rsplit(".", 1)[-1]: c for c in self.p4info.counters}
        self.meters = {m.preamble.name.rsplit(".", 1)[-1]: m for m in self.p4info.meters}
        self.packet_out = controller_header(self.p4info, "packet_out")

    def table_id(self, table: str) -> int:
        return int(self.tables[table].preamble.id)

    def field_id(self, table: str, field: str) -> int:
        return next(int(m.id) for m in self.tables[table].match_fields if m.name == field)

    def packet_out_to(self, port: int) -> p4r.StreamMessageRequest:
        """A 60-byte packet-out sent straight to `port` (mode 0: the program
        forwards it as it is)."""
        ids = {m.name: m.id for m in self.packet_out.metadata}
        values = {"egress_port": port.to_bytes(4, "big"), "ingress_port": b"\x00", "mode": b"\x00"}
        metadata = [p4r.PacketMetadata(metadata_id=ids[n], value=v) for n, v in values.items()]
        return p4r.StreamMessageRequest(packet=p4r.PacketOut(payload=bytes(60), metadata=metadata))

    def action(self, name: str, **params: bytes) -> p4r.Action:
        a = self.actions[name]
        ids = {p.name: p.id for p in a.params}
        return p4r.Action(
            action_id=a.preamble.id,
            params=[p4r.Action.Param(param_id=ids[n], value=v) for n, v in params.items()],
        )


@dataclass
class Refused(Exception):
    code: grpc.StatusCode
    message: str
    per_update: list[tuple[int, str]]
    """(google.rpc code, message) of each update, when the switch gave them."""


class Client:
    """One P4Runtime session: a StreamChannel (its responses queued by a
    thread) and unary calls on the same channel, every wait bounded."""

    def __init__(self, address: str, program: Program, election_id: int | None = ELECTION) -> None:
        self.program = program
        self.channel = grpc.insecure_channel(address)
        grpc.channel_ready_future(self.channel).result(timeout=WAIT_S)
        self.stub = p4r_grpc.P4RuntimeStub(self.channel)
        self.election_id = election_id
        self._requests: queue.Queue[p4r.StreamMessageRequest | None] = queue.Queue()
        self.responses: queue.Queue[p4r.StreamMessageResponse | grpc.RpcError] = queue.Queue()
        self._stream = self.stub.StreamChannel(iter(self._requests.get, None))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for response in self._stream:
                self.responses.put(response)
        except grpc.RpcError as e:
            self.responses.put(e)

    def send(self, message: p4r.StreamMessageRequest) -> None:
        self._requests.put(message)

    def arbitrate(self, device_id: int = DEVICE, election_id: int | None = None) -> None:
        eid = self.election_id if election_id is None else election_id
        self.send(
            p4r.StreamMessageRequest(
                arbitration=p4r.MasterArbitrationUpdate(
                    device_id=device_id, election_id=p4r.Uint128(high=0, low=eid)
                )
            )
        )

    def next(self) -> p4r.StreamMessageResponse | grpc.RpcError:
        return self.responses.get(timeout=WAIT_S)

    def next_of(self, kind: str) -> object:
        """The next message of `kind` ("arbitration", "error", ...): others
        (a primary is told of each backup that arbitrates) are skipped."""
        deadline = time.monotonic() + WAIT_S
        while True:
            got = self.responses.get(timeout=max(0.0, deadline - time.monotonic()))
            if isinstance(got, grpc.RpcError):
                raise got
            if got.HasField(kind):
                return getattr(got, kind)

    def next_arbitration(self) -> p4r.MasterArbitrationUpdate:
        return self.next_of("arbitration")

    def write(self, *updates: p4r.Update, **fields: object) -> None:
        request = p4r.WriteRequest(device_id=DEVICE, updates=list(updates))
        if self.election_id is not None:
            request.election_id.low = self.election_id
        for name, value in fields.items():
            setattr(request, name, value)
        try:
            self.stub.Write(request, timeout=WAIT_S)
        except grpc.RpcError as e:
            raise refused(e) from None

    def read(self, *entities: p4r.Entity, device_id: int = DEVICE) -> list[p4r.Entity]:
        request = p4r.ReadRequest(device_id=device_id, entities=list(entities))
        try:
            return [e for r in self.stub.Read(request, timeout=WAIT_S) for e in r.entities]
        except grpc.RpcError as e:
            raise refused(e) from None

    def table(self, name: str) -> list[p4r.TableEntry]:
        entity = p4r.Entity(table_entry=p4r.TableEntry(table_id=self.program.table_id(name)))
        return [e.table_entry for e in self.read(entity)]

    def set_pipeline(
        self,
        device_config: bytes = b"",
        p4info: p4i.P4Info | None = None,
        action: str = "VERIFY_AND_COMMIT",
        cookie: int | None = None,
    ) -> None:
        """SetForwardingPipelineConfig: `device_config` with the program's
        P4Info (or `p4info`), its cookie its length unless given; COMMIT
        sends no config."""
        Req = p4r.SetForwardingPipelineConfigRequest
        request = Req(device_id=DEVICE, action=Req.Action.Value(action))
        if action != "COMMIT":
            request.config.CopyFrom(
                p4r.ForwardingPipelineConfig(
                    p4info=p4info or self.program.p4info,
                    p4_device_config=device_config,
                    cookie=p4r.ForwardingPipelineConfig.Cookie(
                        cookie=len(device_config) if cookie is None else cookie
                    ),
                )
            )
        request.election_id.low = self.election_id or 0
        try:
            self.stub.SetForwardingPipelineConfig(request, timeout=60)
        except grpc.RpcError as e:
            raise refused(e) from None

    def cookie(self) -> int:
        Req = p4r.GetForwardingPipelineConfigRequest
        request = Req(device_id=DEVICE, response_type=Req.COOKIE_ONLY)
        try:
            return int(
                self.stub.GetForwardingPipelineConfig(request, timeout=WAIT_S).config.cookie.cookie
            )
        except grpc.RpcError as e:
            raise refused(e) from None

    def close(self) -> None:
        self._requests.put(None)
        self._stream.cancel()
        self._reader.join(timeout=WAIT_S)
        self.channel.close()


def refused(e: grpc.RpcError) -> Refused:
    details = rpc_status.Status()
    for key, value in e.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            details.ParseFromString(value)
    per_update = []
    for any_ in details.details:
        error = p4r.Error()
        any_.Unpack(error)
        per_update.append((error.canonical_code, error.message))
    return Refused(e.code(), e.details() or "", per_update)
