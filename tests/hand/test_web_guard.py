"""The web tools' address guard: which addresses it refuses and why, what the allow list lets
through, and that a host is refused when any of its addresses is."""

from __future__ import annotations

import ipaddress

import pytest

from hand.web.guard import AddressGuard, AddressRefused, refusal

REFUSED = {
    "127.0.0.1": "loopback",
    "127.9.9.9": "loopback",
    "10.0.0.1": "private",
    "172.16.5.4": "private",
    "192.168.1.1": "private",
    "169.254.169.254": "link-local (the cloud metadata service)",
    "169.254.1.1": "link-local",
    "0.0.0.0": "unspecified",
    "224.0.0.251": "multicast",
    "240.0.0.1": "private",
    "100.64.0.1": "not globally routable",
    "::1": "loopback",
    "::": "unspecified",
    "fe80::1": "link-local",
    "fd12:3456::1": "private",
    "ff02::1": "multicast",
    "::ffff:127.0.0.1": "loopback (127.0.0.1 inside an IPv6 address)",
    "::ffff:10.1.1.1": "private (10.1.1.1 inside an IPv6 address)",
    "::ffff:169.254.169.254": (
        "link-local (the cloud metadata service) (169.254.169.254 inside an IPv6 address)"
    ),
    "2002:c0a8:0101::1": "private (192.168.1.1 inside an IPv6 address)",
    "64:ff9b::a00:1": "private (10.0.0.1 inside an IPv6 address)",
}


@pytest.mark.parametrize(("address", "reason"), sorted(REFUSED.items()))
def test_the_guard_names_why_it_refuses_an_address(address: str, reason: str) -> None:
    assert refusal(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("address", ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


def test_the_allow_list_lets_hosts_and_networks_through_and_nothing_else() -> None:
    guard = AddressGuard.from_allow_list(["nas.home", "*.lan.example", "10.1.0.0/16", "::1"])
    guard.check("nas.home", ipaddress.ip_address("192.168.1.20"))
    guard.check("NAS.home.", ipaddress.ip_address("192.168.1.20"))
    guard.check("printer.lan.example", ipaddress.ip_address("192.168.1.30"))
    guard.check("anything", ipaddress.ip_address("10.1.200.3"))
    guard.check("::ffff:10.1.0.9", ipaddress.ip_address("::ffff:10.1.0.9"))
    guard.check("::1", ipaddress.ip_address("::1"))
    for host, address in [
        ("nas.home.evil", "192.168.1.20"),
        ("lan.example", "192.168.1.30"),
        ("anything", "10.2.0.1"),
        ("localhost", "127.0.0.1"),
    ]:
        with pytest.raises(AddressRefused, match="hand.web.allow"):
            guard.check(host, ipaddress.ip_address(address))


async def test_a_host_with_one_refused_address_among_public_ones_is_refused() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "10.0.0.7"]

    guard = AddressGuard.from_allow_list([], resolver)
    with pytest.raises(AddressRefused, match=r"refused mixed\.example \(10\.0\.0\.7\): .*private"):
        await guard.vet("mixed.example", 80)


async def test_an_address_literal_is_judged_without_resolving() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        raise AssertionError("an address literal must not be resolved")

    guard = AddressGuard.from_allow_list([], resolver)
    assert await guard.vet("93.184.216.34", 80) == ["93.184.216.34"]
    with pytest.raises(AddressRefused, match="loopback"):
        await guard.vet("[::1]", 80)
