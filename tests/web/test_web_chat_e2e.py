"""The web client in a real headless Chromium against a real Mind, Face and Hand: signing in
with a pairing link, streamed Markdown replies, tool calls, approvals, model output that tries
to be HTML, two tabs at once, and a phone-sized screen."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from web_stack import PRINCIPAL, Stack
from web_steps import new_conversation, send, sign_in

pytestmark = pytest.mark.e2e


def test_a_pairing_link_signs_in_once_and_leaves_the_address_bar(
    new_context: Callable[..., BrowserContext], stack: Stack
) -> None:
    code = stack.pairing_code()
    page = new_context().new_page()
    page.goto(f"{stack.base_url}#pair={code}")
    expect(page.locator("#chat")).to_be_visible()
    expect(page.locator("#principal")).to_have_text(PRINCIPAL)
    # The code is spent: it is gone from the address bar, and the cookie keeps the session.
    assert "#pair" not in page.url and code not in page.url
    page.reload()
    expect(page.locator("#message")).to_be_enabled()
    expect(page.locator("#principal")).to_have_text(PRINCIPAL)
    # The same link in another browser is refused, with the server's reason shown.
    other = new_context().new_page()
    other.goto(f"{stack.base_url}#pair={code}")
    expect(other.locator("#signin")).to_be_visible()
    expect(other.locator("#signin-message")).to_be_visible()
    expect(other.locator("#chat")).to_be_hidden()


def test_a_tool_call_approved_once_runs_and_shows_its_result(
    new_context: Callable[..., BrowserContext], stack: Stack
) -> None:
    page = new_context(viewport={"width": 1200, "height": 1000}).new_page()
    sign_in(page, stack)
    new_conversation(page, "Evening plans", unique=False)
    # A Markdown reply with a tool call first, then the approval.
    send(page, "tour of the day")
    expect(page.locator("#log article.assistant em")).to_have_text("evening")
    saved_before = len(stack.hand.saved)
    send(page, "save my plan")
    card = page.locator("section.approval")
    expect(card.locator(".decision-text")).to_contain_text("plan.txt")
    expect(card.locator(".approval-outcome")).to_have_text("Waiting for your decision")
    card.get_by_role("button", name="Approve once").click()
    expect(card.locator(".approval-outcome")).to_have_text("Approved once")
    for answer in ("Approve once", "Approve for this conversation", "Deny"):
        expect(card.get_by_role("button", name=answer)).to_be_disabled()
    tool = page.locator("details.tool", has_text="laptop__save_note")
    expect(tool).to_have_attribute("data-state", "succeeded")
    tool.locator("summary").click()
    expect(tool.locator(".tool-result")).to_have_text("saved plan.txt")
    expect(page.locator("#log article.assistant").last.locator("strong")).to_have_text("saved")
    assert stack.hand.saved[saved_before:] == ["plan.txt"]


def test_a_reply_streams_in_as_markdown_with_its_tool_call(page: Page) -> None:
    send(page, "tour of the day")
    log = page.locator("#log")
    expect(log.locator("article.user")).to_have_text("tour of the day")
    reply = log.locator("article.assistant").last
    expect(reply.locator("em")).to_have_text("evening")
    expect(reply.locator("li strong")).to_have_text("bold")
    expect(reply.locator("pre code")).to_contain_text("print('hi')")
    link = reply.locator("a")
    expect(link).to_have_attribute("href", "https://example.com/docs")
    expect(link).to_have_attribute("target", "_blank")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    expect(log.locator("article.assistant").first.locator("strong")).to_have_text("check the time")
    # The tool call: its projection (name, arguments summary, state), collapsible.
    tool = log.locator("details.tool")
    expect(tool).to_have_count(1)
    expect(tool).to_have_attribute("data-state", "succeeded")
    expect(tool.locator(".tool-name")).to_have_text("current_time")
    expect(tool.locator("summary")).to_contain_text("timezone=")
    tool.locator("summary").click()
    expect(tool.locator(".tool-raw-args")).to_contain_text('"timezone": "Europe/Paris"')
    expect(page.locator("#live article")).to_have_count(0)


def test_markup_in_a_reply_is_shown_as_text_and_never_runs(page: Page) -> None:
    send(page, "evil reply please")
    reply = page.locator("#log article.assistant").last
    expect(reply).to_contain_text("<script>window.pwned=1</script>")
    expect(reply).to_contain_text('<img src=x onerror="window.pwned=2">')
    assert page.evaluate("() => window.pwned") is None
    assert page.locator("img[onerror]").count() == 0
    assert page.locator("#log img, #log script").count() == 0


def test_two_tabs_show_the_same_messages_and_decisions(
    new_context: Callable[..., BrowserContext], stack: Stack
) -> None:
    context = new_context()
    first = context.new_page()
    sign_in(first, stack)
    key = new_conversation(first, "two tabs")
    second = context.new_page()  # same cookie: the same browser, another tab
    second.goto(stack.base_url)
    # The conversation made in the first tab is the newest chat: the second opens it.
    expect(second.locator("#conversations button[aria-current=true]")).to_have_attribute(
        "data-key", key
    )
    expect(second.locator("#message")).to_be_enabled()
    send(first, "hello from the first tab")
    for tab in (first, second):
        expect(tab.locator("#log article.user")).to_have_text("hello from the first tab")
        expect(tab.locator("#log article.assistant strong")).to_have_text("bold")
    send(second, "save from the second tab")
    cards = [tab.locator("section.approval") for tab in (first, second)]
    for card in cards:
        expect(card.locator(".approval-outcome")).to_have_text("Waiting for your decision")
    cards[0].get_by_role("button", name="Deny").click()
    # Decided in the first tab: the second shows the outcome and can no longer answer.
    expect(cards[1].locator(".approval-outcome")).to_have_text("Denied")
    expect(cards[1].get_by_role("button", name="Approve once")).to_be_disabled()
    expect(second.locator("details.tool")).to_have_attribute("data-state", "denied")


def test_activity_in_a_conversation_not_shown_marks_it_unread(
    new_context: Callable[..., BrowserContext], stack: Stack
) -> None:
    context = new_context()
    first = context.new_page()
    sign_in(first, stack)
    busy = new_conversation(first, "busy")
    second = context.new_page()
    second.goto(stack.base_url)
    expect(second.locator("#message")).to_be_enabled()
    new_conversation(second, "elsewhere")
    send(first, "news for the other tab")
    item = second.locator(f'#conversations button[data-key="{busy}"]')
    expect(item).to_have_attribute("data-unread", "message")
    expect(item).to_have_attribute("aria-label", re.compile(r", unread$"))
    item.click()
    expect(second.locator("#log article.user")).to_have_text("news for the other tab")
    expect(item).not_to_have_attribute("data-unread", re.compile(".*"))


def test_a_phone_screen_has_no_horizontal_scroll(
    new_context: Callable[..., BrowserContext], stack: Stack
) -> None:
    page = new_context(viewport={"width": 375, "height": 740}, is_mobile=True).new_page()
    sign_in(page, stack)
    new_conversation(page, "phone")
    send(page, "tour on a small screen with a long unbroken word " + "x" * 120)
    expect(page.locator("details.tool")).to_have_attribute("data-state", "succeeded")
    expect(page.locator("#log article.assistant em")).to_have_text("evening")
    assert not overflows(page)
    page.get_by_role("button", name="Conversations").click()
    expect(page.locator("#sidebar")).to_be_visible()
    assert not overflows(page)


def overflows(page: Page) -> bool:
    """Whether the page is wider than its viewport (a horizontal scrollbar)."""
    return bool(
        page.evaluate(
            "() => document.documentElement.scrollWidth > document.documentElement.clientWidth"
        )
    )
