"""The pairing rate limit of a real Face web server over HTTP keys on who really sends: the
socket's peer, whatever `X-Forwarded-For`/`Forwarded` it claims, unless that peer is one of
`face.web.trusted_proxies`; then the client the proxy names is limited, not the proxy, and the
scheme it was reached with (`X-Forwarded-Proto`) is the page's."""

from __future__ import annotations

import httpx
import pytest
from helpers.face_process import running_face
from helpers.mind_process import MindProcess

pytestmark = pytest.mark.e2e

WRONG = {"code": "AAAAA-AAAAA"}


async def _attempt(http: httpx.AsyncClient, headers: dict[str, str]) -> int:
    return (await http.post("/api/pair", json=WRONG, headers=headers)).status_code


async def test_a_fresh_forwarded_header_per_attempt_does_not_escape_the_limit(
    mind: MindProcess,
) -> None:
    with running_face(mind, web__pair_attempts_per_minute="3") as face:
        async with httpx.AsyncClient(base_url=f"http://{face.web_address}") as http:
            statuses = [
                await _attempt(http, {"X-Forwarded-For": f"203.0.113.{n}"}) for n in range(3)
            ]
            assert statuses == [410, 410, 410]
            assert await _attempt(http, {"X-Forwarded-For": "198.51.100.7"}) == 429
            assert await _attempt(http, {"Forwarded": "for=198.51.100.8"}) == 429
            assert await _attempt(http, {}) == 429
            # Nor does anyone but a trusted proxy say the page was reached over HTTPS.
            forged_https = {"X-Forwarded-Proto": "https", "Origin": f"https://{face.web_address}"}
            assert await _attempt(http, forged_https) == 403


async def test_behind_a_trusted_proxy_the_forwarded_client_is_what_is_limited(
    mind: MindProcess,
) -> None:
    with running_face(
        mind, web__pair_attempts_per_minute="2", web__trusted_proxies='["127.0.0.0/8"]'
    ) as face:
        async with httpx.AsyncClient(base_url=f"http://{face.web_address}") as http:
            # The client forged the left entry; the proxy appended the address it saw.
            forged = {"X-Forwarded-For": "10.9.9.9, 203.0.113.5"}
            assert [await _attempt(http, forged) for _ in range(2)] == [410, 410]
            assert await _attempt(http, {"X-Forwarded-For": "203.0.113.5"}) == 429
            assert await _attempt(http, {"Forwarded": 'for="203.0.113.5:4711"'}) == 429
            # Another client behind the same proxy, and the proxy itself, still may try.
            assert await _attempt(http, {"X-Forwarded-For": "10.9.9.9, 203.0.113.6"}) == 410
            assert await _attempt(http, {"Forwarded": 'for="[2001:db8::1]"'}) == 410
            assert await _attempt(http, {}) == 410
            # The proxy ended TLS: the page's own origin is its https:// one.
            behind_tls = {"X-Forwarded-Proto": "https", "Origin": f"https://{face.web_address}"}
            assert await _attempt(http, behind_tls) == 410
