"""`tobe chat`'s memory lines: a `memory_changed` event in one line, `/memory` compactly."""

from __future__ import annotations

import io

from rich.console import Console

from face.chat.render import Renderer, memory_changed_line, memory_lines
from tobe.v1 import common_pb2, events_pb2, mind_pb2


def test_a_memory_change_is_one_line_naming_the_key_and_who_changed_it() -> None:
    by_model = events_pb2.MemoryChanged(key="diet", size_bytes=24, run_id="run_1")
    by_owner = events_pb2.MemoryChanged(key="diet", deleted=True)

    assert memory_changed_line(by_model) == "memory diet: remembered (24 bytes)"
    assert memory_changed_line(by_owner) == "memory diet: forgot by the owner"


def test_the_renderer_prints_a_memory_changed_event_of_the_current_conversation() -> None:
    out = io.StringIO()
    renderer = Renderer(Console(file=out, width=120))
    renderer.conversation = "p_x"

    renderer.on_event(
        events_pb2.Event(
            conversation_key="p_x", memory_changed=events_pb2.MemoryChanged(key="city", run_id="r")
        )
    )

    assert out.getvalue() == "memory city: remembered (0 bytes)\n"


def test_memory_lists_each_key_with_the_start_of_its_text_on_one_line() -> None:
    memory = mind_pb2.ListMemoryResponse(
        entries=[
            common_pb2.MemoryEntry(key="city", text="Lyon"),
            common_pb2.MemoryEntry(key="notes", text="line one\nline two " + "x" * 200),
        ],
        total_bytes=222,
    )

    lines = memory_lines(memory)

    assert lines[0] == "city: Lyon"
    assert lines[1].startswith("notes: line one line two xx") and lines[1].endswith("x…")
    assert len(lines[1]) == len("notes: ") + 100 + 1
    assert lines[2] == "2 entries, 222 bytes"
    assert memory_lines(mind_pb2.ListMemoryResponse()) == ["nothing remembered"]
