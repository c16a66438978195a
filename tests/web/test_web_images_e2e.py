"""Images in the web client, in Chromium at desktop and phone sizes against a real Mind and
Face: attached by the button, pasted or dropped, brought within the size rule in the browser
(what the Mind stored is checked: a JPEG of at most 2048 px and 5 MiB), shown as the picture
in the transcript with alternative text, enlarged in an accessible dialog, and shown again from
the history after a reload."""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Callable

import grpc
import pytest
from PIL import Image
from playwright.sync_api import BrowserContext, Page, expect
from web_stack import PRINCIPAL, Stack
from web_steps import new_conversation, sign_in

from tobe.v1 import mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e
MAX_BYTES = 5 * 1024 * 1024
VIEWPORTS = {
    "desktop": {"width": 1280, "height": 800},
    "phone": {"width": 390, "height": 844},
}

# A PNG wider than 2048 px made in the page, handed to the composer as a person's paste or
# drop would: a synthetic ClipboardEvent or DragEvent carrying it in a DataTransfer.
GIVE_PNG = """
async ([kind, width, height]) => {
  const canvas = new OffscreenCanvas(width, height);
  const context = canvas.getContext("2d");
  context.fillStyle = "#2a7";
  context.fillRect(0, 0, width, height);
  context.fillStyle = "#d33";
  context.fillRect(0, 0, width / 2, height / 2);
  const blob = await canvas.convertToBlob({ type: "image/png" });
  const file = new File([blob], `${kind}.png`, { type: "image/png" });
  const data = new DataTransfer();
  data.items.add(file);
  if (kind === "pasted") {
    const init = { clipboardData: data, bubbles: true, cancelable: true };
    document.getElementById("message").dispatchEvent(new ClipboardEvent("paste", init));
  } else {
    const target = document.getElementById("scroller");
    const init = { dataTransfer: data, bubbles: true, cancelable: true };
    for (const type of ["dragenter", "dragover", "drop"]) {
      target.dispatchEvent(new DragEvent(type, init));
    }
  }
  return blob.size;
}
"""


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (40, 90, 200)).save(out, "PNG")
    return out.getvalue()


def _opened(
    new_context: Callable[..., BrowserContext], stack: Stack, size: str
) -> tuple[Page, str, list[tuple[str, tuple[int, int]]]]:
    """A signed-in page on a new conversation, and the images its sendChat frames carry
    (media type, pixel size), as they leave the browser."""
    page = new_context(viewport=VIEWPORTS[size]).new_page()
    sent: list[tuple[str, tuple[int, int]]] = []

    def frame_sent(payload: str | bytes) -> None:
        if isinstance(payload, bytes) or "sendChat" not in payload:
            return
        for image in json.loads(payload)["mind"]["sendChat"].get("images", []):
            with Image.open(io.BytesIO(base64.b64decode(image["data"]))) as decoded:
                sent.append((image["mediaType"], decoded.size))

    page.on("websocket", lambda socket: socket.on("framesent", frame_sent))
    sign_in(page, stack)
    return page, new_conversation(page, "pictures"), sent


def _send_attached(page: Page) -> None:
    expect(page.locator("#attachments li")).not_to_have_count(0)
    page.press("#message", "Enter")
    expect(page.locator("#attachments")).to_be_hidden()


def _stored_images(stack: Stack, key: str) -> list[tuple[str, int, tuple[int, int]]]:
    """What the Mind holds for each image of the person's messages: media type, byte size and
    pixel size, read back with GetImage."""
    who = mind_pb2.OnBehalfOf(principal=PRINCIPAL, scopes=["chat"])
    found = []
    with grpc.insecure_channel(stack.mind.address) as channel:
        stub = mind_pb2_grpc.MindStub(channel)
        for message in stack.history(key).messages:
            for ref in message.images:
                image = stub.GetImage(
                    mind_pb2.GetImageRequest(
                        on_behalf_of=who, conversation_key=key, digest=ref.digest
                    ),
                    metadata=stack.mind.gateway_metadata,
                    timeout=15,
                )
                with Image.open(io.BytesIO(image.data)) as decoded:
                    found.append((image.media_type, len(image.data), decoded.size))
    return found


def _expect_pictures_shown(page: Page, count: int) -> None:
    pictures = page.locator("#log article.user button.picture img")
    expect(pictures).to_have_count(count)
    for index in range(count):
        picture = pictures.nth(index)
        expect(picture).to_have_attribute("src", re.compile(r"^blob:"))
        expect(picture).to_have_attribute("alt", "image sent by you")
        # The picture itself was decoded, not a broken image.
        decoded = "img => img.complete && img.naturalWidth > 0"
        page.wait_for_function(decoded, arg=picture.element_handle())


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_an_attached_image_is_sent_within_the_limits_shown_enlarged_and_kept_in_history(
    new_context: Callable[..., BrowserContext], stack: Stack, size: str
) -> None:
    page, key, sent = _opened(new_context, stack, size)
    page.set_input_files(
        "#files", files=[{"name": "wide.png", "mimeType": "image/png", "buffer": _png(3000, 1200)}]
    )
    chip = page.locator("#attachments li")
    expect(chip).to_contain_text("wide.png")
    thumbnail = chip.locator("img.thumbnail")
    expect(thumbnail).to_have_attribute("alt", "wide.png")
    page.wait_for_function("img => img.naturalWidth > 0", arg=thumbnail.element_handle())
    _send_attached(page)

    # Resized in the browser, and stored as it came.
    assert sent == [("image/jpeg", (2048, 819))]
    [(media_type, length, pixels)] = _stored_images(stack, key)
    assert (media_type, pixels) == ("image/jpeg", (2048, 819)) and length <= MAX_BYTES
    _expect_pictures_shown(page, 1)

    # The larger view: a modal dialog with the picture and its text, closed by Esc or its
    # button, giving the focus back to the picture that opened it.
    picture = page.locator("#log button.picture").first
    viewer = page.locator("#image-viewer")
    for close in ("Escape", "button"):
        picture.click()
        expect(viewer).to_be_visible()
        expect(viewer.locator("img")).to_have_attribute("alt", "image sent by you")
        expect(viewer.locator(".caption")).to_have_text("image sent by you")
        expect(viewer.get_by_role("button", name="Close the larger view (Esc)")).to_be_focused()
        box = viewer.locator("img").bounding_box()
        assert box and box["width"] <= VIEWPORTS[size]["width"]
        if close == "Escape":
            page.keyboard.press("Escape")
        else:
            viewer.get_by_role("button", name="Close the larger view (Esc)").click()
        expect(viewer).to_be_hidden()
        expect(picture).to_be_focused()

    # Opened again from the history: the picture is fetched and shown.
    page.reload()
    expect(page.locator("#message")).to_be_enabled()
    _expect_pictures_shown(page, 1)


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_a_pasted_and_a_dropped_image_arrive_as_jpegs_within_the_limits(
    new_context: Callable[..., BrowserContext], stack: Stack, size: str
) -> None:
    page, key, sent = _opened(new_context, stack, size)
    for kind, width, height in (("pasted", 2600, 900), ("dropped", 700, 4100)):
        page.evaluate(GIVE_PNG, [kind, width, height])
        expect(page.locator("#attachments li")).to_contain_text(f"{kind}.png")
        _send_attached(page)
    _expect_pictures_shown(page, 2)
    expected = [("image/jpeg", (2048, 709)), ("image/jpeg", (350, 2048))]
    assert sent == expected
    stored = _stored_images(stack, key)
    assert [(media_type, pixels) for media_type, _, pixels in stored] == expected
    assert all(length <= MAX_BYTES for _, length, _ in stored)


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_a_picture_a_hands_tool_returned_is_shown_with_its_alternative_text(
    new_context: Callable[..., BrowserContext], stack: Stack, size: str
) -> None:
    page, _, _ = _opened(new_context, stack, size)
    page.fill("#message", "screenshot please")
    page.press("#message", "Enter")
    expect(page.locator("#log article.assistant").last).to_contain_text("Here is the screen.")
    picture = page.locator("#log article.tool-images img")
    expect(picture).to_have_count(1)
    expect(picture).to_have_attribute("src", re.compile(r"^blob:"))
    expect(picture).to_have_attribute("alt", "image returned by laptop__snap_screen")
    decoded = "img => img.complete && img.naturalWidth === 320"
    page.wait_for_function(decoded, arg=picture.element_handle())
    # Shown again from the history after a reload.
    page.reload()
    expect(page.locator("#log article.tool-images img")).to_have_count(1)
