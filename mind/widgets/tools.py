"""The widget tools the model calls: `widget_create`, `widget_write`, `widget_read`,
`widget_delete` (a record) and `widget_send`, bound to the calling run's conversation.

They are platform tools offered only while at least one widget type exists: the source keeps
the types it last read and reads them again after `types_changed` (a `put` or `delete` while
the Mind runs) and at its first use (types put while no Mind ran). Their descriptions list
each type's modules and fields, so the model writes records the schemas accept.

A refused operation tells the model only "request failed (<code>); read the current state
before trying again": the code says what kind of refusal it was (400 invalid, 404 not found,
409 stale or conflicting), and the model reads the widget again rather than acting on an
internal reason. `widget_create` carries the idempotency key `widget-create:<tool call id>`,
so a call replayed after a crash creates nothing twice. `widget_send` sets the presentation
and posts a widget message (its card) on the conversation's ordered queue, the one replies and
posts share, under the key `widget-send:<tool call id>`: it appears right after the sending
run's messages, and a replayed call posts nothing twice.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from mind.errors import InvalidInput, MindError, NotFound, WrongState
from mind.events.widget_views import WidgetCardView
from mind.store.database import Database
from mind.tools.base import Effect, Tool, ToolContext, ToolOutcome
from mind.widgets.context_note import widgets_note
from mind.widgets.types import WidgetTypeView, list_types
from mind.widgets.widgets import WidgetRecordView, Widgets, WidgetView

WIDGET_CREATE = "widget_create"
WIDGET_WRITE = "widget_write"
WIDGET_READ = "widget_read"
WIDGET_DELETE = "widget_delete"
WIDGET_SEND = "widget_send"
WIDGET_TOOLS = (WIDGET_CREATE, WIDGET_WRITE, WIDGET_READ, WIDGET_DELETE, WIDGET_SEND)
# Who a widget message is posted by (`posted_by`).
WIDGET_POSTER = "widget"

# Posts a widget message: (conversation key, text, idempotency key, card).
WidgetPost = Callable[[str, str, str, WidgetCardView], Awaitable[object]]

_CODES: tuple[tuple[type[MindError], int], ...] = (
    (InvalidInput, 400),
    (NotFound, 404),
    (WrongState, 409),
)


def failure_text(error: MindError) -> str:
    """What the model is told of a refusal: its code, never the internal reason."""
    code = next((code for kind, code in _CODES if isinstance(error, kind)), 500)
    return f"request failed ({code}); read the current state before trying again"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _schema(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
        "additionalProperties": False,
    }


_WIDGET_ID = {"type": "string", "description": "the widget's id, as widget_create returned it"}
_MODULE = {"type": "string", "description": "the module the record belongs to"}
_RECORD_ID = {
    "type": "string",
    "description": "the record's id: 1 to 64 letters, digits, '_' or '-'",
}
_EXPECTED = {
    "type": "integer",
    "minimum": 0,
    "description": "the record's revision you last read (0: it must not exist yet); "
    "leave out to write whatever is there",
}


def _fields(schema: dict[str, Any]) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return f"a {schema.get('type', 'JSON value')}"
    required = set(schema.get("required", ()))
    names = (f"{name}{'' if name in required else '?'}" for name in properties)
    return "fields " + ", ".join(names)


def describe_types(types: list[WidgetTypeView]) -> str:
    """Each type's modules and the fields of their records ('?' marks an optional one)."""
    lines = []
    for widget_type in types:
        modules = "; ".join(
            f"{module.name} ({module.description} Records: {_fields(module.schema)})"
            for module in widget_type.modules.values()
        )
        lines.append(f"- {widget_type.name}: {modules}")
    return "Widget types:\n" + "\n".join(lines)


def _record(record: WidgetRecordView) -> dict[str, Any]:
    return {
        "module": record.module,
        "record_id": record.record_id,
        "data": record.data,
        "revision": record.revision,
    }


def _widget(widget: WidgetView) -> dict[str, Any]:
    return {
        "widget_id": widget.id,
        "type": widget.type_name,
        "title": widget.title,
        "summary": widget.summary,
        "cover": widget.cover,
        "revision": widget.revision,
        "records": [_record(record) for record in widget.records],
    }


class _WidgetTool:
    name = ""
    description = ""
    parameters: dict[str, Any] = {}
    effect = Effect.WORKSPACE_WRITE
    hand_id = ""

    def __init__(self, widgets: Widgets, types: str) -> None:
        self._widgets = widgets
        self.description = f"{self.description}\n{types}"

    def render_decision(self, arguments: dict[str, Any]) -> str:
        return f"{self.name.replace('_', ' ')} {_json(arguments)}"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        try:
            return ToolOutcome(ok=True, output=_json(await self.act(arguments, context)))
        except MindError as exc:
            return ToolOutcome(ok=False, error=failure_text(exc))

    async def act(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        raise NotImplementedError


class WidgetCreateTool(_WidgetTool):
    name = WIDGET_CREATE
    description = (
        "Create a widget of one type in this conversation, with a title; returns its id. "
        "Fill it with widget_write and show it with widget_send."
    )
    parameters = _schema(
        {
            "type": {"type": "string", "description": "the widget type's name"},
            "title": {"type": "string", "description": "the widget's title (1-200 characters)"},
        }
    )

    async def act(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        widget = await self._widgets.create(
            context.conversation_key,
            arguments["type"],
            arguments["title"],
            idempotency_key=f"widget-create:{context.tool_call_id}",
        )
        return _widget(widget)


class WidgetWriteTool(_WidgetTool):
    name = WIDGET_WRITE
    description = (
        "Write one record of a widget's module: data must match the module's fields. "
        "Returns the record's new revision."
    )
    parameters = _schema(
        {
            "widget_id": _WIDGET_ID,
            "module": _MODULE,
            "record_id": _RECORD_ID,
            "data": {"description": "the record, as the module's fields describe it"},
        },
        {"expected_revision": _EXPECTED},
    )

    async def act(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        record = await self._widgets.write(
            context.conversation_key,
            arguments["widget_id"],
            arguments["module"],
            arguments["record_id"],
            arguments["data"],
            expected_revision=arguments.get("expected_revision"),
        )
        return {"widget_id": arguments["widget_id"], **_record(record)}


class WidgetReadTool(_WidgetTool):
    name = WIDGET_READ
    description = "Read a widget of this conversation: its title, presentation and records."
    parameters = _schema({"widget_id": _WIDGET_ID})
    effect = Effect.READ_ONLY

    async def act(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        return _widget(await self._widgets.read(context.conversation_key, arguments["widget_id"]))


class WidgetDeleteTool(_WidgetTool):
    name = WIDGET_DELETE
    description = "Delete one record of a widget; a record that is not there is already gone."
    parameters = _schema(
        {"widget_id": _WIDGET_ID, "module": _MODULE, "record_id": _RECORD_ID},
        {"expected_revision": _EXPECTED},
    )

    async def act(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        deleted = await self._widgets.delete_record(
            context.conversation_key,
            arguments["widget_id"],
            arguments["module"],
            arguments["record_id"],
            expected_revision=arguments.get("expected_revision"),
        )
        return {"deleted": deleted}


def card(widget: WidgetView) -> WidgetCardView:
    return WidgetCardView(
        widget.id, widget.type_name, widget.title, widget.summary, widget.cover, widget.revision
    )


def message_text(widget: WidgetView) -> str:
    """The widget message as the model reads it in later requests."""
    text = f"[widget {widget.id}: {widget.type_name} {widget.title!r}]"
    return f"{text} {widget.summary}" if widget.summary else text


class WidgetSendTool(_WidgetTool):
    name = WIDGET_SEND
    description = (
        "Send a widget into the conversation as a card, after setting its presentation: a "
        "summary (at most 500 characters) and optionally a cover (the digest of an image in "
        'this conversation; "" removes it). The card appears after your reply of this turn.'
    )
    parameters = _schema(
        {
            "widget_id": _WIDGET_ID,
            "summary": {"type": "string", "description": "what the card says (≤ 500 characters)"},
        },
        {"cover": {"type": "string", "description": "an image digest from this conversation"}},
    )

    def __init__(self, widgets: Widgets, types: str, post: WidgetPost) -> None:
        super().__init__(widgets, types)
        self._post = post

    async def act(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        widget = await self._widgets.set_presentation(
            context.conversation_key,
            arguments["widget_id"],
            summary=arguments["summary"],
            cover=arguments.get("cover"),
        )
        await self._post(
            context.conversation_key,
            message_text(widget),
            f"widget-send:{context.tool_call_id}",
            card(widget),
        )
        return {"sent": widget.id, "revision": widget.revision}


class WidgetToolSource:
    """The widget tools while at least one type exists, none otherwise; `widget_send` once
    `post` is set (the conversation manager, made after the tool registry)."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._widgets = Widgets(database)
        self._tools: list[Tool] | None = None
        self.post: WidgetPost | None = None
        # The store is read only once the Mind has started on it (migrated, recovered).
        self._started = False

    async def start(self) -> None:
        self._started = True

    def types_changed(self) -> None:
        """A type was put or deleted: read them again before the next offer."""
        self._tools = None

    def tools_for(self, conversation_key: str) -> list[Tool]:
        if not self._started:
            return []
        if self._tools is None:
            self._tools = self._make(self._database.read_now(list_types))
        return self._tools

    async def note_for(self, conversation_key: str) -> str:
        """The widgets of the conversation for the run's last note ("" while no type exists:
        a type deleted takes its widgets with it)."""
        if not self.tools_for(conversation_key):
            return ""
        return await self._database.read(lambda session: widgets_note(session, conversation_key))

    def _make(self, types: list[WidgetTypeView]) -> list[Tool]:
        if not types:
            return []
        text = describe_types(types)
        tools: list[Tool] = [
            WidgetCreateTool(self._widgets, text),
            WidgetWriteTool(self._widgets, text),
            WidgetReadTool(self._widgets, text),
            WidgetDeleteTool(self._widgets, text),
        ]
        if self.post is not None:
            tools.append(WidgetSendTool(self._widgets, text, self.post))
        return tools
