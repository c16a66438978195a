"""An httpx transport that dials only the addresses the guard vetted for one host.

httpx would resolve the host again when it connects, and a rebinding DNS server could then
answer with another address than the one checked. Here the connection goes to the vetted
addresses (each in turn until one answers) while the request keeps the host name: the Host
header, TLS SNI and certificate verification are all for the name, as usual.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterable

import httpcore
import httpx


@functools.cache
def _tls() -> ssl.SSLContext:
    """The system's trusted roots, loaded once (a fifth of a second each time otherwise)."""
    return ssl.create_default_context()


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects `host` to its vetted `addresses`, and nothing else anywhere."""

    def __init__(self, host: str, addresses: list[str]) -> None:
        self._host = host.strip("[]").lower()
        self._addresses = addresses
        self._network = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if host.strip("[]").lower() != self._host:
            raise httpcore.ConnectError(f"{host} was not vetted for this request")
        failure: Exception = httpcore.ConnectError(f"no address for {host}")
        for address in self._addresses:
            try:
                return await self._network.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("the web tools never dial a Unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._network.sleep(seconds)


def _translated(exc: Exception, request: httpx.Request) -> httpx.TransportError:
    if isinstance(exc, httpcore.TimeoutException):
        return httpx.TimeoutException(str(exc) or type(exc).__name__, request=request)
    return httpx.TransportError(str(exc) or type(exc).__name__)


class _Body(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes], request: httpx.Request) -> None:
        self._stream = stream
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._stream:
                yield chunk
        except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError) as exc:
            raise _translated(exc, self._request) from None

    async def aclose(self) -> None:
        closer = getattr(self._stream, "aclose", None)
        if closer is not None:
            await closer()


class PinnedTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 to one host over its vetted addresses; no proxies, no environment."""

    def __init__(self, host: str, addresses: list[str]) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=_tls(),
            network_backend=PinnedBackend(host, addresses),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            response = await self._pool.handle_async_request(core_request)
        except (
            httpcore.TimeoutException,
            httpcore.NetworkError,
            httpcore.ProtocolError,
            httpcore.UnsupportedProtocol,
        ) as exc:
            raise _translated(exc, request) from None
        assert isinstance(response.stream, AsyncIterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response.stream, request),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()
