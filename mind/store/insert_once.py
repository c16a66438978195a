"""INSERTs that say what to do on a conflict (`ON CONFLICT`), in the store's dialect."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from mind.store.models.base import Base

if TYPE_CHECKING:
    from sqlalchemy.dialects.postgresql import Insert as PostgresqlInsert
    from sqlalchemy.dialects.sqlite import Insert as SqliteInsert


def conflict_insert(dialect_name: str, model: type[Base]) -> PostgresqlInsert | SqliteInsert:
    """An INSERT into `model`'s table with the `on_conflict_do_*` clauses of dialect `dialect_name`
    ("postgresql", else SQLite's). The dialect is imported here: a Mind loads only its own
    store's (PostgreSQL's alone is a couple of MiB)."""
    if dialect_name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert(model)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(model)


def insert_if_absent(session: Session, model: type[Base], **values: Any) -> None:
    """Insert a row unless one with its key exists (`ON CONFLICT DO NOTHING`): several writers
    may create the same row at once, e.g. two Minds starting on one database."""
    insert = conflict_insert(session.get_bind().dialect.name, model)
    session.execute(insert.values(**values).on_conflict_do_nothing())
