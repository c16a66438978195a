"""What `tobe chat` prints when its output is not a terminal (piped to a file or a program)."""

from __future__ import annotations

import io

from rich.console import Console

from face.chat.render import Renderer
from tobe.v1 import common_pb2, events_pb2

KEY = "p_chat"


def _event(**payload: object) -> events_pb2.Event:
    return events_pb2.Event(conversation_key=KEY, **payload)  # type: ignore[arg-type]


def test_a_streamed_reply_ends_its_line_when_output_is_piped() -> None:
    output = io.StringIO()
    renderer = Renderer(Console(file=output, width=80))
    renderer.conversation = KEY
    renderer.on_event(_event(text_delta=events_pb2.TextDelta(run_id="r", step=0, text="saved it")))
    renderer.on_event(
        _event(
            message_appended=common_pb2.Message(
                role=common_pb2.MESSAGE_ROLE_ASSISTANT, run_id="r", text="saved it"
            )
        )
    )
    renderer.status("next line")
    lines = [line.strip() for line in output.getvalue().splitlines()]
    assert lines == ["saved it", "next line"]
