"""How `tobe chat` shows widgets: a widget message as its one-line card, and `/widget`'s
records as a table per module."""

from __future__ import annotations

import io
import json

from rich.console import Console

from face.chat.transcript import message_renderables
from face.chat.widgets import widget_renderables
from tobe.v1 import common_pb2, mind_pb2


def _printed(*renderables: object) -> str:
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(*renderables)
    return out.getvalue()


def test_a_widget_message_is_one_line_naming_the_command_that_shows_it() -> None:
    message = common_pb2.Message(
        role=common_pb2.MESSAGE_ROLE_ASSISTANT,
        posted_by="widget",
        text="[widget w_1: trip 'Rome'] Three nights",
        widget=common_pb2.WidgetCard(id="w_1", type="trip", title="Rome", summary="Three nights"),
    )

    printed = _printed(*message_renderables(message))

    assert printed == "▣ Rome — trip · Three nights (widget w_1; /widget w_1 to show)\n"


def test_widget_prints_each_module_as_a_table_with_a_column_per_field() -> None:
    def record(record_id: str, data: object, revision: int = 1) -> mind_pb2.WidgetRecord:
        return mind_pb2.WidgetRecord(
            record_id=record_id, data_json=json.dumps(data), revision=revision
        )

    widget = mind_pb2.Widget(
        id="w_1",
        type="trip",
        title="Rome",
        revision=5,
        modules=[
            mind_pb2.WidgetModule(
                name="stops",
                records=[
                    record("r1", {"place": "Rome", "nights": 3}, 2),
                    record("r2", {"place": "Milan"}),
                ],
            ),
            mind_pb2.WidgetModule(name="notes", records=[record("n1", "Book the Vatican")]),
            mind_pb2.WidgetModule(name="hotels"),
        ],
    )

    lines = _printed(*widget_renderables(widget)).splitlines()

    assert lines[0] == "▣ Rome — trip (revision 5)"
    rows = [" ".join(line.replace("│", " ").replace("┃", " ").split()) for line in lines]
    assert "id rev place nights" in rows
    assert "r1 2 Rome 3" in rows and "r2 1 Milan" in rows
    assert "id rev value" in rows and "n1 1 Book the Vatican" in rows
    assert "hotels: no records" in rows
