"""Images sent with a message: recognised by their bytes, limited, stored once, and shown to the
model as the seed says (a marker naming the message, the text, then the images; placeholders
for unreadable images and for models that cannot see)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mind.conversation.history import HistoryMessage
from mind.conversation.images import ImageUpload, check_images
from mind.conversation.media import read_images, store_images
from mind.core.prompt import IMAGE_UNREADABLE
from mind.core.view import provider_messages
from mind.errors import InvalidInput
from mind.providers.base import ImagePart, ProviderRequest, StopReason
from mind.providers.catalog import ModelInfo, ThinkingLevel
from mind.providers.vision import IMAGE_UNSUPPORTED
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.store import models
from mind.store.database import Database
from mind.store.migrate import upgrade
from mind.store.write_tx import WriteTx
from tobe.media_types import detect_image_type

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 24
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 16
GIF = b"GIF89a" + b"\x00" * 24
T = datetime(2026, 9, 10, 14, 0, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (PNG, "image/png"),
        (JPEG, "image/jpeg"),
        (WEBP, "image/webp"),
        (GIF, "image/gif"),
        (b"GIF87a" + b"\x00" * 8, "image/gif"),
        (b"RIFF\x10\x00\x00\x00WAVEfmt ", None),
        (b"%PDF-1.7", None),
        (b"", None),
    ],
)
def test_the_image_type_comes_from_the_magic_bytes(data: bytes, expected: str | None) -> None:
    assert detect_image_type(data) == expected


def test_accepted_images_keep_their_type_and_sha256_digest() -> None:
    [png, gif] = check_images(
        [ImageUpload("image/png", PNG), ImageUpload("image/gif", GIF)], max_bytes=64, max_count=2
    )
    assert (png.media_type, png.digest) == ("image/png", hashlib.sha256(PNG).hexdigest())
    assert png.ref() == {"digest": png.digest, "media_type": "image/png", "size_bytes": len(PNG)}
    assert gif.media_type == "image/gif"


def test_a_declared_type_the_bytes_contradict_is_refused_naming_the_image_index() -> None:
    uploads = [ImageUpload("image/png", PNG), ImageUpload("image/png", JPEG)]
    with pytest.raises(InvalidInput, match=r"image 1 is declared 'image/png' but .* 'image/jpeg'"):
        check_images(uploads, max_bytes=64, max_count=8)


def test_bytes_that_are_no_supported_image_are_refused_whatever_the_declared_type() -> None:
    with pytest.raises(InvalidInput, match=r"image 0 is not a PNG, JPEG, WebP or GIF image"):
        check_images([ImageUpload("image/png", b"%PDF-1.7 ...")], max_bytes=64, max_count=8)
    with pytest.raises(InvalidInput, match="image 0 is empty"):
        check_images([ImageUpload("image/png", b"")], max_bytes=64, max_count=8)


def test_the_size_and_count_limits_name_their_settings() -> None:
    with pytest.raises(InvalidInput, match=r"image 0 is 32 bytes; the maximum is 31 .*max_image"):
        check_images([ImageUpload("image/png", PNG)], max_bytes=31, max_count=8)
    with pytest.raises(InvalidInput, match=r"3 images; the maximum is 2 .*mind.max_images"):
        check_images([ImageUpload("image/gif", GIF)] * 3, max_bytes=64, max_count=2)


def test_the_same_bytes_are_stored_once_and_read_back_as_base64(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tobe.db'}"
    upgrade(url)
    [image] = check_images([ImageUpload("image/png", PNG)], max_bytes=64, max_count=1)

    async def scenario() -> tuple[int, dict[str, ImagePart]]:
        database = Database.open(url)
        try:

            def unit(tx: WriteTx) -> None:
                store_images(tx.session, [image, image])

            await database.write(unit)
            await database.write(unit)
            count = await database.read(lambda s: s.query(models.Media).count())
            found = await database.read(lambda s: read_images(s, {image.digest, "0" * 64}))
            return count, found
        finally:
            await database.close()

    count, found = asyncio.run(scenario())
    assert count == 1
    assert found == {image.digest: ImagePart("image/png", base64.b64encode(PNG).decode())}


def test_the_view_marks_the_message_then_its_text_then_its_images() -> None:
    part = ImagePart("image/png", "iVBO")
    history = [
        HistoryMessage(41, "user", "what is this?", T, images=(part,)),
        HistoryMessage(42, "user", "", T, images=(part, part)),
    ]
    first, second, _now = provider_messages(history, T)
    assert first.text == "[2026-09-10 14:00:30 GMT] [image #41] what is this?"
    assert first.images == [part]
    assert second.text == "[2026-09-10 14:00:30 GMT] [image #42]"
    assert second.images == [part, part]


def test_an_image_whose_bytes_are_gone_becomes_the_could_not_be_read_placeholder() -> None:
    part = ImagePart("image/png", "iVBO")
    history = [HistoryMessage(7, "user", "both", T, images=(part,), unreadable_images=1)]
    [message, _now] = provider_messages(history, T)
    assert message.text == f"[2026-09-10 14:00:30 GMT] [image #7] both\n{IMAGE_UNREADABLE}"
    assert IMAGE_UNREADABLE == "[image could not be read]"
    assert message.images == [part]


SCRIPT = """
runs:
  - match: "look"
    steps:
      - expect: {images: 1}
        text: "seen"
  - match: "blind"
    steps:
      - expect: {images: 0, last_contains: "[image: the current model cannot see images]"}
        text: "placeholder seen"
"""


def _model(vision: bool) -> ModelInfo:
    return ModelInfo("m", 100_000, 256, vision, (ThinkingLevel.OFF,))


def _ask(provider: ScriptedProvider, text: str) -> tuple[StopReason, str]:
    history = [HistoryMessage(3, "user", text, T, images=(ImagePart("image/png", "iVBO"),))]
    request = ProviderRequest(system="", messages=provider_messages(history, T))
    result = asyncio.run(provider.complete(request, lambda event: None))
    return result.stop_reason, result.error.message if result.error else result.text


def test_the_scripted_model_counts_images_only_when_its_model_entry_sees_images() -> None:
    script = parse_script(SCRIPT, "test")
    assert _ask(ScriptedProvider(script, info=_model(True)), "look") == (StopReason.STOP, "seen")
    stop, said = _ask(ScriptedProvider(script, info=_model(False)), "look")
    assert stop == StopReason.ERROR and "carry 1 images, got 0" in said


def test_a_blind_or_unlisted_scripted_model_gets_the_placeholder_text() -> None:
    script = parse_script(SCRIPT, "test")
    for provider in (ScriptedProvider(script, info=_model(False)), ScriptedProvider(script)):
        assert _ask(provider, "blind") == (StopReason.STOP, "placeholder seen")
    assert IMAGE_UNSUPPORTED == "[image: the current model cannot see images]"
