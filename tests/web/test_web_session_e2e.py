"""The web client's connection in a real headless Chromium: it survives Face being killed
mid-reply without losing or repeating anything, says "Reconnecting…" while Face or its Mind is
away, its WebSocket refuses other sites, and a revoked credential or a sign-out ends the
session at once, saying why."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import websockets.sync.client
from playwright.sync_api import BrowserContext, Page, expect
from web_stack import Stack, off_loop
from web_steps import send, sign_in
from websockets.exceptions import InvalidStatus

from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e

# Records whether the "Reconnecting…" banner was ever shown, however briefly.
WATCH_BANNER = """() => {
  window.bannerShown = false;
  const banner = document.getElementById("banner");
  new MutationObserver(() => { if (!banner.hidden) window.bannerShown = true; })
    .observe(banner, { attributes: true });
}"""


def test_a_reply_continues_after_face_is_killed_with_every_event_shown_once(
    page: Page, stack: Stack
) -> None:
    key = page.locator("#conversations button[aria-current=true]").get_attribute("data-key")
    assert key
    send(page, "slow reply please")
    log = page.locator("#log")
    expect(log.locator("article.assistant strong")).to_have_text("begins")
    page.evaluate(WATCH_BANNER)
    off_loop(stack.face.restart)
    expect(log.locator("article.assistant em")).to_have_text("ends")
    expect(page.locator("#banner")).to_be_hidden()
    assert page.evaluate("() => window.bannerShown") is True

    history = stack.history(key)
    shown = [m.id for m in history.messages if m.role != common_pb2.MESSAGE_ROLE_TOOL]
    rendered = log.locator("[data-message-id]").evaluate_all(
        "nodes => nodes.map(node => Number(node.dataset.messageId))"
    )
    assert rendered == shown
    calls = log.locator("[data-tool-call-id]").evaluate_all(
        "nodes => nodes.map(node => node.dataset.toolCallId)"
    )
    assert calls == [tool.tool_call_id for tool in history.tools]
    expect(log.locator("details.tool")).to_have_attribute("data-state", "succeeded")
    # Nothing is still streaming: the durable messages stand for every step.
    expect(page.locator("#live article")).to_have_count(0)


def test_while_face_is_down_the_page_says_reconnecting_then_shows_what_was_said_meanwhile_once(
    page: Page, stack: Stack
) -> None:
    key = page.locator("#conversations button[aria-current=true]").get_attribute("data-key")
    assert key
    banner = page.locator("#banner")
    log = page.locator("#log")
    off_loop(stack.face.kill)
    expect(banner).to_be_visible()
    expect(banner).to_have_text("Cannot reach ToBe. Reconnecting…")
    # Another of the person's clients speaks while this page cannot hear.
    off_loop(stack.say, key, "said while the page was away")
    off_loop(stack.face.start, stack.face.address, stack.face.web_address)
    expect(banner).to_be_hidden()
    expect(log.locator("article.user")).to_have_text(["said while the page was away"])
    expect(log.locator("article.assistant")).to_have_count(1)
    expect(log.locator("article.assistant strong")).to_have_text("bold")

    history = stack.history(key)
    rendered = log.locator("[data-message-id]").evaluate_all(
        "nodes => nodes.map(node => Number(node.dataset.messageId))"
    )
    assert rendered == [m.id for m in history.messages]
    # Still connected: what is sent now is answered.
    send(page, "and now?")
    expect(log.locator("article.assistant")).to_have_count(2)


def test_the_page_says_reconnecting_while_the_faces_mind_is_down_and_carries_on_after(
    page: Page, stack: Stack
) -> None:
    banner = page.locator("#banner")
    log = page.locator("#log")
    # The new conversation is shown (its snapshot, not the one the page opened first).
    expect(log.locator("article")).to_have_count(0)
    off_loop(stack.mind.kill)
    expect(banner).to_be_visible()
    expect(banner).to_have_attribute("title", "the Face lost its link to the Mind (UNAVAILABLE)")
    off_loop(stack.mind.start, stack.mind.address)
    # The Face retries with backoff (up to 30 s), however long the Mind takes to start.
    expect(banner).to_be_hidden(timeout=60_000)
    send(page, "back again?")
    expect(log.locator("article.user")).to_have_text(["back again?"])
    expect(log.locator("article.assistant strong")).to_have_text("bold")


def test_the_websocket_refuses_another_origin_and_serves_the_page_own(
    page: Page, stack: Stack
) -> None:
    cookies = "; ".join(f"{c['name']}={c['value']}" for c in page.context.cookies())
    address = f"ws://{stack.face.web_address}/ws"

    def connect_from(origin: str) -> None:
        with websockets.sync.client.connect(
            address, origin=origin, additional_headers={"Cookie": cookies}, open_timeout=15
        ):
            pass

    with pytest.raises(InvalidStatus) as refused:
        off_loop(connect_from, "https://evil.example")
    assert refused.value.response.status_code == 403
    # The page's own origin is let in, with the same cookie.
    off_loop(connect_from, stack.base_url.rstrip("/"))
    send(page, "still here?")
    expect(page.locator("#log article.assistant strong")).to_have_text("bold")


def test_revoking_the_credential_signs_the_page_out_without_a_reload(
    new_context: Callable[..., BrowserContext], stack: Stack
) -> None:
    before = stack.client_credentials()
    page = new_context().new_page()
    sign_in(page, stack)
    page.evaluate("() => { window.sameDocument = true; }")
    [paired] = stack.client_credentials() - before
    stack.admin("credentials", "revoke", paired)
    expect(page.locator("#signin")).to_be_visible()
    expect(page.locator("#chat")).to_be_hidden()
    # It says why, and what to do.
    expect(page.locator("#signin-message")).to_contain_text(
        "You were signed out (credential revoked). Sign in again with a new pairing code."
    )
    assert page.evaluate("() => window.sameDocument") is True


def test_signing_out_ends_the_session_for_good(
    new_context: Callable[..., BrowserContext], stack: Stack
) -> None:
    page = new_context().new_page()
    sign_in(page, stack)
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("#signin")).to_be_visible()
    page.reload()
    expect(page.locator("#signin")).to_be_visible()
    expect(page.locator("#chat")).to_be_hidden()
