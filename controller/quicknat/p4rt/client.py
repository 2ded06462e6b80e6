"""An asyncio P4Runtime client (grpc.aio): one primary connection to one device.

It does only what P4Runtime defines, with no NAT knowledge: the stream channel
with primary arbitration, pipeline get/set, batched writes that report each
failed update, reads, and packet-out. Everything the switch sends on the stream
(packet-ins, idle-timeout notifications, errors) arrives on one asyncio queue
(`messages`), which the controller consumes; if that queue is full a message is
counted in `dropped`, never silently lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from finsy.proto import p4i, p4r, p4r_grpc, rpc_status

from quicknat.p4rt.wire import EncodedUpdate, write_request

log = logging.getLogger(__name__)

STREAM_QUEUE = 65536
WRITE_METHOD = "/p4.v1.P4Runtime/Write"
_CLOSE = object()
# How long close() waits for the switch to end the stream it half-closed.
CLOSE_WAIT_S = 2.0


class P4RuntimeError(Exception):
    """An RPC failed, or the switch refused us as primary."""


@dataclass(frozen=True, slots=True)
class UpdateError:
    index: int  # position of the failed update in the WriteRequest
    code: int  # google.rpc.Code
    message: str


def _write_errors(error: grpc.aio.AioRpcError, count: int) -> list[UpdateError]:
    """The per-update errors of a failed Write (P4Runtime spec 12.3): the status
    details hold one p4.v1.Error per update, OK for the ones that succeeded."""
    trailers = error.trailing_metadata() or ()
    for key, value in trailers:
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            status = rpc_status.Status.FromString(value)
            errors = []
            for index, detail in enumerate(status.details):
                item = p4r.Error()
                if detail.Unpack(item) and item.canonical_code != 0:
                    errors.append(UpdateError(index, item.canonical_code, item.message))
            return errors
    return [UpdateError(i, error.code().value[0], error.details() or "") for i in range(count)]


@dataclass(frozen=True, slots=True)
class Tls:
    """TLS to the switch: its CA, and for mutual TLS our certificate and key."""

    ca: Path
    cert: Path | None = None
    key: Path | None = None
    server_name: str | None = None  # when the address is not the certificate's name

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca.read_bytes(),
            private_key=self.key.read_bytes() if self.key else None,
            certificate_chain=self.cert.read_bytes() if self.cert else None,
        )


class P4RuntimeClient:
    def __init__(
        self, address: str, device_id: int, election_id: int = 1, tls: Tls | None = None
    ) -> None:
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.tls = tls
        self.messages: asyncio.Queue[p4r.StreamMessageResponse] = asyncio.Queue(STREAM_QUEUE)
        self.dropped = 0
        self._channel: grpc.aio.Channel | None = None
        # grpc.aio stub; finsy's stubs type it as the blocking one, so Any here.
        self._stub: Any = None
        self._requests: asyncio.Queue[object] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._arbitrated: asyncio.Future[p4r.MasterArbitrationUpdate] | None = None
        self.stream_closed = asyncio.Event()
        # Whether the switch says we are its primary controller now; set
        # again by the arbitration updates it sends when the primary changes.
        self.primary = False
        self._became_primary = asyncio.Event()

    @property
    def stub(self) -> Any:
        if self._stub is None:
            raise P4RuntimeError("not connected")
        return self._stub

    @property
    def _election(self) -> p4r.Uint128:
        return p4r.Uint128(high=self.election_id >> 64, low=self.election_id & (2**64 - 1))

    async def connect_reader(self) -> None:
        """A channel for reads only (P4Runtime reads need no arbitration), so a
        tool can look at a switch next to its primary controller."""
        await self.close()
        self._channel = self._open_channel()
        self._stub = p4r_grpc.P4RuntimeStub(self._channel)

    def _open_channel(self) -> grpc.aio.Channel:
        """Plaintext, or TLS (mutual with a certificate) when configured."""
        options: list[tuple[str, Any]] = [("grpc.max_receive_message_length", 64 * 1024 * 1024)]
        if self.tls is None:
            return grpc.aio.insecure_channel(self.address, options=options)
        if self.tls.server_name:
            options.append(("grpc.ssl_target_name_override", self.tls.server_name))
        return grpc.aio.secure_channel(self.address, self.tls.credentials(), options=options)

    async def connect(self, timeout: float = 10.0, standby: bool = False) -> None:
        """Open the stream and become primary; raises P4RuntimeError otherwise,
        or, with `standby`, stays connected as a backup when another controller
        is primary (`primary` False; wait_primary waits for its turn)."""
        await self.close()
        self.stream_closed.clear()
        self.primary = False
        self._became_primary.clear()
        self._channel = self._open_channel()
        self._stub = p4r_grpc.P4RuntimeStub(self._channel)
        self._requests = asyncio.Queue()
        loop = asyncio.get_running_loop()
        self._arbitrated = loop.create_future()
        stream = self._stub.StreamChannel(self._request_iterator())
        self._reader = asyncio.create_task(self._read_stream(stream))
        arbitration = p4r.MasterArbitrationUpdate(
            device_id=self.device_id, election_id=self._election
        )
        self._requests.put_nowait(p4r.StreamMessageRequest(arbitration=arbitration))
        try:
            reply = await asyncio.wait_for(self._arbitrated, timeout)
        except TimeoutError:
            await self.close()
            raise P4RuntimeError(f"{self.address}: no arbitration answer in {timeout} s") from None
        except grpc.aio.AioRpcError as exc:
            # one line: the error's repr is five, with the whole debug string
            await self.close()
            raise P4RuntimeError(
                f"{self.address}: {exc.code().name.lower()}: {exc.details()}"
            ) from None
        if reply.status.code == 0:
            self._set_primary(True)
        elif not standby:
            await self.close()
            raise P4RuntimeError(
                f"{self.address}: not primary for device {self.device_id}: {reply.status.message}"
            )

    def _set_primary(self, primary: bool) -> None:
        self.primary = primary
        if primary:
            self._became_primary.set()
        else:
            self._became_primary.clear()

    async def wait_primary(self) -> None:
        """A backup's wait: returns when the switch makes us primary (its
        primary went away), raises P4RuntimeError when the stream ends."""
        became = asyncio.ensure_future(self._became_primary.wait())
        closed = asyncio.ensure_future(self.stream_closed.wait())
        try:
            await asyncio.wait({became, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            became.cancel()
            closed.cancel()
        if not self.primary:
            raise P4RuntimeError(f"{self.address}: stream closed while waiting as backup")

    async def _request_iterator(self) -> AsyncIterator[p4r.StreamMessageRequest]:
        while True:
            item = await self._requests.get()
            if item is _CLOSE:
                return
            assert isinstance(item, p4r.StreamMessageRequest)
            yield item

    async def _read_stream(self, stream: grpc.aio.StreamStreamCall) -> None:  # type: ignore[type-arg]
        try:
            async for message in stream:
                if message.HasField("arbitration"):
                    if self._arbitrated is not None and not self._arbitrated.done():
                        self._arbitrated.set_result(message.arbitration)
                    else:  # the primary changed (P4Runtime spec sec. 5.2)
                        self._set_primary(message.arbitration.status.code == 0)
                    continue
                try:
                    self.messages.put_nowait(message)
                except asyncio.QueueFull:
                    self.dropped += 1
        except grpc.aio.AioRpcError as exc:
            if self._arbitrated is not None and not self._arbitrated.done():
                # a failed connection attempt: connect() raises it, and the
                # service logs one line per attempt with its backoff
                self._arbitrated.set_exception(exc)
                log.debug("P4Runtime stream to %s: %s", self.address, exc.code().name)
            else:
                log.warning("P4Runtime stream to %s ended: %s", self.address, exc.code().name)
        finally:
            self.stream_closed.set()

    async def close(self) -> None:
        if self._reader is not None:
            self._requests.put_nowait(_CLOSE)
            # The switch forgets this client when it ends the half-closed
            # stream. Until then it refuses a new client with the same
            # election id (P4Runtime sec. 5.2), so a reconnect right after
            # close() would race it: wait, bounded, for that end.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._reader), CLOSE_WAIT_S)
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
            self._stub = None

    # -- pipeline ---------------------------------------------------------------

    async def get_pipeline_cookie(self) -> int | None:
        """The cookie of the installed pipeline, or None if there is none."""
        request = p4r.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4r.GetForwardingPipelineConfigRequest.COOKIE_ONLY,
        )
        try:
            reply = await self.stub.GetForwardingPipelineConfig(request)
        except grpc.aio.AioRpcError as exc:
            if exc.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                return None
            raise P4RuntimeError(f"GetForwardingPipelineConfig: {exc.details()}") from None
        config = reply.config
        return config.cookie.cookie if config.HasField("cookie") else None

    async def set_pipeline(self, p4info: p4i.P4Info, device_config: bytes, cookie: int) -> None:
        request = p4r.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            election_id=self._election,
            action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
            config=p4r.ForwardingPipelineConfig(
                p4info=p4info,
                p4_device_config=device_config,
                cookie=p4r.ForwardingPipelineConfig.Cookie(cookie=cookie),
            ),
        )
        try:
            await self.stub.SetForwardingPipelineConfig(request)
        except grpc.aio.AioRpcError as exc:
            raise P4RuntimeError(f"SetForwardingPipelineConfig: {exc.details()}") from None

    # -- entities ---------------------------------------------------------------

    async def write(self, updates: Sequence[p4r.Update | EncodedUpdate]) -> list[UpdateError]:
        """One WriteRequest; returns the updates that failed (empty: all
        applied). Updates are messages, or already encoded (p4rt/wire.py: the
        per-flow entries); the request goes as bytes, serialized once."""
        if not updates:
            return []
        header = p4r.WriteRequest(
            device_id=self.device_id,
            election_id=self._election,
            atomicity=p4r.WriteRequest.CONTINUE_ON_ERROR,
        )
        if self._channel is None:
            raise P4RuntimeError("not connected")
        # Write with no serializer: the request goes as the bytes built here
        write: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = self._channel.unary_unary(
            WRITE_METHOD
        )
        try:
            await write(write_request(header.SerializeToString(), updates))
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.UNAVAILABLE:
                raise P4RuntimeError(f"Write: switch unavailable: {exc.details()}") from None
            return _write_errors(exc, len(updates))
        return []

    async def read(self, entities: Sequence[p4r.Entity]) -> list[p4r.Entity]:
        request = p4r.ReadRequest(device_id=self.device_id, entities=entities)
        result: list[p4r.Entity] = []
        try:
            async for reply in self.stub.Read(request):
                result.extend(reply.entities)
        except grpc.aio.AioRpcError as exc:
            raise P4RuntimeError(f"Read: {exc.details()}") from None
        return result

    def requests_queued(self) -> int:
        """Stream messages (packet-outs) queued and not yet handed to gRPC."""
        return self._requests.qsize()

    def packet_out(self, payload: bytes, metadata: Sequence[p4r.PacketMetadata]) -> None:
        """Queue a packet-out on the stream (ordered with other stream requests)."""
        packet = p4r.PacketOut(payload=payload, metadata=metadata)
        self._requests.put_nowait(p4r.StreamMessageRequest(packet=packet))
