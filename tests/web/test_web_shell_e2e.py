"""The web client's frame at desktop (1280×800) and phone (390×844) sizes in a real headless
Chromium: long titles are cut short with the whole title on hover, the phone's header keeps room
for the title, wide Markdown tables scroll instead of breaking words letter by letter, text
people or models wrote in Hebrew or Arabic runs right to left, what happens while the tab is
hidden is notified (once the person opts in) and counted in its title, and the app installs
(manifest, icons, a service worker for its shell)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from web_stack import Stack, off_loop
from web_steps import new_conversation, send, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]

SIZES = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}
LONG_TITLE = "A very long conversation title about " + " and ".join(["the summer holiday"] * 7)


@pytest.fixture(params=list(SIZES), ids=list(SIZES))
def size(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def sized(size: str, new_context: Callable[..., BrowserContext], stack: Stack) -> Page:
    """A signed-in page at desktop or phone size."""
    page = new_context(**SIZES[size]).new_page()
    sign_in(page, stack)
    return page


def overflows(page: Page) -> bool:
    return bool(
        page.evaluate(
            "() => document.documentElement.scrollWidth > document.documentElement.clientWidth"
        )
    )


def test_a_long_title_is_cut_short_whole_on_hover_and_the_header_keeps_room_for_it(
    sized: Page,
) -> None:
    new_conversation(sized, LONG_TITLE, unique=False)
    heading = sized.locator("#conversation-title")
    expect(heading).to_have_attribute("title", LONG_TITLE)
    box = heading.bounding_box()
    assert box is not None
    width = sized.viewport_size["width"] if sized.viewport_size else 0
    # The title gets most of the header (on a phone: well over 1-3 characters' width).
    assert box["width"] >= width * 0.4, box
    # It is cut with an ellipsis, on one line, not pushing the page wider.
    clipped = heading.evaluate(
        "node => [node.scrollWidth > node.clientWidth, getComputedStyle(node).textOverflow]"
    )
    assert clipped == [True, "ellipsis"]
    assert box["height"] < 50
    assert not overflows(sized)
    toggle = sized.locator("#toggle-list")
    if toggle.is_visible():
        toggle.click()
    item = sized.locator("#conversations button[aria-current=true]")
    expect(item).to_have_attribute("title", LONG_TITLE)
    item_box = item.bounding_box()
    assert item_box is not None and item_box["height"] < 60
    assert not overflows(sized)


def test_a_wide_table_scrolls_sideways_and_a_long_url_wraps(sized: Page) -> None:
    new_conversation(sized, "tables")
    send(sized, "wide table please")
    table = sized.locator("#log article.assistant table")
    expect(table).to_be_visible()
    # No cell is broken into a column of letters: each word stays on one line.
    lines = table.locator("td, th").evaluate_all(
        "cells => cells.map(c => Math.round(c.getBoundingClientRect().height"
        " / parseFloat(getComputedStyle(c).lineHeight)))"
    )
    assert lines and max(lines) <= 2, lines
    reply = sized.locator("#log article.assistant").last
    reply_width = reply.evaluate("node => node.getBoundingClientRect().width")
    table_fits = table.evaluate("node => node.getBoundingClientRect().width")
    assert table_fits <= reply_width
    if sized.viewport_size and sized.viewport_size["width"] < 500:
        # Wider than a phone: the table itself scrolls, the page does not.
        assert table.evaluate("node => node.scrollWidth > node.clientWidth")
    assert not overflows(sized)
    url = reply.locator("p", has_text="https://example.com/a/very/long")
    url_box = url.bounding_box()
    assert url_box is not None and url_box["width"] <= reply_width


def test_hebrew_and_arabic_run_right_to_left_where_people_and_models_wrote_them(
    sized: Page,
) -> None:
    new_conversation(sized, "مرحبا بالعالم", unique=False)
    direction = "node => getComputedStyle(node).direction"
    assert sized.locator("#conversation-title").evaluate(direction) == "rtl"
    expect(sized.locator("#message")).to_have_attribute("dir", "auto")
    sized.fill("#message", "שלום עולם")
    assert sized.locator("#message").evaluate(direction) == "rtl"
    send(sized, "שלום, מה שלומך?")
    user = sized.locator("#log article.user p")
    expect(user).to_have_text("שלום, מה שלומך?")
    assert user.evaluate(direction) == "rtl"
    reply = sized.locator("#log article.assistant").last
    expect(reply.locator("strong")).to_have_text("תשובה")
    paragraphs = reply.locator(".md p")
    assert paragraphs.evaluate_all(f"nodes => nodes.map({direction})") == ["rtl", "rtl"]
    # Latin text stays left to right beside it.
    send(sized, "plain English")
    english = sized.locator("#log article.user p").last
    expect(english).to_have_text("plain English")
    assert english.evaluate(direction) == "ltr"


# The browser's Notification API, recorded (a test cannot see system notifications): permission
# starts unasked and is granted when asked. And a tab the test hides and shows again.
FAKE_BROWSER = """
window.asked = 0;
window.shown = [];
window.Notification = class {
  static permission = "default";
  static async requestPermission() {
    window.asked += 1;
    window.Notification.permission = "granted";
    return "granted";
  }
  constructor(title, options) { window.shown.push({ title, body: options.body, note: this }); }
  close() {}
};
window.tabHidden = false;
Object.defineProperty(document, "visibilityState", {
  get: () => (window.tabHidden ? "hidden" : "visible"),
});
Object.defineProperty(document, "hidden", { get: () => window.tabHidden });
"""
HIDE_TAB = (
    "hidden => { window.tabHidden = hidden;"
    " document.dispatchEvent(new Event('visibilitychange')); }"
)


def test_a_reply_and_an_approval_while_the_tab_is_hidden_are_notified_and_counted(
    size: str, new_context: Callable[..., BrowserContext], stack: Stack
) -> None:
    context = new_context(**SIZES[size])
    context.add_init_script(FAKE_BROWSER)
    page = context.new_page()
    sign_in(page, stack)
    key = new_conversation(page, "notified")
    title = page.locator("#conversation-title").text_content()
    new_conversation(page, "elsewhere")
    toggle = page.locator("#toggle-list")
    if toggle.is_visible():
        toggle.click()
    page.get_by_label("Notify me while this tab is hidden").check()
    expect(page.locator("#notify-toggle")).to_be_checked()
    assert page.evaluate("() => window.asked") == 1
    expect(page).to_have_title("ToBe")

    page.evaluate(HIDE_TAB, True)
    off_loop(stack.say, key, "hello from another device")
    page.wait_for_function("() => window.shown.length >= 1")
    expect(page).to_have_title("(1) ToBe")
    off_loop(stack.say, key, "save it from another device")
    page.wait_for_function("() => window.shown.length >= 2")
    expect(page).to_have_title("(2) ToBe")
    shown = page.evaluate("() => window.shown.map(({ title, body }) => [title, body])")
    assert shown == [
        [title, "You said something; here is **bold**."],
        [title, "Waiting for your approval: laptop__save_note"],
    ]
    # Shown again: the count is gone; a click on a notification opens its conversation.
    page.evaluate(HIDE_TAB, False)
    expect(page).to_have_title("ToBe")
    page.evaluate("() => window.shown[1].note.onclick()")
    expect(page.locator("#conversation-title")).to_have_text(title or "")
    expect(page.locator("section.approval .approval-outcome")).to_have_text(
        "Waiting for your decision"
    )
    # While the tab is in view nothing is notified.
    send(page, "while looking")
    expect(page.locator("#log article.assistant")).to_have_count(2)
    assert page.evaluate("() => window.shown.length") == 2


def test_the_app_is_installable_with_a_manifest_icons_and_a_shell_service_worker(
    sized: Page, stack: Stack
) -> None:
    link = sized.locator("link[rel=manifest]").get_attribute("href")
    assert link
    response = sized.request.get(stack.base_url + link)
    assert response.ok
    assert response.headers["content-type"].startswith("application/manifest+json")
    manifest = response.json()
    assert manifest["name"] == "ToBe" and manifest["display"] == "standalone"
    sizes = set()
    for icon in manifest["icons"]:
        served = sized.request.get(stack.base_url + icon["src"])
        assert served.ok and served.headers["content-type"].startswith(icon["type"])
        if icon["type"] == "image/png":
            body = served.body()
            width = int.from_bytes(body[16:20], "big")
            assert icon["sizes"] == f"{width}x{width}"
            sizes.add(width)
    assert {192, 512} <= sizes
    worker = sized.evaluate("async () => (await navigator.serviceWorker.ready).active.scriptURL")
    assert worker == stack.base_url + "sw.js"


def test_a_message_and_a_code_block_copy_to_the_clipboard_and_the_list_searches_titles(
    size: str, new_context: Callable[..., BrowserContext], stack: Stack
) -> None:
    context = new_context(**SIZES[size])
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=stack.base_url[:-1])
    page = context.new_page()
    sign_in(page, stack)
    needle = new_conversation(page, "needle in the haystack")
    title = page.locator("#conversation-title").text_content() or ""
    new_conversation(page, "something else")
    send(page, "tour of the day")
    reply = page.locator("#log article.assistant").last
    expect(reply.locator("em")).to_have_text("evening")
    read = "() => navigator.clipboard.readText()"
    reply.locator(".code-block").get_by_role("button", name="Copy code").click()
    assert page.evaluate(read) == "print('hi')\n"
    reply.get_by_role("button", name="Copy message").click()
    assert page.evaluate(read).startswith("It is *evening* in Paris.")
    page.locator("#log article.user").get_by_role("button", name="Copy message").click()
    assert page.evaluate(read) == "tour of the day"
    # The message itself reads as written (the button's word is drawn, not text).
    expect(page.locator("#log article.user")).to_have_text("tour of the day")

    toggle = page.locator("#toggle-list")
    if toggle.is_visible():
        toggle.click()
    page.get_by_label("Search conversations").fill(title.upper()[len("needle ") :])
    items = page.locator("#conversations button[data-key]")
    expect(items).to_have_count(1)
    expect(items).to_have_attribute("data-key", needle)
    page.get_by_label("Search conversations").fill("no such title anywhere")
    expect(items).to_have_count(0)
    expect(page.locator("#conversations .empty")).to_have_text(
        "No conversation has that in its title or messages"
    )
