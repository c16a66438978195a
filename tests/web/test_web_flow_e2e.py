"""The transcript and the composer in a real headless Chromium, at desktop and phone sizes,
against a real Mind, Face and Hand: a message is sent once however fast Enter is pressed (and a
retry after a lost acknowledgement is the same send), the view follows the stream the way chat
apps do, what waits for the person is brought into view and says so, a pairing link works in
the tab already showing the pairing page, a Hand is named, and a decision is reported once."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, WebSocketRoute, expect
from web_stack import LONG_REPLY_LINES, PRINCIPAL, Stack, off_loop, running_stack
from web_steps import new_conversation, send, sign_in

from mind.actions import records
from mind.events.action_views import ActionTiming
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from tobe.v1 import common_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]

SIZES: dict[str, dict[str, Any]] = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True},
}
ACTION_TITLE = "Water the plants"
DAY_SECONDS = 86_400.0

# Counts the moments streamed text was drawn while the view, meant to follow, was left behind.
# Registered after the client's own observer, it runs after it on every change.
WATCH_FOLLOWING = """() => {
  window.leftBehind = 0;
  const scroller = document.getElementById("scroller");
  new MutationObserver(() => {
    const streaming = document.querySelector("#live article");
    const gap = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight;
    if (streaming && gap > 80) window.leftBehind += 1;
  }).observe(scroller, { childList: true, subtree: true, characterData: true });
}"""
GAP_TO_END = "s => s.scrollHeight - s.scrollTop - s.clientHeight"


def asks_key(size: str) -> str:
    return f"p_asks_{size}"


def seed_actions(url: str) -> None:
    """One conversation per size, each with an action waiting for alice's confirmation."""

    async def seed() -> None:
        database = Database.open(url)
        try:
            for size in SIZES:

                def write(tx: WriteTx, key: str = asks_key(size)) -> None:
                    tx.session.add(models.Conversation(key=key, owner=PRINCIPAL, title=key))
                    tx.session.flush()
                    records.create(
                        tx,
                        conversation_key=key,
                        owner=PRINCIPAL,
                        run_id="",
                        title=ACTION_TITLE,
                        goal="water the plants",
                        timing=ActionTiming.IMMEDIATE,
                        plan=(),
                        trigger=None,
                        reason="it acts for you",
                        now=datetime.now(UTC),
                        ttl=DAY_SECONDS,
                    )

                await database.write(write)
        finally:
            await database.close()

    asyncio.run(seed())


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The web stack, its store seeded with a waiting action for each screen size."""
    with running_stack(tmp_path_factory.mktemp("flow"), seed=seed_actions) as started:
        yield started


@pytest.fixture(params=list(SIZES))
def size(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def sized(new_context: Callable[..., BrowserContext], size: str) -> BrowserContext:
    """A browser context at the screen size under test."""
    return new_context(**SIZES[size])


def signed_in(context: BrowserContext, stack: Stack) -> tuple[Page, str]:
    """A signed-in page on a conversation of its own, and that conversation's key."""
    page = context.new_page()
    sign_in(page, stack)
    return page, new_conversation(page, "flow")


def user_texts(stack: Stack, key: str) -> list[str]:
    return [m.text for m in stack.history(key).messages if m.role == common_pb2.MESSAGE_ROLE_USER]


def gap_to_end(page: Page) -> float:
    return float(page.locator("#scroller").evaluate(GAP_TO_END))


def scroll_to_top(page: Page) -> None:
    page.locator("#scroller").evaluate("s => { s.scrollTop = 0; }")
    # The client learns of the scroll from its event, dispatched before the next frame.
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => setTimeout(done)))")


def long_reply(page: Page, count: int) -> None:
    """Wait until `count` long replies are shown in full."""
    points = page.locator("#log article.assistant li")
    expect(points).to_have_count(count * LONG_REPLY_LINES)


def test_enter_pressed_twice_quickly_sends_the_message_once(
    sized: BrowserContext, stack: Stack
) -> None:
    page, key = signed_in(sized, stack)
    page.fill("#message", "only once please")
    # Two Enters and a click in the same moment, before the first send is acknowledged.
    page.locator("#message").evaluate(
        """text => {
          const enter = () =>
            new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true });
          text.dispatchEvent(enter());
          text.dispatchEvent(enter());
          document.getElementById("composer").requestSubmit();
        }"""
    )
    expect(page.locator("#message")).to_have_value("")
    expect(page.locator("#log article.assistant strong")).to_have_text("bold")
    # Something sent afterwards is answered after the first reply, so every send has landed.
    send(page, "and then this")
    expect(page.locator("#log article.assistant")).to_have_count(2)
    assert user_texts(stack, key) == ["only once please", "and then this"]
    expect(page.locator("#log article.user")).to_have_count(2)


def test_a_send_retried_after_its_acknowledgement_was_lost_is_the_same_message(
    sized: BrowserContext, stack: Stack
) -> None:
    sends: list[dict[str, Any]] = []
    lost: list[str] = []

    def route(socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()

        def from_page(message: str | bytes) -> None:
            frame = json.loads(message)
            call = frame.get("mind", {}).get("sendChat")
            if call is not None:
                sends.append(call)
                if len(sends) == 1:
                    lost.append(frame["requestId"])
            server.send(message)

        def from_server(message: str | bytes) -> None:
            frame = json.loads(message)
            reply = frame.get("reply", {})
            if lost and reply.get("requestId") == lost[0]:
                # The Mind took the message; its acknowledgement never reaches the page.
                reply = {"requestId": lost[0], "error": {"code": 14, "message": "reply lost"}}
                message = json.dumps({**frame, "reply": reply})
            socket.send(message)

        socket.on_message(from_page)
        server.on_message(from_server)

    sized.route_web_socket(re.compile(r"/ws$"), route)
    page, key = signed_in(sized, stack)
    page.fill("#message", "said once, sent twice")
    page.press("#message", "Enter")
    # A lost acknowledgement reads as the Mind being out of reach, in words.
    expect(page.locator("#composer-error")).to_contain_text("ToBe cannot reach its Mind")
    expect(page.locator("#message")).to_have_value("said once, sent twice")
    expect(page.locator("#message")).to_be_editable()
    page.press("#message", "Enter")  # the person tries again
    expect(page.locator("#message")).to_have_value("")
    expect(page.locator("#composer-error")).to_be_hidden()
    send(page, "a new message")
    expect(page.locator("#log article.assistant")).to_have_count(2)
    keys = [call["idempotencyKey"] for call in sends]
    assert len(keys) == 3 and keys[0] == keys[1] != keys[2]
    assert user_texts(stack, key) == ["said once, sent twice", "a new message"]


def test_the_view_follows_the_stream_at_the_bottom_and_offers_new_messages_when_scrolled_up(
    sized: BrowserContext, stack: Stack
) -> None:
    page, key = signed_in(sized, stack)
    button = page.get_by_role("button", name="New messages")
    page.evaluate(WATCH_FOLLOWING)
    send(page, "long reply please")
    long_reply(page, 1)
    # At the bottom the view followed every streamed part, not only the finished message.
    assert page.evaluate("() => window.leftBehind") == 0
    assert gap_to_end(page) < 2
    expect(button).to_be_hidden()

    scroll_to_top(page)
    off_loop(stack.say, key, "long answer for another tab")
    long_reply(page, 2)
    # Scrolled up, the view stays where the person reads; a button says there is more.
    expect(button).to_be_visible()
    expect(button).to_be_in_viewport()
    assert page.locator("#scroller").evaluate("s => s.scrollTop") == 0
    button.click()
    expect(button).to_be_hidden()
    expect(page.locator("#log article.assistant li").last).to_be_in_viewport()
    assert gap_to_end(page) < 2


def test_an_approval_is_brought_into_view_waiting_for_the_person_on_the_named_hand(
    sized: BrowserContext, stack: Stack
) -> None:
    page, key = signed_in(sized, stack)
    send(page, "long reply first")
    long_reply(page, 1)
    scroll_to_top(page)
    off_loop(stack.say, key, "save the plan")
    card = page.locator("section.approval")
    expect(card).to_be_in_viewport()
    expect(card.locator(".approval-outcome")).to_have_text("Waiting for your decision")
    # The Hand by its name, never its connection's id.
    expect(card.locator("h3")).to_have_text("Approval needed: laptop__save_note on laptop")
    tool = page.locator("details.tool", has_text="laptop__save_note")
    expect(tool.locator(".tool-hand")).to_have_text("on laptop")
    # The call waits for the person: it is not "running".
    expect(tool).to_have_attribute("data-state", "waiting")
    expect(tool.locator(".tool-state")).to_have_text("waiting for your approval")
    card.get_by_role("button", name="Deny").click()
    expect(tool).to_have_attribute("data-state", "denied")
    expect(tool.locator(".tool-state")).to_have_text("denied")


def test_a_pairing_link_opened_in_the_tab_showing_the_pairing_page_signs_in(
    sized: BrowserContext, stack: Stack
) -> None:
    page = sized.new_page()
    page.goto(stack.base_url)
    expect(page.locator("#signin")).to_be_visible()
    page.evaluate("() => { window.sameDocument = true; }")
    code = stack.pairing_code()
    page.goto(f"{stack.base_url}#pair={code}")  # only the fragment changes: no new page
    expect(page.locator("#chat")).to_be_visible()
    expect(page.locator("#message")).to_be_enabled()
    assert page.evaluate("() => window.sameDocument") is True
    assert "#pair" not in page.url and code not in page.url
    # Opened fresh, in a tab of its own, the link signs in as well.
    other = sized.new_page()
    other.goto(f"{stack.base_url}#pair={stack.pairing_code()}")
    expect(other.locator("#chat")).to_be_visible()
    expect(other.locator("#message")).to_be_enabled()


def test_a_declined_action_is_brought_into_view_and_reported_once(
    sized: BrowserContext, stack: Stack, size: str
) -> None:
    page = sized.new_page()
    sign_in(page, stack)
    toggle = page.locator("#toggle-list")
    if toggle.is_visible():  # a narrow screen: the list opens over the conversation
        toggle.click()
    page.locator(f'#conversations button[data-key="{asks_key(size)}"]').click()
    card = page.locator("section.action")
    expect(card).to_be_in_viewport()
    expect(card.locator("h3")).to_have_text(f"Waiting for your confirmation: {ACTION_TITLE}")
    card.get_by_role("button", name="Decline").click()
    expect(card).to_have_count(0)
    line = page.locator("#log p.status", has_text=f"declined: {ACTION_TITLE}")
    expect(line).to_have_count(1)
    # The decision's event has arrived by the time a later reply has: still one line.
    send(page, "anything else?")
    expect(page.locator("#log article.assistant strong")).to_have_text("bold")
    expect(line).to_have_count(1)
