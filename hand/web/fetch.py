"""Fetching a URL behind the address guard: the `web_fetch` tool's reading of a page, and the
single requests the browser's pages make (`Fetcher.exchange`).

Only http and https. Each hop's host is vetted (`hand.web.guard`) and dialed at the vetted
addresses (`hand.web.pinned`); redirects are followed here, at most five, each target vetted
like the first. One deadline covers the whole fetch (resolving, connecting, redirects,
reading); reading stops at `max_bytes` (of the decoded body, so a compressed bomb stops too).
`httpx` is loaded by the first fetch: a Hand whose web tools are never called never loads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hand._tools import ToolError
from tobe import __version__

if TYPE_CHECKING:
    import httpx

    from hand.web.guard import AddressGuard

MAX_REDIRECTS = 5
USER_AGENT = f"ToBe-Hand/{__version__} (+web_fetch)"
_REDIRECTS = {301, 302, 303, 307, 308}
_HTML = {"text/html", "application/xhtml+xml"}


@dataclass(frozen=True)
class Body:
    """A response read up to the byte limit."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    content: bytes
    truncated: bool
    media_type: str
    charset: str | None


def _parse(url: str) -> httpx.URL:
    import httpx

    try:
        parsed = httpx.URL(url.strip())
    except httpx.InvalidURL as exc:
        raise ToolError(f"not a valid URL: {url!r} ({exc})") from None
    if parsed.scheme not in ("http", "https"):
        raise ToolError(f"only http and https URLs can be fetched, not {url!r}")
    if not parsed.host:
        raise ToolError(f"the URL {url!r} names no host")
    return parsed.copy_with(fragment=None)


def check_url(url: str) -> None:
    """Refuse what is not an http or https URL with a host (ToolError)."""
    _parse(url)


def _media_type(response: httpx.Response) -> tuple[str, str | None]:
    header = response.headers.get("content-type", "")
    return header.split(";")[0].strip().lower(), response.charset_encoding


def _readable(media_type: str) -> bool:
    return (
        not media_type
        or media_type in _HTML
        or media_type.startswith("text/")
        or media_type == "application/json"
        or media_type.endswith("+json")
    )


class Fetcher:
    """Requests through the guard, within a total time and a byte limit per response."""

    def __init__(self, guard: AddressGuard, timeout: float, max_bytes: int) -> None:
        self.guard = guard
        self.timeout = timeout
        self.max_bytes = max_bytes

    @contextlib.asynccontextmanager
    async def _hop(
        self,
        method: str,
        url: httpx.URL,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> AsyncIterator[httpx.Response]:
        import httpx

        from hand.web.pinned import PinnedTransport

        port = url.port or (443 if url.scheme == "https" else 80)
        addresses = await self.guard.vet(url.host, port)
        transport = PinnedTransport(url.host, addresses)
        async with httpx.AsyncClient(
            transport=transport,
            timeout=None,  # the caller's deadline covers everything
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT},
        ) as client:
            request = client.build_request(method, url, headers=headers, content=content)
            response = await client.send(request, stream=True)
            try:
                yield response
            finally:
                await response.aclose()

    async def _read(self, response: httpx.Response) -> tuple[bytes, bool]:
        kept = bytearray()
        async for chunk in response.aiter_bytes():
            room = self.max_bytes - len(kept)
            kept += chunk[:room]
            if len(chunk) > room:
                return bytes(kept), True
        return bytes(kept), False

    async def get(self, url: str) -> Body:
        """GET `url`, following redirects (each target vetted), within the deadline."""
        import httpx

        target = _parse(url)
        try:
            async with asyncio.timeout(self.timeout):
                for _ in range(MAX_REDIRECTS + 1):
                    async with self._hop("GET", target) as response:
                        location = response.headers.get("location")
                        if response.status_code in _REDIRECTS and location:
                            target = _parse(str(target.join(location)))
                            continue
                        return await self._body(target, response)
        except TimeoutError:
            raise ToolError(f"timed out after {self.timeout:g} s fetching {target}") from None
        except httpx.TransportError as exc:
            raise ToolError(f"could not fetch {target}: {exc}") from None
        raise ToolError(f"more than {MAX_REDIRECTS} redirects, the last to {target}")

    async def _body(self, url: httpx.URL, response: httpx.Response) -> Body:
        if response.status_code >= 400:
            reason = response.reason_phrase or ""
            raise ToolError(f"{url} answered HTTP {response.status_code} {reason}".rstrip())
        media_type, charset = _media_type(response)
        if not _readable(media_type):
            raise ToolError(
                f"{url} is {media_type}, which web_fetch does not read "
                "(it reads HTML, text and JSON)"
            )
        content, truncated = await self._read(response)
        return Body(
            str(url),
            response.status_code,
            list(response.headers.multi_items()),
            content,
            truncated,
            media_type,
            charset,
        )

    async def exchange(
        self, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> Body:
        """One request as a browser page makes it (no redirects followed: the page follows
        them, each through here again), any content type, within the deadline."""
        import httpx

        target = _parse(url)
        try:
            async with asyncio.timeout(self.timeout):
                async with self._hop(method, target, headers, content) as response:
                    media_type, charset = _media_type(response)
                    body, truncated = await self._read(response)
                    return Body(
                        str(target),
                        response.status_code,
                        list(response.headers.multi_items()),
                        body,
                        truncated,
                        media_type,
                        charset,
                    )
        except TimeoutError:
            raise ToolError(f"timed out after {self.timeout:g} s fetching {target}") from None
        except httpx.TransportError as exc:
            raise ToolError(f"could not fetch {target}: {exc}") from None


def _looks_like_html(content: bytes) -> bool:
    head = content[:1024].lstrip().lower()
    return head.startswith(b"<!doctype html") or b"<html" in head


def _text(content: bytes, charset: str | None) -> str:
    try:
        return content.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return content.decode("utf-8", errors="replace")


async def readable(body: Body) -> tuple[str, str]:
    """The page's title and readable text: HTML as Markdown, JSON indented, text as is."""
    if body.media_type in _HTML or (not body.media_type and _looks_like_html(body.content)):
        from hand.web.extract import html_to_markdown

        return await asyncio.to_thread(html_to_markdown, body.content, body.url, body.charset)
    text = _text(body.content, body.charset)
    if body.media_type == "application/json" or body.media_type.endswith("+json"):
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return "", text


async def web_fetch(fetcher: Fetcher, url: str, max_chars: int, chars_limit: int) -> str:
    """The `web_fetch` result: a few header lines (final URL, title, what was cut), a blank
    line, then the content."""
    body = await fetcher.get(url)
    title, text = await readable(body)
    wanted = min(max_chars, chars_limit)
    lines = [f"URL: {body.url}"]
    if body.url != url.strip():
        lines.append(f"Requested: {url.strip()}")
    if title:
        lines.append(f"Title: {title}")
    lines.append(f"Content-Type: {body.media_type or 'unknown'}")
    if body.truncated:
        lines.append(
            f"Truncated: the response is larger than {fetcher.max_bytes} bytes; "
            "only the first were read"
        )
    if len(text) > wanted:
        more = f"; ask with max_chars up to {chars_limit}" if wanted < chars_limit else ""
        lines.append(f"Truncated: showing {wanted} of {len(text)} characters{more}")
        text = text[:wanted]
    return "\n".join(lines) + "\n\n" + text
