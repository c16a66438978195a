"""The browser of the `browser_*` tools: the system's Chromium, headless, driven by Playwright.

One browser per Hand, started on the first call and closed when the Hand stops; at most
`max_pages` pages (opening one more closes the oldest). Chromium reaches nothing by itself:
every request a page makes, the navigations it starts itself included, is intercepted and
made by the `Fetcher`, behind the address guard and pinned to the vetted address, and a
refused one is aborted; Chromium's own name resolution maps every host to nothing, so what
escapes interception (WebRTC, prefetches) finds no address; WebSockets are closed and service
workers blocked.

A page is read as its accessibility tree (Playwright's `aria_snapshot` in its `ai` mode),
each element with a reference (`[ref=e6]`) that `click` and `type` take, after the requests the
guard refused since the page was last read. Playwright and Chromium are looked for when the Hand
starts (a warning names what is missing) and again by each call, whose error then says how to
install them.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import shutil
from typing import TYPE_CHECKING

from hand._tools import ToolError, ToolOutput
from hand.web.fetch import Fetcher, check_url
from hand.web.guard import AddressRefused

if TYPE_CHECKING:
    from playwright.async_api import (
        Browser,
        BrowserContext,
        Page,
        Playwright,
        Route,
        WebSocketRoute,
    )

log = logging.getLogger(__name__)

_HOP_BY_HOP = {
    "connection",
    "content-encoding",
    "content-length",
    "keep-alive",
    "transfer-encoding",
    "host",
}


def missing_parts(chromium: str) -> str | None:
    """What the browser tools lack on this machine (None: nothing), and how to get it."""
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed (pip install 'tobe[browser]')"
    if chromium_path(chromium) is None:
        return (
            f"Chromium ({chromium}) is not on this machine: install it (Debian/Ubuntu: "
            "apt-get install chromium) or set hand.web.chromium to its path"
        )
    return None


def chromium_path(chromium: str) -> str | None:
    if os.sep in chromium:
        return chromium if os.access(chromium, os.X_OK) else None
    return shutil.which(chromium)


class BrowserSession:
    """The Hand's one browser and its pages, named p1, p2, … in the order they were opened."""

    def __init__(
        self, fetcher: Fetcher, chromium: str, max_pages: int, timeout: float, max_chars: int
    ) -> None:
        self._fetcher = fetcher
        self._chromium = chromium
        self._max_pages = max_pages
        self._timeout = timeout
        self._max_chars = max_chars
        self._lock = asyncio.Lock()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None
        self._pages: dict[str, Page] = {}
        self._opened = 0
        self._current = ""
        self._refusals: dict[str, str] = {}

    async def _ensure(self) -> BrowserContext:
        if self._context is not None:
            return self._context
        problem = missing_parts(self._chromium)
        if problem is not None:
            raise ToolError(f"the browser is not available: {problem}")
        from playwright.async_api import async_playwright

        args = [
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
            "--disable-background-networking",
        ]
        if os.geteuid() == 0:  # Chromium's sandbox needs user namespaces root cannot enter
            args.append("--no-sandbox")
        self._playwright = await async_playwright().start()
        try:
            self._browser = await self._playwright.chromium.launch(
                executable_path=chromium_path(self._chromium), headless=True, args=args
            )
            context = await self._browser.new_context(service_workers="block")
        except Exception as exc:
            await self.aclose()
            raise ToolError(f"Chromium did not start: {exc}") from None
        context.set_default_timeout(self._timeout * 1000)
        await context.route("**/*", self._route)
        await context.route_web_socket("**/*", _refuse_web_socket)
        self._context = context
        return context

    async def _route(self, route: Route) -> None:
        request = route.request
        try:
            headers = {
                name: value
                for name, value in (await request.all_headers()).items()
                if name.lower() not in _HOP_BY_HOP and not name.startswith(":")
            }
            body = await self._fetcher.exchange(
                request.method, request.url, headers, request.post_data_buffer
            )
        except AddressRefused as exc:
            self._refusals[request.url] = str(exc)
            await route.abort("blockedbyclient")
            return
        except ToolError as exc:
            self._refusals[request.url] = str(exc)
            await route.abort("failed")
            return
        await route.fulfill(
            status=body.status,
            headers={k: v for k, v in body.headers if k.lower() not in _HOP_BY_HOP},
            body=body.content,
        )

    def _page(self, name: str) -> tuple[str, Page]:
        chosen = name or self._current
        page = self._pages.get(chosen)
        if page is None:
            known = ", ".join(self._pages) or "none; open one with browser_open"
            raise ToolError(f"no page {chosen or '(current)'} (pages: {known})")
        return chosen, page

    async def _snapshot(self, name: str, page: Page) -> str:
        tree = await page.locator("body").aria_snapshot(mode="ai")
        title = await page.title()
        head = f"Page: {name}\nURL: {page.url}\nTitle: {title}\n"
        blocked = list(self._refusals.values())
        self._refusals.clear()
        head += "".join(f"Blocked: {problem}\n" for problem in blocked[:5])
        if len(tree) > self._max_chars:
            head += f"Truncated: showing {self._max_chars} of {len(tree)} characters\n"
            tree = tree[: self._max_chars]
        return head + "\n" + tree

    def _failure(self, url: str, exc: Exception) -> ToolError:
        refused = self._refusals.pop(url, None)
        return ToolError(refused or f"could not open {url}: {str(exc).splitlines()[0]}")

    async def open(self, url: str, new_page: bool) -> str:
        check_url(url)  # http and https only: never file:, chrome: or the like
        async with self._lock:
            context = await self._ensure()
            if new_page or not self._current:
                if len(self._pages) >= self._max_pages:
                    oldest = next(iter(self._pages))
                    await self._pages.pop(oldest).close()
                self._opened += 1
                self._current = f"p{self._opened}"
                self._pages[self._current] = await context.new_page()
            name, page = self._page("")
            try:
                await page.goto(url)
            except Exception as exc:
                # The page is left loading Chromium's error page: start the next one afresh.
                await page.close()
                self._pages[name] = await context.new_page()
                raise self._failure(url, exc) from None
            return await self._snapshot(name, page)

    async def read(self, page_name: str) -> str:
        async with self._lock:
            name, page = self._page(page_name)
            self._current = name
            return await self._snapshot(name, page)

    async def screenshot(self, page_name: str, full_page: bool) -> ToolOutput:
        async with self._lock:
            name, page = self._page(page_name)
            image = await page.screenshot(type="png", full_page=full_page)
            return ToolOutput(f"Screenshot of {name} ({page.url})", [("image/png", image)])

    async def act(self, page_name: str, ref: str, text: str | None, submit: bool) -> str:
        """Click the element `ref`, or type `text` into it (then Enter when `submit`)."""
        async with self._lock:
            name, page = self._page(page_name)
            target = page.locator(f"aria-ref={ref}")
            if await target.count() == 0:
                raise ToolError(f"no element [ref={ref}] on {name}; read the page again")
            try:
                if text is None:
                    await target.click()
                else:
                    await target.fill(text)
                    if submit:
                        await target.press("Enter")
                await page.wait_for_load_state()
            except Exception as exc:
                raise self._failure(page.url, exc) from None
            return await self._snapshot(name, page)

    async def aclose(self) -> None:
        """Close the browser (the Hand stops); a later call starts a new one."""
        browser, driver = self._browser, self._playwright
        self._pages.clear()
        self._context = self._browser = self._playwright = None
        self._current = ""
        try:
            if browser is not None:
                await browser.close()
        finally:
            if driver is not None:
                await driver.stop()


async def _refuse_web_socket(socket: WebSocketRoute) -> None:
    await socket.close(code=1008, reason="the Hand's browser opens no WebSockets")
