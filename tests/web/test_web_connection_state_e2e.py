"""The web client's connection state at desktop (1280×800) and phone (390×844) sizes in a real
headless Chromium, on a stack of its own (its Face and Mind are stopped here): a banner says
which link is down and clears itself; a message sent while the Face is away arrives once when
it is back; sending while the Mind is away says so in words, never with gRPC's text, and keeps
what was typed."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from web_stack import Stack, off_loop
from web_steps import new_conversation, sign_in

pytestmark = pytest.mark.e2e

SIZES = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}
FACE_DOWN = "Cannot reach ToBe. Reconnecting…"
MIND_DOWN = "ToBe cannot reach its Mind. Reconnecting…"
MIND_UNREACHABLE = (
    "ToBe cannot reach its Mind right now, so this was not done. "
    "Try again once the banner at the top is gone."
)
MIND_LOST = "the Face lost its link to the Mind (UNAVAILABLE)"
# The Face retries its Mind with backoff (1 s doubling to 30 s), however long the Mind takes.
MIND_BACK_MS = 60_000


@pytest.fixture(params=list(SIZES))
def sized(
    request: pytest.FixtureRequest, new_context: Callable[..., BrowserContext], stack: Stack
) -> Page:
    """A signed-in page at desktop or phone size, on a conversation of its own."""
    page = new_context(**SIZES[request.param]).new_page()
    sign_in(page, stack)
    new_conversation(page, "connection")
    return page


def test_a_message_sent_while_the_face_is_away_arrives_once_when_it_is_back(
    sized: Page, stack: Stack
) -> None:
    key = sized.locator("#conversations button[aria-current=true]").get_attribute("data-key")
    assert key
    banner = sized.locator("#banner")
    off_loop(stack.face.kill)
    expect(banner).to_be_visible()
    expect(banner).to_have_text(FACE_DOWN)
    assert banner.bounding_box()["width"] <= sized.viewport_size["width"]  # type: ignore[index]
    sized.fill("#message", "written while away")
    sized.press("#message", "Enter")
    off_loop(stack.face.start, stack.face.address, stack.face.web_address)
    expect(banner).to_be_hidden()
    log = sized.locator("#log")
    expect(log.locator("article.user")).to_have_text(["written while away"])
    expect(log.locator("article.assistant strong")).to_have_text("bold")
    expect(sized.locator("#message")).to_have_value("")
    expect(sized.locator("#composer-error")).to_be_hidden()
    stored = [m.text for m in stack.history(key).messages if m.text == "written while away"]
    assert stored == ["written while away"]


def test_sending_while_the_mind_is_away_says_so_in_words_and_keeps_the_text(
    sized: Page, stack: Stack
) -> None:
    banner = sized.locator("#banner")
    error = sized.locator("#composer-error")
    key = sized.locator("#conversations button[aria-current=true]").get_attribute("data-key")
    assert key
    off_loop(stack.mind.kill)
    try:
        expect(banner).to_have_text(MIND_DOWN)
        expect(banner).to_have_attribute("title", MIND_LOST)
        sized.fill("#message", "are you there?")
        sized.press("#message", "Enter")
        expect(error).to_have_text(MIND_UNREACHABLE)
        expect(sized.locator("#message")).to_have_value("are you there?")
        for raw in ("failed to connect", "UNAVAILABLE", "ipv4:", "grpc"):
            assert raw not in (error.text_content() or "")
    finally:
        off_loop(stack.mind.start, stack.mind.address)
    expect(banner).to_be_hidden(timeout=MIND_BACK_MS)
    sized.press("#message", "Enter")
    # Taken once the Mind is back: stored once, the box emptied, no error.
    expect(sized.locator("#message")).to_have_value("")
    expect(error).to_be_hidden()
    stored = [m.text for m in stack.history(key).messages if m.text == "are you there?"]
    assert stored == ["are you there?"]
    # What the conversation holds is shown (after a reload: the live view right after a Mind
    # restart is the Face-away test's concern).
    sized.reload()
    log = sized.locator("#log")
    expect(log.locator("article.user")).to_have_text(["are you there?"])
    expect(log.locator("article.assistant strong")).to_have_text("bold")
