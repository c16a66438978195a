"""Whether Face's web client answers: `GET /healthz`, which says `ok` without signing in, or
503 `not serving: <why>` while the Face cannot serve (its Mind unreachable, its credential
refused).

The web client speaks HTTP, not gRPC, so `tobe health --all` asks it this way instead of with
the gRPC health protocol. Over TLS the server is verified against the CA it published (else
the system's roots), as a browser would. `httpx` is loaded by the check itself: the Face,
which only shares this module's answers, never needs it.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

from tobe.runtime.tls import ClientTls
from tobe.runtime.web_url import web_base_url

HEALTH_PATH = "healthz"
SERVING = "SERVING"
NOT_SERVING = "NOT_SERVING"
UNREACHABLE = "UNREACHABLE"
# How `/healthz` begins its answer while the Face cannot serve; the reason follows.
NOT_SERVING_PREFIX = "not serving: "

if TYPE_CHECKING:
    import httpx


async def check_web(address: str, timeout: float, tls: ClientTls | None) -> tuple[str, str]:
    """(status, why) of the web client at `address` (`host:port`): SERVING when `/healthz`
    answers 200 `ok`, NOT_SERVING with the Face's reason (else the HTTP status) otherwise,
    UNREACHABLE with the reason when no answer came."""
    import httpx

    url = web_base_url(address, tls=tls is not None) + HEALTH_PATH
    verify: ssl.SSLContext | bool = True
    if tls is not None and tls.root_certificates is not None:
        verify = ssl.create_default_context(cadata=tls.root_certificates.decode())
    try:
        async with httpx.AsyncClient(verify=verify, timeout=timeout) as client:
            response = await client.get(url)
    except httpx.HTTPError as exc:
        return UNREACHABLE, _reason(exc)
    text = response.text.strip()
    if response.status_code == httpx.codes.OK and text == "ok":
        return SERVING, ""
    if text.startswith(NOT_SERVING_PREFIX):
        return NOT_SERVING, text.removeprefix(NOT_SERVING_PREFIX)
    return NOT_SERVING, f"GET /{HEALTH_PATH}: HTTP {response.status_code}"


def _reason(error: httpx.HTTPError) -> str:
    """The kind of failure and its text, e.g. `ConnectError: [Errno 111] Connection refused`."""
    text = str(error) or "no answer"
    return f"{type(error).__name__}: {text}"
