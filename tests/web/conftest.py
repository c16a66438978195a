"""Fixtures of the browser tests: Debian's Chromium, headless, driven by Playwright's sync API.

One browser per test module; each test gets fresh browser contexts (cookies of its own), so a
test signs in by opening a pairing link exactly as a person does. Playwright's sync API keeps an
event loop running on the thread while it is started: it is stopped at the end of each module,
so the asyncio tests a worker runs next find the thread free.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, expect, sync_playwright
from web_stack import Stack, running_stack
from web_steps import WAIT_MS, new_conversation, sign_in

CHROMIUM = "/usr/bin/chromium"
expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    # Chromium's sandbox needs user namespaces a root process cannot enter.
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
    try:
        yield launched
    finally:
        launched.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("web")) as started:
        yield started


@pytest.fixture
def new_context(browser: Browser) -> Iterator[Callable[..., BrowserContext]]:
    """Browser contexts (separate cookie jars) for this test, closed at its end."""
    opened: list[BrowserContext] = []

    def make(**options: object) -> BrowserContext:
        context = browser.new_context(**options)  # type: ignore[arg-type]
        context.set_default_timeout(WAIT_MS)
        opened.append(context)
        return context

    yield make
    for context in opened:
        context.close()


@pytest.fixture
def page(new_context: Callable[..., BrowserContext], stack: Stack) -> Page:
    """A signed-in page on a conversation of its own."""
    signed_in = new_context().new_page()
    sign_in(signed_in, stack)
    new_conversation(signed_in, "test")
    return signed_in
