"""Widgets ↔ `tobe.v1`: a widget opened by a client (Mind.GetWidget) and the `widget_changed`
event."""

from __future__ import annotations

import json

from mind.agent.widgets import OpenedWidget
from mind.events.widget_views import WidgetChangedView
from tobe.runtime.timestamps import from_timestamp, to_timestamp
from tobe.v1 import events_pb2, mind_pb2


def opened_widget_to_proto(opened: OpenedWidget) -> mind_pb2.GetWidgetResponse:
    """The widget with the records of every module its type has now, in the type's order."""
    widget, widget_type = opened.widget, opened.widget_type
    modules = [
        mind_pb2.WidgetModule(
            name=module.name,
            description=module.description,
            records=[
                mind_pb2.WidgetRecord(
                    record_id=record.record_id,
                    data_json=json.dumps(record.data, ensure_ascii=False, separators=(",", ":")),
                    revision=record.revision,
                    updated_at=to_timestamp(record.updated_at),
                )
                for record in widget.records
                if record.module == module.name
            ],
        )
        for module in widget_type.modules.values()
    ]
    return mind_pb2.GetWidgetResponse(
        widget=mind_pb2.Widget(
            id=widget.id,
            conversation_key=widget.conversation_key,
            type=widget.type_name,
            type_version=widget.type_version,
            title=widget.title,
            summary=widget.summary,
            cover=widget.cover,
            revision=widget.revision,
            updated_at=to_timestamp(widget.updated_at),
            modules=modules,
        ),
        page=widget_type.page,
        page_version=widget_type.version,
    )


def widget_changed_to_proto(view: WidgetChangedView) -> events_pb2.WidgetChanged:
    return events_pb2.WidgetChanged(
        widget_id=view.widget_id, revision=view.revision, updated_at=to_timestamp(view.updated_at)
    )


def widget_changed_from_proto(message: events_pb2.WidgetChanged) -> WidgetChangedView:
    return WidgetChangedView(
        message.widget_id, message.revision, from_timestamp(message.updated_at)
    )
