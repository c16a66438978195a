"""Branching in the web client, in Chromium at desktop and phone sizes against a real Mind and
Face: a message's Branch button opens a new conversation holding the history up to that
message, which says where it came from and opens its origin, untouched, again."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, expect
from web_stack import Stack
from web_steps import new_conversation, send, sign_in

pytestmark = pytest.mark.e2e
VIEWPORTS = {
    "desktop": {"width": 1280, "height": 800},
    "phone": {"width": 390, "height": 844},
}
ANSWER = "You said something; here is bold."


@pytest.mark.parametrize("size", VIEWPORTS)
def test_branch_from_here_opens_a_branch_that_shows_where_it_came_from(
    new_context: Callable[..., BrowserContext], stack: Stack, size: str
) -> None:
    page = new_context(viewport=VIEWPORTS[size]).new_page()
    sign_in(page, stack)
    key = new_conversation(page, "plans")
    title = page.locator("#conversation-title").inner_text()
    answers = page.locator("#log article.assistant").filter(has_text=ANSWER)
    send(page, "first thought")
    expect(answers).to_have_count(1)
    send(page, "second thought")
    expect(answers).to_have_count(2)
    first = answers.first
    message_id = first.get_attribute("data-message-id")
    origin = page.locator("#branch-origin")
    expect(origin).to_be_hidden()

    first.get_by_role("button", name="Branch from here").click()

    expect(page.locator("#conversation-title")).to_have_text(f"{title} (branch)")
    expect(origin).to_be_visible()
    expect(origin).to_have_text(f"Branched from {title} at message #{message_id}")
    log = page.locator("#log")
    expect(log.locator("article.user")).to_have_text(["first thought"])
    expect(log.locator("article.assistant")).to_have_count(1)
    current = page.locator("#conversations button[aria-current=true]")
    branch = current.get_attribute("data-key")
    assert branch and branch != key

    send(page, "on the branch")
    expect(answers).to_have_count(2)
    page.locator("#branch-origin-open").click()  # the origin, opened from the branch
    expect(page.locator("#conversation-title")).to_have_text(title)
    expect(origin).to_be_hidden()
    expect(log.locator("article.user")).to_have_text(["first thought", "second thought"])
