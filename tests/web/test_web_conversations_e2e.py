"""The conversation list in a real headless Chromium against a real Mind and Face, at desktop
and phone sizes: a rename made in one tab renames the list and header in another, archiving
takes a conversation out of the list until "Show archived", and the search box finds a
conversation by a word said only in one of its messages, showing the snippet, and opens it at
that message, scrolled into view and highlighted."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import pytest
from helpers.eventually import eventually
from playwright.sync_api import BrowserContext, Page, expect
from web_stack import Stack
from web_steps import new_conversation, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]

SIZES = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True},
}


@pytest.fixture(params=list(SIZES))
def context(
    request: pytest.FixtureRequest, new_context: Callable[..., BrowserContext]
) -> BrowserContext:
    return new_context(**SIZES[request.param])


def list_item(page: Page, key: str):  # type: ignore[no-untyped-def]
    return page.locator(f'#conversations button[data-key="{key}"]')


def show_list(page: Page) -> None:
    # A tab just opened shows a conversation first (closing the list on a phone): wait for it.
    expect(page.locator("#message")).to_be_enabled()
    toggle = page.locator("#toggle-list")
    if toggle.is_visible() and toggle.get_attribute("aria-expanded") != "true":
        toggle.click()
    expect(page.locator("#search")).to_be_visible()


def open_details(page: Page) -> None:
    page.get_by_role("button", name="Details").click()
    expect(page.locator("#rename-title")).to_be_visible()


def close_details(page: Page) -> None:
    page.locator("#close-details").click()
    expect(page.locator("#details")).to_be_hidden()


def test_a_rename_in_one_tab_renames_the_list_and_header_in_another(
    context: BrowserContext, stack: Stack
) -> None:
    first = context.new_page()
    sign_in(first, stack)
    key = new_conversation(first, "before")
    second = context.new_page()  # the same browser, another tab: signed in by its cookie
    second.goto(stack.base_url)
    show_list(second)
    list_item(second, key).click()
    expect(second.locator("#conversation-title")).to_have_text(
        first.locator("#conversation-title").inner_text()
    )

    title = f"Holiday plans {uuid.uuid4().hex[:6]}"
    open_details(first)
    first.fill("#rename-title", f"  {title}  ")
    first.click("#rename")
    expect(first.locator("#conversation-title")).to_have_text(title)
    expect(second.locator("#conversation-title")).to_have_text(title)
    expect(list_item(second, key)).to_have_text(title)
    assert stack.snapshot(key).conversation.title == title

    first.fill("#rename-title", "   ")
    first.click("#rename")
    expect(first.locator("#rename-error")).to_have_text("Give the conversation a name.")
    assert stack.snapshot(key).conversation.title == title


def test_archiving_hides_a_conversation_until_show_archived_and_unarchiving_brings_it_back(
    context: BrowserContext, stack: Stack
) -> None:
    page = context.new_page()
    sign_in(page, stack)
    key = new_conversation(page, "to archive")
    open_details(page)
    page.click("#archive")
    expect(page.locator("#archive")).to_have_text("Unarchive")
    assert stack.snapshot(key).conversation.archived
    close_details(page)
    show_list(page)
    expect(list_item(page, key)).to_have_count(0)

    page.check("#show-archived")
    expect(list_item(page, key)).to_contain_text("archived")
    page.uncheck("#show-archived")
    expect(list_item(page, key)).to_have_count(0)

    page.reload()  # the Mind's list leaves it out too
    expect(page.locator("#message")).to_be_enabled()  # booted: the newest conversation is open
    show_list(page)
    expect(page.locator("#conversations button").first).to_be_visible()
    expect(list_item(page, key)).to_have_count(0)
    page.check("#show-archived")
    list_item(page, key).click()
    open_details(page)
    # The settings show the archived conversation before it can be unarchived.
    expect(page.locator("#archive")).to_have_text("Unarchive")
    page.click("#archive")
    expect(page.locator("#archive")).to_have_text("Archive")
    assert not stack.snapshot(key).conversation.archived
    close_details(page)
    show_list(page)
    page.uncheck("#show-archived")
    expect(list_item(page, key)).to_be_visible()
    expect(list_item(page, key)).not_to_contain_text("archived")


def test_search_finds_a_conversation_by_a_word_only_in_a_message_and_shows_the_snippet(
    context: BrowserContext, stack: Stack
) -> None:
    page = context.new_page()
    sign_in(page, stack)
    word = f"okapi{uuid.uuid4().hex[:6]}"
    key = new_conversation(page, "Zoo visit")
    new_conversation(page, "Something else")  # the one shown is not the one searched for
    stack.say(key, f"did you know the {word} lives in the rainforest")
    show_list(page)
    page.fill("#search", word)
    item = list_item(page, key)
    expect(item.locator(".snippet")).to_contain_text(f"the {word} lives")
    expect(page.locator("#conversations button")).to_have_count(1)
    page.fill("#search", "zoo visit")  # by title: at once, without a snippet
    expect(item).to_be_visible()
    item.click()
    expect(page.locator("#conversation-title")).to_contain_text("Zoo visit")


def test_a_search_result_opens_its_conversation_at_the_message_found_highlighted(
    context: BrowserContext, stack: Stack
) -> None:
    page = context.new_page()
    sign_in(page, stack)
    word = f"tapir{uuid.uuid4().hex[:6]}"
    key = new_conversation(page, "Long chat")
    new_conversation(page, "Something else")  # the one shown is not the one searched for
    stack.say(key, f"the {word} sleeps by the river")
    # Enough turns after it that it is neither on screen nor in a default snapshot (50).
    for turn in range(30):
        stack.say(key, f"later turn {turn}")
    history = eventually(
        lambda: stack.history(key).messages,
        until=lambda messages: len(messages) >= 62,
        what="every turn answered",
        timeout=60,
    )
    found_id = next(m.id for m in history if word in m.text)

    show_list(page)
    page.fill("#search", word)
    item = list_item(page, key)
    expect(item.locator(".snippet")).to_contain_text(word)
    item.click()
    expect(page.locator("#conversation-title")).to_contain_text("Long chat")
    message = page.locator(f'#log [data-message-id="{found_id}"]')
    expect(message).to_have_class(re.compile(r"\bfound\b"))
    expect(message).to_contain_text(word)
    expect(message).to_be_in_viewport()
    expect(page.locator("#log .found")).to_have_count(1)
