"""Replying in the web client, in Chromium at desktop and phone sizes against a real Mind and
Face: a message's Reply button (reached by the keyboard) shows the quoted message above the
composer with a cancel button; the message sent carries `replyTo`, the Mind stores it, the model
sees the quote line, and the transcript shows the quote above the message, again after a
reload. A forwarded chat record shows as a card of its items with their pictures."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable

import grpc
import pytest
from PIL import Image
from playwright.sync_api import BrowserContext, Page, expect
from web_stack import PRINCIPAL, Stack
from web_steps import new_conversation, send, sign_in

from tobe.v1 import common_pb2, mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e
VIEWPORTS = {
    "desktop": {"width": 1280, "height": 800},
    "phone": {"width": 390, "height": 844},
}
ANSWER = "You said something; here is bold."


def _reply_to_the_answer(page: Page) -> str:
    """Press the answer's Reply button from the keyboard; the answer's message id."""
    answer = page.locator("#log article.assistant").filter(has_text=ANSWER).last
    expect(answer).to_be_visible()
    button = answer.get_by_role("button", name="Reply to ToBe's message")
    button.focus()
    page.keyboard.press("Enter")
    message_id = answer.get_attribute("data-message-id")
    assert message_id and message_id != "0"
    return message_id


@pytest.mark.parametrize("size", VIEWPORTS)
def test_a_reply_shows_its_quote_is_sent_with_reply_to_and_is_shown_above_the_message(
    new_context: Callable[..., BrowserContext], stack: Stack, size: str
) -> None:
    page = new_context(viewport=VIEWPORTS[size]).new_page()
    sent: list[dict[str, object]] = []

    def frame_sent(payload: str | bytes) -> None:
        if isinstance(payload, str) and "sendChat" in payload:
            sent.append(json.loads(payload)["mind"]["sendChat"])

    page.on("websocket", lambda socket: socket.on("framesent", frame_sent))
    sign_in(page, stack)
    key = new_conversation(page, "quotes")
    send(page, "hello quotes")

    preview = page.locator("#reply-preview")
    expect(preview).to_be_hidden()
    _reply_to_the_answer(page)
    expect(preview).to_be_visible()
    expect(preview).to_contain_text(f"ToBe: {ANSWER.replace('bold', '**bold**')}")
    expect(page.locator("#message")).to_be_focused()
    page.get_by_role("button", name="Cancel the reply").click()
    expect(preview).to_be_hidden()

    quoted = _reply_to_the_answer(page)
    expect(preview).to_be_visible()
    send(page, "quoting that reply")
    expect(preview).to_be_hidden()

    mine = page.locator("#log article.user").filter(has_text="quoting that reply")
    quote = mine.locator("blockquote.quote")
    shown = f"assistant: {ANSWER.replace('bold', '**bold**')}"
    expect(quote).to_have_text(shown)
    expect(quote).to_have_attribute("data-quoted-id", quoted)
    # The model's request started with the quote line (the scripted answer expects it).
    expect(
        page.locator("#log article.assistant").filter(has_text="Quote received.")
    ).to_be_visible()
    assert [frame.get("replyTo") for frame in sent] == [None, quoted]
    [stored] = [m for m in stack.history(key).messages if m.text == "quoting that reply"]
    assert stored.reply_to == int(quoted)

    _forward(stack, key)
    card = page.locator("#log article.user section.forwarded")
    expect(card).to_have_attribute("aria-label", "Forwarded chat record, 2 messages")
    expect(card.locator("li")).to_have_text(["bob: look at this", "carol: nice"])
    picture = card.locator("li").first.locator("img")
    expect(picture).to_have_attribute("alt", "image forwarded from bob")
    expect(picture).to_have_attribute("src", re.compile(r"^blob:"))

    page.reload()
    expect(page.locator("#message")).to_be_enabled()
    again = page.locator("#log article.user").filter(has_text="quoting that reply")
    expect(again.locator("blockquote.quote")).to_have_text(shown)
    expect(page.locator("#log section.forwarded li")).to_have_count(2)


def _forward(stack: Stack, key: str) -> None:
    """A message forwarding a two-item record (the first with a picture), as a client sends it."""
    png = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 40, 40)).save(png, "PNG")
    record = [
        common_pb2.ForwardedItemUpload(
            speaker="bob",
            text="look at this",
            images=[common_pb2.ImageUpload(media_type="image/png", data=png.getvalue())],
        ),
        common_pb2.ForwardedItemUpload(speaker="carol", text="nice"),
    ]
    with grpc.insecure_channel(stack.mind.address) as channel:
        mind_pb2_grpc.MindStub(channel).SendChat(
            mind_pb2.SendChatRequest(
                on_behalf_of=mind_pb2.OnBehalfOf(principal=PRINCIPAL, scopes=["chat"]),
                conversation_key=key,
                text="forwarded for you",
                idempotency_key=f"forward-{key}",
                forwarded=record,
            ),
            metadata=stack.mind.gateway_metadata,
            timeout=15,
        )
