"""Who a request really comes from: the socket's peer, or what a trusted proxy says it relays.

`X-Forwarded-For` and `Forwarded` are plain request headers anyone can send, so they count only
when the socket's peer is one of `face.web.trusted_proxies` (addresses or CIDR networks). Then
the client is the right-most address of the chain (the hops the headers list, then the peer)
that is not a trusted proxy: each proxy appends the address it saw, so everything left of the
last trusted hop is only what the client claimed. A trusted proxy's `proto` (`Forwarded`) or
`X-Forwarded-Proto` becomes the request's scheme, so a proxy ending TLS keeps the page's own
origin `https://…`. The middleware rewrites the ASGI scope's `client` and `scheme` before any
route sees them, so rate limits, origin checks and log lines all see the same client.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
SCHEMES = {"http", "https"}


def parse_networks(entries: Iterable[str]) -> list[Network]:
    """`entries` (addresses or CIDR networks, as the settings checked them) as networks."""
    return [ipaddress.ip_network(entry, strict=False) for entry in entries]


def host_of(hop: str) -> str:
    """The address in one hop of a chain, without quotes, brackets or port."""
    hop = hop.strip().strip('"')
    if hop.startswith("["):
        return hop[1:].split("]", 1)[0]
    if hop.count(":") == 1:  # IPv4 with a port; a bare IPv6 address has several colons
        return hop.split(":", 1)[0]
    return hop


def _parse(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _forwarded_pairs(headers: Headers) -> list[dict[str, str]]:
    """Each element of the `Forwarded` headers (RFC 7239) as its lowercased parameters."""
    elements: list[dict[str, str]] = []
    for header in headers.getlist("forwarded"):
        for element in header.split(","):
            pairs: dict[str, str] = {}
            for pair in element.split(";"):
                name, _, value = pair.partition("=")
                pairs[name.strip().lower()] = value.strip().strip('"')
            elements.append(pairs)
    return elements


def forwarded_chain(headers: Headers) -> list[str]:
    """The client addresses the proxy headers list, left (first) to right (last hop):
    `Forwarded`'s `for=` when it has any, else `X-Forwarded-For`."""
    forwarded = [host_of(pairs["for"]) for pairs in _forwarded_pairs(headers) if "for" in pairs]
    if forwarded:
        return forwarded
    return [
        host_of(hop)
        for header in headers.getlist("x-forwarded-for")
        for hop in header.split(",")
        if hop.strip()
    ]


def forwarded_proto(headers: Headers) -> str:
    """The scheme the last proxy was reached with, if it says ("" otherwise)."""
    forwarded = _forwarded_pairs(headers)
    if forwarded:
        return forwarded[-1].get("proto", "").lower()
    protos = [p.strip().lower() for h in headers.getlist("x-forwarded-proto") for p in h.split(",")]
    return protos[-1] if protos else ""


class TrustedProxies:
    """Whether an address is one of the configured proxies, and the client behind them."""

    def __init__(self, networks: Iterable[Network]) -> None:
        self._networks = list(networks)

    def trusts(self, host: str) -> bool:
        address = _parse(host)
        return address is not None and any(address in net for net in self._networks)

    def client(self, peer: str, headers: Headers) -> str:
        """The client address of a request the socket's `peer` sent."""
        if not self.trusts(peer):
            return peer
        chain = forwarded_chain(headers)
        for hop in reversed(chain):
            if not self.trusts(hop):
                return hop
        # Every hop is a trusted proxy: the left-most is as close to the client as known.
        return chain[0] if chain else peer


class ProxyHeaders:
    """ASGI middleware: the scope's `client` and `scheme` as the trusted proxies relay them."""

    def __init__(self, app: ASGIApp, *, proxies: TrustedProxies) -> None:
        self._app = app
        self._proxies = proxies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        if scope["type"] in ("http", "websocket") and client and self._proxies.trusts(client[0]):
            headers = Headers(scope=scope)
            host = self._proxies.client(client[0], headers)
            scope["client"] = (host, 0 if host != client[0] else client[1])
            proto = forwarded_proto(headers)
            if proto in SCHEMES:
                scope["scheme"] = proto if scope["type"] == "http" else proto.replace("http", "ws")
        await self._app(scope, receive, send)
