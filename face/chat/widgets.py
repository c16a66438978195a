"""`/widget ID` in `tobe chat`: a widget of the current conversation, its records as tables.

A widget's page is for the web client; the terminal prints each module as a table, one row
per record: its id, its revision, and a column per field (a record that is not an object has
one `value` column). Ids are given whole, as a widget message's card line shows them.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from face.chat.session import ChatSession
from tobe.v1 import face_pb2, mind_pb2


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def module_table(module: mind_pb2.WidgetModule) -> Table:
    """One module's records: id, revision, then its fields in the order they first appear."""
    records = [(record, json.loads(record.data_json)) for record in module.records]
    fields: list[str] = []
    for _, data in records:
        if isinstance(data, dict):
            fields.extend(key for key in data if key not in fields)
    objects = all(isinstance(data, dict) for _, data in records)
    columns = fields if objects else ["value"]
    table = Table(title=module.name, title_justify="left", caption=module.description or None)
    for column in ["id", "rev", *columns]:
        table.add_column(column, overflow="fold")
    for record, data in records:
        values = [data.get(field) for field in columns] if objects else [data]
        table.add_row(record.record_id, str(record.revision), *(_cell(v) for v in values))
    return table


def widget_renderables(widget: mind_pb2.Widget) -> list[Text | Table]:
    """The widget's heading line, then a table per module (a line for an empty one)."""
    shown: list[Text | Table] = [
        Text.assemble(
            ("▣ ", "bold blue"),
            (widget.title, "bold"),
            f" — {widget.type} (revision {widget.revision})",
            f"\n{widget.summary}" if widget.summary else "",
        )
    ]
    for module in widget.modules:
        if module.records:
            shown.append(module_table(module))
        else:
            shown.append(Text(f"{module.name}: no records", style="dim"))
    return shown


async def show(session: ChatSession, console: Console, key: str, widget_id: str) -> None:
    reply = await session.call(
        face_pb2.MindCall(
            get_widget=mind_pb2.GetWidgetRequest(conversation_key=key, widget_id=widget_id)
        )
    )
    console.print(*widget_renderables(reply.get_widget.widget))
