"""A conversation's widgets in the store: made of a type, records validated against its
modules, a revision per record that a write may expect, and a presentation.

Every change is made in the caller's unit with the widget's row locked (`SELECT … FOR UPDATE`
on PostgreSQL, where units run concurrently; SQLite's single writer serialises them), so two
writes expecting the same revision cannot both pass. A write with a stale `expected_revision`
is WrongState (FAILED_PRECONDITION); data its module's schema refuses is InvalidInput. Each
change commits with its durable `widget_changed` event (no contents: clients read the widget).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.conversation.media import carries
from mind.conversation.queries import members_of
from mind.errors import InvalidInput, NotFound, WrongState
from mind.events.widget_views import WidgetChangedView
from mind.store.database import Database
from mind.store.models import Conversation, Media, Widget, WidgetRecord, utcnow
from mind.store.write_tx import WriteTx
from mind.widgets.types import current_type

WIDGET_CHANGED = "widget_changed"
RECORD_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_TITLE = 200
MAX_SUMMARY = 500


@dataclass(frozen=True)
class WidgetRecordView:
    module: str
    record_id: str
    data: Any
    revision: int
    updated_at: datetime


@dataclass(frozen=True)
class WidgetView:
    """A widget with its records (sorted by module, then record id)."""

    id: str
    conversation_key: str
    type_name: str
    type_version: int
    title: str
    summary: str
    cover: str
    revision: int
    created_at: datetime
    updated_at: datetime
    records: tuple[WidgetRecordView, ...]


def _records(session: Session, widget_id: str) -> tuple[WidgetRecordView, ...]:
    rows = session.scalars(select(WidgetRecord).where(WidgetRecord.widget_id == widget_id))
    views = (
        WidgetRecordView(row.module, row.record_id, row.data, row.revision, row.updated_at)
        for row in rows
    )
    return tuple(sorted(views, key=lambda view: (view.module, view.record_id)))


def _view(session: Session, row: Widget) -> WidgetView:
    return WidgetView(
        row.id,
        row.conversation_key,
        row.type_name,
        row.type_version,
        row.title,
        row.summary,
        row.cover,
        row.revision,
        row.created_at,
        row.updated_at,
        _records(session, row.id),
    )


def _widget(session: Session, conversation_key: str, widget_id: str, *, lock: bool) -> Widget:
    query = select(Widget).where(
        Widget.id == widget_id, Widget.conversation_key == conversation_key
    )
    row = session.scalar(query.with_for_update() if lock else query)
    if row is None:
        raise NotFound(f"no widget {widget_id!r} in this conversation")
    return row


def _check_title(title: str) -> str:
    title = title.strip()
    if not title or len(title) > MAX_TITLE:
        raise InvalidInput(f"a widget's title is 1 to {MAX_TITLE} characters")
    return title


def _check_record_id(record_id: str) -> str:
    if not RECORD_ID.fullmatch(record_id):
        raise InvalidInput(
            f"record id {record_id!r} is not valid: use 1 to 64 letters, digits, '_' or '-'"
        )
    return record_id


def _check_data(type_name: str, module: str, schema: dict[str, Any], data: Any) -> None:
    from jsonschema import Draft202012Validator  # loaded by the first widget record
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        where = "/" + "/".join(str(part) for part in error.path)
        raise InvalidInput(
            f"the record does not match module {module!r} of {type_name!r} at {where}: "
            f"{error.message}"
        )


def _touch(tx: WriteTx, row: Widget) -> None:
    """Count a change to the widget and announce it to the conversation's people."""
    row.revision += 1
    row.updated_at = utcnow()
    session = tx.session
    owner = session.scalar(
        select(Conversation.owner).where(Conversation.key == row.conversation_key)
    )
    audience = [owner, *members_of(session, row.conversation_key)] if owner else []
    view = WidgetChangedView(row.id, row.revision, row.updated_at)
    tx.event(WIDGET_CHANGED, row.conversation_key, audience, view.to_payload())


def list_widgets(session: Session, conversation_key: str) -> list[WidgetView]:
    """The conversation's widgets, oldest first."""
    rows = session.scalars(
        select(Widget)
        .where(Widget.conversation_key == conversation_key)
        .order_by(Widget.created_at, Widget.id)
    ).all()
    return [_view(session, row) for row in rows]


def read_widget(session: Session, conversation_key: str, widget_id: str) -> WidgetView:
    return _view(session, _widget(session, conversation_key, widget_id, lock=False))


def create_widget(
    tx: WriteTx,
    conversation_key: str,
    type_name: str,
    title: str,
    *,
    idempotency_key: str | None = None,
) -> WidgetView:
    """A new widget of the type's current version; with an idempotency key already used in
    this conversation, the widget made then (nothing new)."""
    session = tx.session
    if idempotency_key is not None:
        made = session.scalar(
            select(Widget).where(
                Widget.conversation_key == conversation_key,
                Widget.idempotency_key == idempotency_key,
            )
        )
        if made is not None:
            return _view(session, made)
    if session.get(Conversation, conversation_key) is None:
        raise NotFound(f"no conversation {conversation_key!r}")
    widget_type = current_type(session, type_name)
    row = Widget(
        id=f"w_{uuid.uuid4().hex[:24]}",
        conversation_key=conversation_key,
        type_name=type_name,
        type_version=widget_type.version,
        title=_check_title(title),
        summary="",
        cover="",
        revision=1,
        idempotency_key=idempotency_key,
    )
    session.add(row)
    session.flush()
    return _view(session, row)


def rename_widget(tx: WriteTx, conversation_key: str, widget_id: str, title: str) -> WidgetView:
    """Give a widget a new title (its id stays)."""
    session = tx.session
    row = _widget(session, conversation_key, widget_id, lock=True)
    row.title = _check_title(title)
    _touch(tx, row)
    session.flush()
    return _view(session, row)


def write_record(
    tx: WriteTx,
    conversation_key: str,
    widget_id: str,
    module: str,
    record_id: str,
    data: Any,
    *,
    expected_revision: int | None = None,
) -> WidgetRecordView:
    """Write one record, checked against the module's schema in the type's current version.

    `expected_revision`: None writes whatever is there; 0 only creates; n only replaces
    revision n.
    """
    _check_record_id(record_id)
    session = tx.session
    row = _widget(session, conversation_key, widget_id, lock=True)
    modules = current_type(session, row.type_name).modules
    if module not in modules:
        raise InvalidInput(
            f"widget type {row.type_name!r} has no module {module!r}; "
            f"its modules are {', '.join(modules)}"
        )
    _check_data(row.type_name, module, modules[module].schema, data)
    record = session.get(WidgetRecord, (widget_id, module, record_id))
    current = record.revision if record is not None else 0
    if expected_revision is not None and expected_revision != current:
        raise WrongState(
            f"record {record_id!r} of {module!r} is at revision {current}, not "
            f"{expected_revision}: read it again before writing"
        )
    if record is None:
        record = WidgetRecord(
            widget_id=widget_id, module=module, record_id=record_id, data=data, revision=1
        )
        session.add(record)
    else:
        record.data = data
        record.revision += 1
        record.updated_at = utcnow()
    _touch(tx, row)
    session.flush()
    return WidgetRecordView(module, record_id, data, record.revision, record.updated_at)


def delete_record(
    tx: WriteTx,
    conversation_key: str,
    widget_id: str,
    module: str,
    record_id: str,
    *,
    expected_revision: int | None = None,
) -> bool:
    """Delete one record; whether it existed. A stale `expected_revision` is refused."""
    session = tx.session
    row = _widget(session, conversation_key, widget_id, lock=True)
    record = session.get(WidgetRecord, (widget_id, module, record_id))
    current = record.revision if record is not None else 0
    if expected_revision is not None and expected_revision != current:
        raise WrongState(
            f"record {record_id!r} of {module!r} is at revision {current}, not "
            f"{expected_revision}: read it again before deleting"
        )
    if record is None:
        return False
    session.delete(record)
    _touch(tx, row)
    session.flush()
    return True


def set_presentation(
    tx: WriteTx,
    conversation_key: str,
    widget_id: str,
    *,
    summary: str | None = None,
    cover: str | None = None,
) -> WidgetView:
    """Set the summary (at most 500 characters) and/or the cover (a stored image's digest;
    "" removes it); None leaves either as it is."""
    session = tx.session
    row = _widget(session, conversation_key, widget_id, lock=True)
    if summary is not None:
        if len(summary) > MAX_SUMMARY:
            raise InvalidInput(
                f"a widget's summary is at most {MAX_SUMMARY} characters, got {len(summary)}"
            )
        row.summary = summary
    if cover and cover != row.cover:
        # Only an image of this conversation: a cover is readable wherever its widget is.
        media = session.get(Media, cover)
        if (
            media is None
            or not media.media_type.startswith("image/")
            or not carries(session, conversation_key, cover)
        ):
            raise InvalidInput(f"no image {cover!r} in this conversation for the cover")
    if cover is not None:
        row.cover = cover
    _touch(tx, row)
    session.flush()
    return _view(session, row)


class Widgets:
    """Widget operations as units of the store's writer (the model tools' door)."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def list(self, conversation_key: str) -> list[WidgetView]:
        return await self._database.read(lambda session: list_widgets(session, conversation_key))

    async def read(self, conversation_key: str, widget_id: str) -> WidgetView:
        return await self._database.read(
            lambda session: read_widget(session, conversation_key, widget_id)
        )

    async def create(
        self, conversation_key: str, type_name: str, title: str, *, idempotency_key: str | None
    ) -> WidgetView:
        return await self._database.write(
            lambda tx: create_widget(
                tx, conversation_key, type_name, title, idempotency_key=idempotency_key
            )
        )

    async def write(
        self,
        conversation_key: str,
        widget_id: str,
        module: str,
        record_id: str,
        data: Any,
        *,
        expected_revision: int | None,
    ) -> WidgetRecordView:
        return await self._database.write(
            lambda tx: write_record(
                tx,
                conversation_key,
                widget_id,
                module,
                record_id,
                data,
                expected_revision=expected_revision,
            )
        )

    async def delete_record(
        self,
        conversation_key: str,
        widget_id: str,
        module: str,
        record_id: str,
        *,
        expected_revision: int | None,
    ) -> bool:
        return await self._database.write(
            lambda tx: delete_record(
                tx,
                conversation_key,
                widget_id,
                module,
                record_id,
                expected_revision=expected_revision,
            )
        )

    async def set_presentation(
        self,
        conversation_key: str,
        widget_id: str,
        *,
        summary: str | None,
        cover: str | None,
    ) -> WidgetView:
        return await self._database.write(
            lambda tx: set_presentation(
                tx, conversation_key, widget_id, summary=summary, cover=cover
            )
        )
