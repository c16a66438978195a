"""Alembic environment: runs migrations on a connection handed over by `mind.store.migrate`.

Run through the `alembic` command instead, it connects to `sqlalchemy.url` from the ini file
or, when that is empty, to the configured store (`tobe.config.Settings().store_url`).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from mind.store.engine import create_migration_engine, is_sqlite
from mind.store.models import Base

# Arbitrary application-wide key of the advisory lock that serialises migrations ("tobm").
MIGRATION_LOCK = 0x746F626D


def run(connection: Connection) -> None:
    sqlite = is_sqlite(connection.engine.url)
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        # The store's SQLite connections begin explicitly, so DDL is transactional there too.
        transactional_ddl=True,
        render_as_batch=sqlite,
    )
    with context.begin_transaction():
        if not sqlite:
            # Minds starting together on one PostgreSQL database migrate one after the other:
            # the next reads the schema's revision once the first has committed.
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        context.run_migrations()


def main() -> None:
    config = context.config
    connection = config.attributes.get("connection")
    if connection is not None:
        run(connection)
        return
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        from tobe.config import Settings

        url = Settings().store_url
    engine = create_migration_engine(url)
    try:
        with engine.connect() as connection:
            run(connection)
            connection.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run against a database")
main()
