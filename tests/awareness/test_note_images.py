"""Which of a note's media become images: fetched only when Awareness says image, accepted
only when the bytes are one, at most `max_images`; every other case is one log line."""

from __future__ import annotations

import hashlib
import logging

import pytest
from awareness_images import gif, png

from mind.awareness.errors import AwarenessLinkError
from mind.awareness.images import NoteImages
from mind.awareness.notes import NoteMedia

PNG = png(2, 2)
GIF = gif(3, 3)
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 8


class Store:
    """Awareness's media as GetMedia answers: ref -> (declared type, bytes) or a refusal."""

    def __init__(self, objects: dict[str, tuple[str, bytes] | AwarenessLinkError]) -> None:
        self.objects = objects
        self.asked: list[tuple[str, int]] = []

    async def get_media(self, ref: str, max_bytes: int) -> tuple[str, bytes]:
        self.asked.append((ref, max_bytes))
        found = self.objects[ref]
        if isinstance(found, AwarenessLinkError):
            raise found
        return found


def _images(store: Store, max_count: int = 8) -> NoteImages:
    return NoteImages(store, max_bytes=1000, max_count=max_count)


async def test_images_are_fetched_once_each_with_the_readable_limit_and_typed_by_their_bytes():
    # Awareness named the WebP by its filename; the bytes say what it is.
    store = Store({"media:p": ("image/png", PNG), "media:w": ("image/gif", WEBP)})
    media = [NoteMedia("media:p", "image/png"), NoteMedia("media:w", "image/gif")]
    images = await _images(store).fetch([*media, media[0]])
    assert [(i.digest, i.media_type, i.data) for i in images] == [
        (hashlib.sha256(PNG).hexdigest(), "image/png", PNG),
        (hashlib.sha256(WEBP).hexdigest(), "image/webp", WEBP),
    ]
    # Asked for up to what the Mind reads to bring an image within the limit (4 × 1000).
    assert store.asked == [("media:p", 4000), ("media:w", 4000)]


async def test_media_awareness_does_not_call_an_image_is_not_fetched():
    store = Store({})
    media = [NoteMedia("media:d", "application/pdf"), NoteMedia("media:t", "text/plain")]
    assert await _images(store).fetch(media) == ()
    assert store.asked == []


async def test_bytes_that_are_not_an_image_are_left_out_and_logged(
    caplog: pytest.LogCaptureFixture,
):
    store = Store({"media:x": ("image/png", b"plain text named x.png"), "media:g": ("", GIF)})
    media = [NoteMedia("media:x", "image/png"), NoteMedia("media:g", "image/gif")]
    with caplog.at_level(logging.WARNING, logger="mind.awareness.images"):
        images = await _images(store).fetch(media)
    assert [i.media_type for i in images] == ["image/gif"]
    [line] = caplog.messages
    assert "media:x" in line and "not a PNG, JPEG, WebP or GIF" in line
    assert "plain text" not in line


async def test_a_refused_or_failed_fetch_leaves_the_image_out_and_logs_the_status(
    caplog: pytest.LogCaptureFixture,
):
    store = Store(
        {
            "media:big": AwarenessLinkError("FAILED_PRECONDITION", "media:big is 5000 bytes"),
            "media:down": AwarenessLinkError("UNAVAILABLE", "connection refused"),
            "media:p": ("image/png", PNG),
        }
    )
    media = [NoteMedia(ref, "image/png") for ref in ("media:big", "media:down", "media:p")]
    with caplog.at_level(logging.WARNING, logger="mind.awareness.images"):
        images = await _images(store).fetch(media)
    assert [i.data for i in images] == [PNG]
    assert len(caplog.messages) == 2
    assert "media:big" in caplog.messages[0] and "FAILED_PRECONDITION" in caplog.messages[0]
    assert "media:down" in caplog.messages[1] and "UNAVAILABLE" in caplog.messages[1]


async def test_images_past_max_images_are_not_fetched_and_are_logged(
    caplog: pytest.LogCaptureFixture,
):
    store = Store({"media:p": ("image/png", PNG), "media:g": ("image/gif", GIF)})
    media = [NoteMedia("media:p", "image/png"), NoteMedia("media:g", "image/gif")]
    with caplog.at_level(logging.WARNING, logger="mind.awareness.images"):
        images = await _images(store, max_count=1).fetch(media)
    assert [i.data for i in images] == [PNG]
    assert store.asked == [("media:p", 4000)]
    [line] = caplog.messages
    assert "media:g" in line and "mind.max_images" in line
