"""The web client checked by axe-core in a real headless Chromium, at desktop and phone sizes:
the pairing page, a long conversation with a tool call and an approval waiting, and the
conversation's settings (the details panel) have no serious or critical violation; and every
control, the scrolling transcript included, is reached by keyboard and shows where the focus is.

axe-core is the copy scripts/vendor_web.py puts in static/vendor, loaded into the page under
test from the Face (allowed by the page's own CSP); index.html never loads it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from web_stack import LONG_REPLY_LINES, Stack
from web_steps import new_conversation, send, sign_in

pytestmark = pytest.mark.e2e

SIZES: dict[str, dict[str, Any]] = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True},
}
BLOCKING = ("serious", "critical")
RUN_AXE = """async () => {
  const results = await axe.run(document, { resultTypes: ["violations"] });
  return results.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")),
  }));
}"""
# The focused element: a name for it, and whether its focus ring can be seen.
FOCUSED = """() => {
  const node = document.activeElement;
  if (node === null || node === document.body) return null;
  const style = getComputedStyle(node);
  const ring = style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0;
  // Which of the page's focusable elements it is: several may share a name ("Copy message").
  const place = [...document.querySelectorAll("*")].indexOf(node);
  const name = node.id || node.getAttribute("aria-label") || node.textContent.trim();
  return { name, ring, place };
}"""
TAB_LIMIT = 120


@pytest.fixture(params=list(SIZES))
def sized(request: pytest.FixtureRequest, new_context: Callable[..., BrowserContext]) -> Page:
    """A page at the screen size under test."""
    return new_context(**SIZES[str(request.param)]).new_page()


def blocking_violations(page: Page, stack: Stack) -> list[dict[str, Any]]:
    """axe-core's serious and critical findings on the page as it is now."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(url=f"{stack.base_url}vendor/axe.min.js")
    found: list[dict[str, Any]] = page.evaluate(RUN_AXE)
    return [violation for violation in found if violation["impact"] in BLOCKING]


def tab_through(page: Page) -> dict[str, bool]:
    """Each control Tab reaches from the top of the page (name → focus ring seen)."""
    page.evaluate("() => document.activeElement?.blur()")
    reached: dict[str, bool] = {}
    seen: set[int] = set()
    for _ in range(TAB_LIMIT):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED)
        if focused is None:  # past the last control, before the first again
            continue
        if focused["place"] in seen:  # round the page once
            break
        seen.add(focused["place"])
        reached[focused["name"]] = reached.get(focused["name"], True) and focused["ring"]
    return reached


def long_text(page: Page, stack: Stack) -> None:
    """A conversation taller than the screen with nothing but text in it (nothing in the
    transcript takes the focus by itself)."""
    sign_in(page, stack)
    new_conversation(page, "accessible")
    send(page, "long reply please")
    expect(page.locator("#log article.assistant li")).to_have_count(LONG_REPLY_LINES)


def with_tool_and_approval(page: Page) -> None:
    """Then a tool call, and an approval waiting."""
    send(page, "tour of the day")
    expect(page.locator("details.tool")).to_have_attribute("data-state", "succeeded")
    send(page, "save my plan")
    expect(page.locator("section.approval .approval-outcome")).to_have_text(
        "Waiting for your decision"
    )


def test_the_pairing_page_has_no_serious_violation_and_is_reached_by_keyboard(
    sized: Page, stack: Stack
) -> None:
    sized.goto(stack.base_url)
    expect(sized.locator("#signin")).to_be_visible()
    sized.fill("#code", "not a code")
    sized.press("#code", "Enter")  # the error message is part of what is checked
    expect(sized.locator("#signin-message")).to_be_visible()
    assert blocking_violations(sized, stack) == []
    reached = tab_through(sized)
    assert {"code", "signin-button"} <= reached.keys()
    assert all(reached.values()), reached


def test_a_long_conversation_has_no_serious_violation_and_its_transcript_scrolls_by_keyboard(
    sized: Page, stack: Stack
) -> None:
    long_text(sized, stack)
    assert blocking_violations(sized, stack) == []
    with_tool_and_approval(sized)
    assert blocking_violations(sized, stack) == []
    reached = tab_through(sized)
    # The transcript itself takes the focus, so it scrolls by keyboard; so do the answers.
    assert {"scroller", "message", "send", "signout", "toggle-details"} <= reached.keys()
    assert {"Approve once", "Deny"} <= reached.keys()
    assert all(reached.values()), reached
    scroller = sized.locator("#scroller")
    scroller.focus()
    scroller.evaluate("s => { s.scrollTop = s.scrollHeight; }")
    sized.keyboard.press("Home")
    expect(scroller).to_have_js_property("scrollTop", 0)


def test_the_conversation_settings_have_no_serious_violation_and_are_reached_by_keyboard(
    sized: Page, stack: Stack
) -> None:
    long_text(sized, stack)
    with_tool_and_approval(sized)
    sized.get_by_role("button", name="Details").click()
    expect(sized.locator("#details")).to_be_visible()
    expect(sized.locator("#usage-summary")).to_contain_text("tokens in")
    assert blocking_violations(sized, stack) == []
    reached = tab_through(sized)
    assert {"close-details", "profile-select"} <= reached.keys()
    assert all(reached.values()), reached
