"""The address guard of the web tools: which hosts a fetch or the browser may reach.

A URL's host is resolved once; every address it resolves to must be public, else the request
is refused, naming the address and why (loopback, private, link-local, unspecified, multicast,
reserved, or not globally routable; IPv6 forms that carry an IPv4 address, mapped, 6to4 or
NAT64, are judged by that address). The operator lets some through with an allow list of host
names (exact, or `*.example.org` for its subdomains) and addresses or CIDRs. The addresses
vetted here are the ones the connection then dials (`hand.web.pinned`): a second resolution,
which a DNS rebinding attack would answer differently, never happens.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from hand._tools import ToolError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# Resolves a host name and port to the addresses it names (as text).
Resolver = Callable[[str, int], Awaitable[list[str]]]

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class AddressRefused(ToolError):
    """The guard refused a URL: its host is, or resolves to, an address it may not reach."""


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses the system resolver gives for `host`, in its order, each once."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ToolError(f"cannot resolve {host}: {exc.strerror}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal(address: IPAddress) -> str | None:
    """Why the guard refuses `address` (None: it is public)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            reason = refusal(embedded)
            return f"{reason} ({embedded} inside an IPv6 address)" if reason else None
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        metadata = address == ipaddress.IPv4Address("169.254.169.254")
        return "link-local (the cloud metadata service)" if metadata else "link-local"
    if address.is_multicast:
        return "multicast"
    if address.is_private:
        return "private"
    if address.is_reserved:
        return "reserved"
    if not address.is_global:
        return "not globally routable"
    return None


@dataclass(frozen=True)
class AddressGuard:
    """Vets the host of each request; `allowed_hosts` and `allowed_networks` pass anyway."""

    allowed_hosts: frozenset[str] = frozenset()
    allowed_networks: tuple[Network, ...] = ()
    resolver: Resolver = system_resolver

    @classmethod
    def from_allow_list(
        cls, entries: Iterable[str], resolver: Resolver = system_resolver
    ) -> AddressGuard:
        """Entries are host names (`*.example.org` for its subdomains) or addresses/CIDRs."""
        hosts: set[str] = set()
        networks: list[Network] = []
        for entry in entries:
            text = entry.strip()
            if not text:
                continue
            try:
                networks.append(ipaddress.ip_network(text.strip("[]"), strict=False))
            except ValueError:
                hosts.add(text.lower().rstrip("."))
        return cls(frozenset(hosts), tuple(networks), resolver)

    def _host_allowed(self, host: str) -> bool:
        name = host.lower().rstrip(".")
        if name in self.allowed_hosts:
            return True
        return any(
            pattern.startswith("*.") and name.endswith(pattern[1:])
            for pattern in self.allowed_hosts
        )

    def _address_allowed(self, address: IPAddress) -> bool:
        candidates: list[IPAddress] = [address]
        if isinstance(address, ipaddress.IPv6Address):
            embedded = _embedded_ipv4(address)
            if embedded is not None:
                candidates.append(embedded)
        return any(
            candidate in network
            for candidate in candidates
            for network in self.allowed_networks
            if candidate.version == network.version
        )

    def check(self, host: str, address: IPAddress) -> None:
        """Refuse `address` (which `host` named) unless it is public or allowed."""
        if self._host_allowed(host) or self._address_allowed(address):
            return
        reason = refusal(address)
        if reason is not None:
            shown = host if host == str(address) else f"{host} ({address})"
            raise AddressRefused(
                f"refused {shown}: the address is {reason}; an operator may allow it in "
                "hand.web.allow"
            )

    async def vet(self, host: str, port: int) -> list[str]:
        """The addresses of `host` to dial, each checked; refused if any one is refused."""
        literal = _literal(host)
        if literal is not None:
            self.check(host, literal)
            return [str(literal)]
        addresses = await self.resolver(host, port)
        if not addresses:
            raise ToolError(f"cannot resolve {host}: no addresses")
        for text in addresses:
            self.check(host, ipaddress.ip_address(text.split("%")[0]))
        return addresses


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
