"""Client channels with keepalive, the bearer-token call credential, and the service client
core that every process's client of another process is built on."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Generic, TypeVar

import grpc
from google.protobuf.message import Message

from tobe.runtime.server import DEFAULT_MAX_MESSAGE_BYTES
from tobe.runtime.tls import ClientTls, split_target
from tobe.telemetry.grpc_context import client_interceptors

KEEPALIVE_OPTIONS = [
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    # gRPC's own reconnect backoff follows the platform policy: 1 s doubling to 30 s.
    ("grpc.initial_reconnect_backoff_ms", 1_000),
    ("grpc.min_reconnect_backoff_ms", 1_000),
    ("grpc.max_reconnect_backoff_ms", 30_000),
    ("grpc.max_receive_message_length", DEFAULT_MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", DEFAULT_MAX_MESSAGE_BYTES),
]


def bearer_metadata(token: str) -> tuple[tuple[str, str], ...]:
    """Call metadata that authenticates with a credential secret."""
    return (("authorization", f"Bearer {token}"),)


def open_channel(
    target: str,
    *,
    tls: ClientTls | None = None,
    extra_options: list[tuple[str, int | str]] | None = None,
) -> grpc.aio.Channel:
    """An aio channel with keepalive: TLS with `tls`, or for a `tls://host:port` target (then
    trusting the system roots); plaintext otherwise (loopback, Unix socket, private network).

    `target` is `host:port`, `tls://host:port` or `unix:/path`. `extra_options` replace the
    defaults of the same name.
    """
    address, asked = split_target(target)
    extra = extra_options or []
    overridden = {name for name, _ in extra}
    options = [option for option in KEEPALIVE_OPTIONS if option[0] not in overridden] + extra
    if tls is None and asked:
        tls = ClientTls()
    interceptors = client_interceptors()  # the trace context, while tracing is on
    if tls is None:
        return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)
    return grpc.aio.secure_channel(
        address, tls.credentials(), options=options, interceptors=interceptors
    )


def unix_target(path: str) -> str:
    return f"unix:{path}"


Stub = TypeVar("Stub")
Request = TypeVar("Request", bound=Message)
Response = TypeVar("Response", bound=Message)


class ServiceClient(Generic[Stub]):
    """One service's stub with a credential; a failed unary call raises what `error` makes of it.

    The channel opens on first use: an aio channel belongs to the loop it was made on, and a
    client is built before its loop runs.
    """

    def __init__(
        self,
        address: str,
        token: str,
        stub: Callable[[grpc.aio.Channel], Stub],
        error: Callable[[grpc.aio.AioRpcError], Exception],
        *,
        timeout: float,
        tls: ClientTls | None = None,
        max_send_bytes: int | None = None,
        max_receive_bytes: int | None = None,
    ) -> None:
        self.address = address
        self._tls = tls
        # Larger than the platform default where a caller forwards big requests (Face: images)
        # or fetches big replies (the Mind: observation images from Awareness).
        self._options: list[tuple[str, int | str]] = [
            (name, size)
            for name, size in (
                ("grpc.max_send_message_length", max_send_bytes),
                ("grpc.max_receive_message_length", max_receive_bytes),
            )
            if size
        ]
        self.metadata = bearer_metadata(token)
        self._make_stub = stub
        self._error = error
        self._timeout = timeout
        self._channel: grpc.aio.Channel | None = None
        self._stub: Stub | None = None

    @property
    def stub(self) -> Stub:
        if self._stub is None:
            self._channel = open_channel(self.address, tls=self._tls, extra_options=self._options)
            self._stub = self._make_stub(self._channel)
        return self._stub

    async def ready(self, patience: float) -> Stub:
        """The stub, once the channel is ready or `patience` seconds have passed."""
        stub = self.stub
        assert self._channel is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._channel.channel_ready(), patience)
        return stub

    async def unary(
        self,
        method: grpc.aio.UnaryUnaryMultiCallable[Request, Response],
        request: Request,
        *,
        timeout: float | None = None,
    ) -> Response:
        """The reply of one unary call made with the credential, within `timeout` seconds (the
        client's own when None: a call that is slow by nature names its own)."""
        try:
            return await method(request, metadata=self.metadata, timeout=timeout or self._timeout)
        except grpc.aio.AioRpcError as exc:
            raise self._error(exc) from exc

    async def connects(self, patience: float) -> bool:
        """Whether the channel is connected within `patience` seconds."""
        _ = self.stub  # opens the channel
        assert self._channel is not None
        try:
            await asyncio.wait_for(self._channel.channel_ready(), patience)
        except TimeoutError:
            return False
        return True

    def connected(self) -> bool:
        """Whether the channel is connected now (a call that failed on it was answered)."""
        if self._channel is None:
            return False
        return self._channel.get_state() is grpc.ChannelConnectivity.READY

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel, self._stub = None, None
