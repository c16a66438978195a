"""Which client a request comes from behind `face.web.trusted_proxies`: the right-most hop of
the `Forwarded`/`X-Forwarded-For` chain that is not a trusted proxy, and only when the socket's
peer is one."""

from __future__ import annotations

from starlette.datastructures import Headers

from face.web.proxies import TrustedProxies, forwarded_proto, parse_networks

PROXIES = TrustedProxies(parse_networks(["10.0.0.0/8", "192.0.2.1", "2001:db8::/32"]))


def test_headers_from_an_untrusted_peer_are_ignored() -> None:
    headers = Headers({"x-forwarded-for": "203.0.113.9", "forwarded": "for=203.0.113.8"})
    assert PROXIES.client("198.51.100.4", headers) == "198.51.100.4"


def test_the_right_most_untrusted_hop_is_the_client() -> None:
    chain = Headers({"x-forwarded-for": "1.2.3.4, 203.0.113.9, 10.1.2.3"})
    assert PROXIES.client("192.0.2.1", chain) == "203.0.113.9"


def test_forwarded_wins_over_x_forwarded_for_and_keeps_no_port_or_brackets() -> None:
    headers = Headers(
        {
            "forwarded": 'for="[2001:db9::5]:4711";proto=https, for=10.0.0.7',
            "x-forwarded-for": "203.0.113.1",
        }
    )
    assert PROXIES.client("10.9.9.9", headers) == "2001:db9::5"
    assert forwarded_proto(headers) == ""  # the last hop said no proto
    assert PROXIES.client("10.9.9.9", Headers({"x-forwarded-for": "203.0.113.1:5555"})) == (
        "203.0.113.1"
    )


def test_a_chain_of_trusted_proxies_only_names_its_left_most_hop() -> None:
    headers = Headers({"x-forwarded-for": "10.0.0.2, 10.0.0.3"})
    assert PROXIES.client("10.0.0.4", headers) == "10.0.0.2"
    assert PROXIES.client("10.0.0.4", Headers({})) == "10.0.0.4"


def test_the_last_proxys_scheme_is_taken() -> None:
    assert forwarded_proto(Headers({"x-forwarded-proto": "http, https"})) == "https"
    assert forwarded_proto(Headers({"forwarded": "for=1.2.3.4;proto=HTTPS"})) == "https"


def test_a_forwarded_header_naming_no_client_leaves_x_forwarded_for_in_charge() -> None:
    headers = Headers({"forwarded": "proto=https", "x-forwarded-for": "203.0.113.7"})
    assert PROXIES.client("10.0.0.1", headers) == "203.0.113.7"
    assert forwarded_proto(headers) == "https"
