"""Schema migrations of the store, run programmatically with the packaged Alembic scripts.

These functions are synchronous and use synchronous drivers, so they work both from a plain
process (the `tobe db` commands) and from inside a running event loop (Mind at start; call
them before serving, they block while they run). Upgrading to a revision the database already
has changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy.engine import Connection

from mind.store.engine import create_migration_engine, is_sqlite, sync_url

ALEMBIC_INI = Path(__file__).with_name("alembic.ini")


def alembic_config() -> Config:
    """The packaged Alembic configuration (script location inside the installed package)."""
    return Config(str(ALEMBIC_INI))


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError("the packaged migrations have no head revision")
    return head


def is_packaged(revision: str) -> bool:
    """Whether `revision` is one of this ToBe's migrations; False for a newer ToBe's."""
    try:
        return ScriptDirectory.from_config(alembic_config()).get_revision(revision) is not None
    except CommandError:
        return False


def _sqlite_file(url: str) -> Path | None:
    parsed = sync_url(url)
    if not is_sqlite(parsed) or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


@contextmanager
def _connection(url: str) -> Iterator[Connection]:
    engine = create_migration_engine(url)
    try:
        with engine.connect() as connection:
            yield connection
    finally:
        engine.dispose()


def _run(url: str, action: str, revision: str) -> None:
    config = alembic_config()
    with _connection(url) as connection:
        config.attributes["connection"] = connection
        getattr(command, action)(config, revision)
        connection.commit()


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at `url` up to `revision`, creating a SQLite file if needed."""
    path = _sqlite_file(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    _run(url, "upgrade", revision)


def downgrade(url: str, revision: str) -> None:
    """Migrate the database at `url` down to `revision` (`base` removes every table)."""
    _run(url, "downgrade", revision)


def current(url: str) -> str | None:
    """The revision the database is at; None for an empty (or missing SQLite) database."""
    path = _sqlite_file(url)
    if path is not None and not path.exists():
        return None
    with _connection(url) as connection:
        return MigrationContext.configure(connection).get_current_revision()
