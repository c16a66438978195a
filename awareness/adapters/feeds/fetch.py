"""Fetching one feed over HTTP with our own timeouts, redirects, auth and conditional requests.

feedparser can fetch by itself, but only through blocking urllib; here httpx reads the bytes
on the event loop and feedparser only parses them (`parse.py`). Both are loaded by the first
poll: an Awareness with no feed to read never loads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

# A feed is a few hundred kilobytes at most; anything far larger is not one worth reading.
MAX_FEED_BYTES = 10 * 1024 * 1024
USER_AGENT = "ToBe-feeds/1 (RSS/Atom reader)"


class FeedError(Exception):
    """Why one feed could not be read: shown in that feed's status, never fatal to the others."""


@dataclass(frozen=True)
class Validators:
    """What the server told us to send back so it can answer 304 Not Modified."""

    etag: str = ""
    last_modified: str = ""


@dataclass(frozen=True)
class Request:
    url: str
    headers: dict[str, str]
    auth: httpx.BasicAuth | None


@dataclass(frozen=True)
class Document:
    body: bytes
    # The response headers feedparser reads: the charset, the language and, as
    # `content-location`, the final URL that relative links are resolved against.
    headers: dict[str, str]
    validators: Validators


def new_client(timeout: float) -> httpx.AsyncClient:
    import httpx

    return httpx.AsyncClient(
        timeout=timeout, follow_redirects=True, headers={"User-Agent": USER_AGENT}
    )


async def fetch(
    client: httpx.AsyncClient, request: Request, validators: Validators = Validators()
) -> Document | None:
    """The feed's document, or None when the server says it has not changed since `validators`.

    Raises FeedError for an unreachable server, a timeout, an HTTP error status or a body
    larger than MAX_FEED_BYTES.
    """
    import httpx

    headers = dict(request.headers)
    if validators.etag:
        headers["If-None-Match"] = validators.etag
    if validators.last_modified:
        headers["If-Modified-Since"] = validators.last_modified
    try:
        async with client.stream("GET", request.url, headers=headers, auth=request.auth) as reply:
            if reply.status_code == httpx.codes.NOT_MODIFIED:
                return None
            if not reply.is_success:
                raise FeedError(f"HTTP {reply.status_code} {reply.reason_phrase}".strip())
            body = await _read_bounded(reply)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise FeedError(
            f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        ) from None
    return Document(
        body=body,
        headers=_parser_headers(reply),
        validators=Validators(
            etag=reply.headers.get("ETag", ""),
            last_modified=reply.headers.get("Last-Modified", ""),
        ),
    )


async def _read_bounded(reply: httpx.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in reply.aiter_bytes():
        size += len(chunk)
        if size > MAX_FEED_BYTES:
            raise FeedError(f"the document is larger than {MAX_FEED_BYTES // (1024 * 1024)} MiB")
        chunks.append(chunk)
    return b"".join(chunks)


def _parser_headers(reply: httpx.Response) -> dict[str, str]:
    headers = {"content-location": str(reply.url)}
    for name in ("content-type", "content-language"):
        if name in reply.headers:
            headers[name] = reply.headers[name]
    return headers
