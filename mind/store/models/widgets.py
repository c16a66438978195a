"""Widgets: the operator's widget types (every version kept) and a conversation's widgets with
their records.

A type's versions are rows of `widget_types`, one per `put`; the newest is the current one. A
widget names the type version it was made with; its records are validated against the modules
of the type's current version when written. Widgets belong to a conversation and go with it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, UTCDateTime, utcnow


class WidgetType(Base):
    """One version of a widget type: its modules (the schema document) and its page."""

    __tablename__ = "widget_types"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    # The schema document: {"modules": {NAME: {"description": ..., "schema": {...}}}}.
    modules: Mapped[dict[str, Any]] = mapped_column(JSON)
    page: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Widget(Base):
    """A widget in a conversation: its type (and the version it was made with), title and
    presentation; `revision` counts every change to it or its records."""

    __tablename__ = "widgets"
    __table_args__ = (UniqueConstraint("conversation_key", "idempotency_key"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    type_name: Mapped[str] = mapped_column(String(64), index=True)
    type_version: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String(200))
    summary: Mapped[str] = mapped_column(Text, default="")
    # A media digest, or "" without a cover.
    cover: Mapped[str] = mapped_column(String(64), default="")
    revision: Mapped[int] = mapped_column(Integer, default=1)
    # Makes a replayed creation (the same tool call) find the widget it made; None: none given.
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class WidgetRecord(Base):
    """One record of a widget's module; `revision` counts its writes (1 for the first)."""

    __tablename__ = "widget_records"

    widget_id: Mapped[str] = mapped_column(
        ForeignKey("widgets.id", ondelete="CASCADE"), primary_key=True
    )
    module: Mapped[str] = mapped_column(String(64), primary_key=True)
    record_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    data: Mapped[Any] = mapped_column(JSON)
    revision: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
