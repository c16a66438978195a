"""`tobe chat` marks the images a tool result brought, as history marks a person's."""

from __future__ import annotations

from rich.text import Text

from face.chat.transcript import message_renderables
from tobe.v1 import common_pb2


def _tool_message(images: int) -> common_pb2.Message:
    ref = common_pb2.ImageRef(digest="ab" * 32, media_type="image/png", size_bytes=48)
    return common_pb2.Message(
        role=common_pb2.MESSAGE_ROLE_TOOL, tool_call_id="call_1", images=[ref] * images
    )


def test_a_tool_result_with_images_is_marked_once_per_image() -> None:
    [line] = message_renderables(_tool_message(2))
    assert isinstance(line, Text) and line.plain == "  [image] [image]"


def test_a_tool_result_without_images_prints_nothing_of_its_own() -> None:
    assert message_renderables(_tool_message(0)) == []
