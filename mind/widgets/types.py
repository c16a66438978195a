"""Widget types in the store: every `put` is a new version, the newest is current.

A type is in use while any widget of it exists. Such a type may gain modules freely but loses
one only when forced (its widgets' records of that module stay stored and are no longer
shown); deleting it is refused unless forced, and a forced delete removes its widgets too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.orm import Session

from mind.errors import NotFound, WrongState
from mind.store.models import Widget, WidgetRecord, WidgetType
from mind.store.write_tx import WriteTx
from mind.widgets.type_rules import (
    WidgetModule,
    check_page,
    check_schema_document,
    check_type_name,
    parse_modules,
)

# Module constants: the store compiles each statement once per dialect. Children first, so
# nothing leans on ON DELETE CASCADE.
_DELETE_RECORDS = delete(WidgetRecord).where(
    WidgetRecord.widget_id.in_(select(Widget.id).where(Widget.type_name == bindparam("name")))
)
_DELETE_WIDGETS = delete(Widget).where(Widget.type_name == bindparam("name"))
_DELETE_VERSIONS = delete(WidgetType).where(WidgetType.name == bindparam("name"))


@dataclass(frozen=True)
class WidgetTypeView:
    """A type's current version, and how many widgets of it exist."""

    name: str
    version: int
    modules: dict[str, WidgetModule]
    page: str
    created_at: datetime
    widgets: int


@dataclass(frozen=True)
class PutResult:
    widget_type: WidgetTypeView
    # Modules the previous version had and this one has not.
    removed_modules: tuple[str, ...]


def _current(session: Session, name: str) -> WidgetType | None:
    return session.scalar(
        select(WidgetType)
        .where(WidgetType.name == name)
        .order_by(WidgetType.version.desc())
        .limit(1)
    )


def widgets_of(session: Session, name: str) -> int:
    return session.scalar(select(func.count()).where(Widget.type_name == name)) or 0


def _view(row: WidgetType, widgets: int) -> WidgetTypeView:
    return WidgetTypeView(
        row.name, row.version, parse_modules(row.modules), row.page, row.created_at, widgets
    )


def current_type(session: Session, name: str) -> WidgetTypeView:
    row = _current(session, name)
    if row is None:
        raise NotFound(f"no widget type {name!r} (list them with `tobe admin widget-types list`)")
    return _view(row, widgets_of(session, name))


def type_version(session: Session, name: str, version: int) -> WidgetTypeView:
    row = session.get(WidgetType, (name, version))
    if row is None:
        raise NotFound(f"no version {version} of widget type {name!r}")
    return _view(row, widgets_of(session, name))


def list_types(session: Session) -> list[WidgetTypeView]:
    """Every type's current version, sorted by name."""
    newest = (
        select(WidgetType.name, func.max(WidgetType.version).label("version"))
        .group_by(WidgetType.name)
        .subquery()
    )
    rows = session.scalars(
        select(WidgetType).join(
            newest,
            (WidgetType.name == newest.c.name) & (WidgetType.version == newest.c.version),
        )
    ).all()
    counts = dict(
        session.execute(select(Widget.type_name, func.count()).group_by(Widget.type_name)).all()
    )
    views = [_view(row, counts.get(row.name, 0)) for row in rows]
    return sorted(views, key=lambda view: view.name)


def put_type(tx: WriteTx, name: str, schema_text: str, page: bytes, *, force: bool) -> PutResult:
    """Store a new version of `name` (version 1 when new), in the caller's unit."""
    check_type_name(name)
    modules = check_schema_document(schema_text)
    html = check_page(page)
    session = tx.session
    previous = _current(session, name)
    removed: tuple[str, ...] = ()
    if previous is not None:
        removed = tuple(module for module in previous.modules["modules"] if module not in modules)
        in_use = widgets_of(session, name)
        if removed and in_use and not force:
            raise WrongState(
                f"widget type {name!r} is used by {in_use} widget(s) and this version drops "
                f"module(s) {', '.join(removed)}: keep them, or pass --force to drop them"
            )
    row = WidgetType(
        name=name,
        version=(previous.version + 1) if previous is not None else 1,
        modules={"modules": {module.name: module.to_document() for module in modules.values()}},
        page=html,
    )
    session.add(row)
    session.flush()
    return PutResult(_view(row, widgets_of(session, name)), removed)


def delete_type(tx: WriteTx, name: str, *, force: bool) -> int:
    """Delete every version of `name` in the caller's unit; how many widgets went with it."""
    session = tx.session
    if _current(session, name) is None:
        raise NotFound(f"no widget type {name!r} (list them with `tobe admin widget-types list`)")
    in_use = widgets_of(session, name)
    if in_use and not force:
        raise WrongState(
            f"widget type {name!r} is used by {in_use} widget(s): pass --force to delete it "
            "with them"
        )
    tx.execute(_DELETE_RECORDS, name=name)
    tx.execute(_DELETE_WIDGETS, name=name)
    tx.execute(_DELETE_VERSIONS, name=name)
    return in_use
