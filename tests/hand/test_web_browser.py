"""The browser tools in Debian's Chromium against a local site: fill a form, submit it, read
the result, take a screenshot; the address guard on every request a page makes; the browser
closed with the Hand; a clear error where Chromium is missing."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psutil
import pytest
from web_site import Site, serving

from hand import Hand, ToolError
from hand.web.browser import chromium_path
from hand.web.tools import WebTools
from tobe.config import WebToolSettings

pytestmark = pytest.mark.skipif(
    chromium_path("chromium") is None, reason="Chromium is not installed (apt-get install chromium)"
)


@pytest.fixture
def site() -> Iterator[Site]:
    with serving("127.0.0.1") as running:
        yield running


@pytest.fixture
async def browser() -> AsyncIterator[tuple[Hand, WebTools]]:
    hand = Hand("web")
    tools = WebTools(
        WebToolSettings(fetch=False, browser=True, allow=["127.0.0.1/32"], browser_pages=2)
    )
    tools.declare(hand)
    try:
        yield hand, tools
    finally:
        await tools.aclose()


async def call(hand: Hand, tool: str, **arguments: Any) -> str:
    return (await hand.tools[tool].call(arguments)).text


def ref(snapshot: str, role: str, name: str) -> str:
    found = re.search(rf'- {role} "{re.escape(name)}".*\[ref=(\w+)\]', snapshot)
    assert found, f"no {role} {name!r} in:\n{snapshot}"
    return found.group(1)


def chromium_children() -> list[psutil.Process]:
    return [
        child
        for child in psutil.Process(os.getpid()).children(recursive=True)
        if "chrom" in child.name().lower()
    ]


async def test_a_form_is_filled_submitted_and_its_result_read(
    browser: tuple[Hand, WebTools], site: Site
) -> None:
    hand, tools = browser
    page = await call(hand, "browser_open", url=site.url("/form"))
    assert page.startswith(f"Page: p1\nURL: {site.url('/form')}\nTitle: Order a book\n")
    await call(
        hand, "browser_type", element="name", ref=ref(page, "textbox", "Your name"), text="Ada"
    )
    await call(
        hand, "browser_type", element="copies", ref=ref(page, "spinbutton", "Copies"), text="3"
    )
    after = await call(
        hand, "browser_click", element="Place order", ref=ref(page, "button", "Place order")
    )
    assert f"URL: {site.url('/order')}\nTitle: Order placed\n" in after
    assert 'heading "Thank you, Ada"' in after
    assert "Your order of 3 copies is placed." in after
    assert ("POST", "/order") in site.requests

    shot = await hand.tools["browser_screenshot"].call({})
    assert shot.text == f"Screenshot of p1 ({site.url('/order')})"
    [(media_type, image)] = shot.images
    assert media_type == "image/png"
    assert image.startswith(b"\x89PNG\r\n\x1a\n")

    # Typing with submit presses Enter in the field, which submits its form.
    page = await call(hand, "browser_open", url=site.url("/form"), new_page=True)
    assert page.startswith("Page: p2\n")
    name = ref(page, "textbox", "Your name")
    after = await call(hand, "browser_type", element="name", ref=name, text="Grace", submit=True)
    assert 'heading "Thank you, Grace"' in after

    # Two pages at most: a third closes the oldest.
    third = await call(hand, "browser_open", url=site.url("/text"), new_page=True)
    assert third.startswith("Page: p3\n")
    with pytest.raises(ToolError, match=r"no page p1 \(pages: p2, p3\)"):
        await call(hand, "browser_read", page="p1")
    assert "Title: Order placed" in await call(hand, "browser_read", page="p2")

    assert chromium_children()
    await tools.aclose()
    assert chromium_children() == []


async def test_the_guard_refuses_what_the_browser_opens_and_what_its_pages_reach(
    browser: tuple[Hand, WebTools], site: Site
) -> None:
    hand, _ = browser
    for local in ("file:///etc/passwd", "chrome://settings"):
        with pytest.raises(ToolError, match="only http and https URLs can be fetched"):
            await call(hand, "browser_open", url=local)
    with serving("127.0.0.2") as inside:
        with pytest.raises(ToolError, match=r"refused 127\.0\.0\.2: the address is loopback"):
            await call(hand, "browser_open", url=inside.url("/text"))

        # A script of an allowed page fetches an inside address.
        seen = await call(hand, "browser_open", url=site.url(f"/escape?to={inside.url('/text')}"))
        for _ in range(50):
            if "Title: blocked" in seen:
                break
            await asyncio.sleep(0.1)
            seen += await call(hand, "browser_read")
        assert "Title: blocked" in seen
        assert "Blocked: refused 127.0.0.2: the address is loopback" in seen

        # A link to an inside address, clicked.
        page = await call(hand, "browser_open", url=site.url(f"/links?to={inside.url('/text')}"))
        after = await call(
            hand, "browser_click", element="link", ref=ref(page, "link", "Go inside")
        )
        assert "Blocked: refused 127.0.0.2: the address is loopback" in after
        assert inside.requests == []


async def test_a_missing_chromium_is_named_with_how_to_install_it() -> None:
    hand = Hand("web")
    settings = WebToolSettings(fetch=False, browser=True, chromium="/nonexistent/chromium")
    WebTools(settings).declare(hand)
    with pytest.raises(ToolError) as caught:
        await call(hand, "browser_open", url="http://example.org/")
    assert str(caught.value) == (
        "the browser is not available: Chromium (/nonexistent/chromium) is not on this "
        "machine: install it (Debian/Ubuntu: apt-get install chromium) or set "
        "hand.web.chromium to its path"
    )
