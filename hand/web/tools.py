"""Declaring the web tools on a Hand, as the `hand.web` settings say.

`web_fetch` and `web_search` only read; so do `browser_open`, `browser_read` and
`browser_screenshot`. `browser_click` and `browser_type` act on a page (they may submit a
form, buy, post), so they are `external_side_effect` and go through the Mind's approvals.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Annotated

from pydantic import Field

from hand._hand import Hand
from hand._tools import Effect, ToolOutput
from hand.web.browser import BrowserSession, missing_parts
from hand.web.fetch import Fetcher, web_fetch
from hand.web.guard import AddressGuard, Resolver, system_resolver
from hand.web.search import SearxngSearch
from tobe.config import WebToolSettings

log = logging.getLogger(__name__)

PageName = Annotated[str, Field(description="The page (p1, p2, …); empty: the current one.")]
Ref = Annotated[str, Field(description="The element's reference in the page, e.g. e6.")]
Element = Annotated[str, Field(description="What the element is, for the person approving.")]


class WebTools:
    """The web tools of one Hand; `aclose` closes its browser when the Hand stops."""

    def __init__(self, settings: WebToolSettings, resolver: Resolver = system_resolver) -> None:
        self.settings = settings
        guard = AddressGuard.from_allow_list(settings.allow, resolver)
        self.fetcher = Fetcher(guard, settings.fetch_timeout, settings.max_bytes)
        self.browser: BrowserSession | None = None
        if settings.browser:
            self.browser = BrowserSession(
                self.fetcher,
                settings.chromium,
                settings.browser_pages,
                settings.browser_timeout,
                settings.max_chars,
            )

    def declare(self, hand: Hand) -> None:
        if self.settings.fetch:
            self._declare_fetch(hand)
        if self.settings.search_url:
            self._declare_search(
                hand, SearxngSearch(self.settings.search_url, self.settings.search_timeout)
            )
        if self.browser is not None:
            problem = missing_parts(self.settings.chromium)
            if problem is not None:
                log.warning("the browser tools will fail until this is fixed: %s", problem)
            self._declare_browser(hand, self.browser)

    def _declare_fetch(self, hand: Hand) -> None:
        fetcher, limit = self.fetcher, self.settings.max_chars

        @hand.tool(name="web_fetch", effect=Effect.READ_ONLY)
        async def fetch(url: str, max_chars: Annotated[int, Field(ge=100)] = 20_000) -> str:
            """Fetch a web page (http/https) and return its main content as Markdown (HTML) or
            text (plain text, JSON), with its final URL and title, at most max_chars
            characters; private, loopback and link-local addresses are refused unless the
            operator allowed them."""
            return await web_fetch(fetcher, url, max_chars, limit)

    def _declare_search(self, hand: Hand, backend: SearxngSearch) -> None:
        @hand.tool(effect=Effect.READ_ONLY)
        async def web_search(query: str, count: Annotated[int, Field(ge=1, le=20)] = 8) -> str:
            """Search the web; returns a numbered list of results (title, URL, snippet)."""
            return await backend.search(query, count)

    def _declare_browser(self, hand: Hand, browser: BrowserSession) -> None:
        @hand.tool(effect=Effect.READ_ONLY)
        async def browser_open(url: str, new_page: bool = False) -> str:
            """Open a URL in the browser (in the current page, or a new one); returns the page
            as an accessibility tree whose elements carry references ([ref=e6])."""
            return await browser.open(url, new_page)

        @hand.tool(effect=Effect.READ_ONLY)
        async def browser_read(page: PageName = "") -> str:
            """Read a browser page again as an accessibility tree with element references."""
            return await browser.read(page)

        @hand.tool(effect=Effect.READ_ONLY)
        async def browser_screenshot(page: PageName = "", full_page: bool = False) -> ToolOutput:
            """Take a screenshot (PNG) of a browser page."""
            return await browser.screenshot(page, full_page)

        @hand.tool(effect=Effect.EXTERNAL_SIDE_EFFECT, decision="click {element} ({ref})")
        async def browser_click(element: Element, ref: Ref, page: PageName = "") -> str:
            """Click an element of a browser page (by its reference); returns the page after."""
            return await browser.act(page, ref, None, False)

        @hand.tool(
            effect=Effect.EXTERNAL_SIDE_EFFECT, decision="type {text} into {element} ({ref})"
        )
        async def browser_type(
            element: Element, ref: Ref, text: str, submit: bool = False, page: PageName = ""
        ) -> str:
            """Type text into a field of a browser page (replacing its content), then press
            Enter when submit is true; returns the page after."""
            return await browser.act(page, ref, text, submit)

    async def closing(self, serving: Awaitable[None]) -> None:
        """Serve the Hand (`serving`), then close the browser, however serving ends."""
        try:
            await serving
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        if self.browser is not None:
            await self.browser.aclose()
