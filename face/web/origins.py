"""Which pages may use the web API: the origin check against cross-site requests.

A browser sends `Origin` with every WebSocket handshake and every POST a script makes. A page
of another site must not drive a signed-in user's session (the cookie goes along with its
requests), so such requests are refused unless the origin is the request's own (the scheme
and the `Host` it was sent to) or one `face.web.origins` names (a reverse proxy's public
address). A request without `Origin` comes from no browser page and carries no ambient risk.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.datastructures import Headers


def own_origin(scheme: str, headers: Headers) -> str:
    """`http(s)://host[:port]` of a request as its `Host` header names it."""
    web_scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
    return f"{web_scheme}://{headers.get('host', '')}".lower()


def origin_allowed(scheme: str, headers: Headers, allowed: Iterable[str]) -> bool:
    origin = headers.get("origin")
    if origin is None:
        return True
    origin = origin.strip().lower().rstrip("/")
    if origin == own_origin(scheme, headers):
        return True
    return origin in {entry.strip().lower().rstrip("/") for entry in allowed}
