"""`tobe chat` shows a quoting message after a `> ` quote line and a forwarded chat record
compactly, a line per item with its images marked."""

from __future__ import annotations

from rich.text import Text

from face.chat.transcript import message_renderables
from tobe.v1 import common_pb2

REF = common_pb2.ImageRef(digest="ab" * 32, media_type="image/png", size_bytes=48)


def _plain(message: common_pb2.Message) -> list[str]:
    lines = message_renderables(message)
    assert all(isinstance(line, Text) for line in lines)
    return [line.plain for line in lines if isinstance(line, Text)]


def test_a_quoting_message_follows_its_quote_line() -> None:
    said = common_pb2.Message(
        role=common_pb2.MESSAGE_ROLE_USER,
        text="yes",
        reply_to=4,
        quote=common_pb2.Quote(message_id=4, speaker="assistant", text="noon?"),
    )
    assert _plain(said) == ["> assistant: noon?", "you› yes"]
    said.quote.has_images = True
    assert _plain(said) == ["> assistant's image #4", "you› yes"]


def test_a_forwarded_record_is_a_line_per_item_with_its_images_marked() -> None:
    said = common_pb2.Message(
        role=common_pb2.MESSAGE_ROLE_USER,
        text="look",
        forwarded=[
            common_pb2.ForwardedItem(speaker="bob", text="one\ntwo", images=[REF, REF]),
            common_pb2.ForwardedItem(speaker="carol", text="x" * 100),
        ],
    )
    assert _plain(said) == [
        "you› look",
        "  ↪ forwarded chat record, 2 messages",
        "  │ bob: one two [image] [image]",
        f"  │ carol: {'x' * 79}…",
    ]
