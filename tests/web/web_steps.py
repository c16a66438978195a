"""What a person does in the web client, as the browser tests do it."""

from __future__ import annotations

import uuid

from playwright.sync_api import Page, expect
from web_stack import Stack

# Bounded waits only to avoid hangs: a slow machine may take seconds where a fast one takes ms.
WAIT_MS = 20_000


def sign_in(page: Page, stack: Stack) -> None:
    """Open a fresh pairing link and wait for the chat, connected."""
    page.goto(f"{stack.base_url}#pair={stack.pairing_code()}")
    expect(page.locator("#chat")).to_be_visible()
    expect(page.locator("#message")).to_be_enabled()


def new_conversation(page: Page, title: str, *, unique: bool = True) -> str:
    """Create a conversation from the list (its title made unique unless told otherwise) and
    wait until it is shown; returns its key."""
    if unique:
        title = f"{title} {uuid.uuid4().hex[:6]}"
    toggle = page.locator("#toggle-list")
    if toggle.is_visible():  # a narrow screen: the list opens over the conversation
        toggle.click()
    current = page.locator("#conversations button[aria-current=true]")
    before = current.get_attribute("data-key") if current.count() else None
    page.fill("#new-title", title)
    page.click("#new-conversation button[type=submit]")
    # An earlier conversation may carry the same title: wait for a new one to be shown.
    if before is not None:
        expect(current).not_to_have_attribute("data-key", before)
    expect(current).to_have_text(title)
    expect(page.locator("#conversation-title")).to_have_text(title)
    key = current.get_attribute("data-key")
    assert key
    return key


def send(page: Page, text: str) -> None:
    """Type a message and press Enter, as a person does."""
    page.fill("#message", text)
    page.press("#message", "Enter")
    expect(page.locator("#message")).to_have_value("")
