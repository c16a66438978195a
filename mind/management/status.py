"""What `tobe admin status` reports about the store (the running Mind adds its live parts)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from mind.store.models import Conversation, Run


def display_url(url: str) -> str:
    """The database URL with any password masked."""
    return make_url(url).render_as_string(hide_password=True)


def sqlite_path(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def database_size(session: Session, url: str) -> int:
    """Bytes on disk: the SQLite file with its WAL, or PostgreSQL's database size."""
    path = sqlite_path(url)
    if path is not None:
        files = (path, path.with_name(path.name + "-wal"))
        return sum(f.stat().st_size for f in files if f.exists())
    if session.get_bind().dialect.name == "postgresql":
        return int(session.scalar(text("SELECT pg_database_size(current_database())")) or 0)
    return 0


def schema_revision(session: Session) -> str:
    """The Alembic revision, or "" when the store has none; the rest of the read goes on."""
    try:
        # A savepoint, because a failed statement aborts the whole transaction on PostgreSQL.
        with session.begin_nested():
            return str(session.scalar(text("SELECT version_num FROM alembic_version")) or "")
    except DBAPIError:
        return ""


def conversation_count(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(Conversation)) or 0)


def active_run_count(session: Session) -> int:
    return int(
        session.scalar(select(func.count()).select_from(Run).where(Run.state == "running")) or 0
    )
