"""Throwaway PostgreSQL databases for tests, on the server named by `TOBE_TEST_PG_URL`.

Without that variable PostgreSQL tests skip, unless `TOBE_REQUIRE_PG=1` (CI), where they fail:
a store test-suite that silently skipped PostgreSQL would prove nothing about it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import text

from mind.store.engine import create_migration_engine, sync_url

PG_URL_ENV = "TOBE_TEST_PG_URL"
REQUIRE_PG_ENV = "TOBE_REQUIRE_PG"


def postgres_server_url() -> str:
    """The configured server URL; skips (or fails, when required) the test without one."""
    url = os.environ.get(PG_URL_ENV, "")
    if url:
        return url
    if os.environ.get(REQUIRE_PG_ENV) == "1":
        pytest.fail(f"{REQUIRE_PG_ENV}=1 but {PG_URL_ENV} is not set: PostgreSQL tests must run")
    pytest.skip(f"PostgreSQL tests need {PG_URL_ENV} (see scripts/start_test_postgres.sh)")


def _admin(server_url: str, statement: str) -> None:
    engine = create_migration_engine(server_url).execution_options(isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(text(statement))
    finally:
        engine.dispose()


@contextmanager
def fresh_postgres_database(server_url: str, *, template: str = "") -> Iterator[str]:
    """A new database on the server (plain `postgresql://` URL), dropped afterwards.

    Empty, or a copy of the database named `template` (which must have no open connections).
    """
    name = f"tobe_t_{uuid.uuid4().hex[:16]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    _admin(server_url, f'CREATE DATABASE "{name}"{copy}')
    try:
        url = sync_url(server_url).set(drivername="postgresql", database=name)
        yield url.render_as_string(hide_password=False)
    finally:
        _admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_name(url: str) -> str:
    return sync_url(url).database or ""
