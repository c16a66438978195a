"""An INSERT that leaves an existing row alone, on either backend."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from mind.store.models.base import Base


def insert_if_absent(session: Session, model: type[Base], **values: Any) -> None:
    """Insert a row unless one with its key exists (`ON CONFLICT DO NOTHING`): several writers
    may create the same row at once, e.g. two Minds starting on one database."""
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    session.execute(dialect.insert(model).values(**values).on_conflict_do_nothing())
