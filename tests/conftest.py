"""Shared fixtures: a fresh store on each backend (SQLite always, PostgreSQL when configured).

`empty_store_url` is a new database without tables; `store_url` is a new one at the head
revision (copied from a template migrated once per test session); `database` is the store's
`Database` on `store_url` (its event callback is `database_events`). Tests using them run once
per backend.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from helpers.postgres import database_name, fresh_postgres_database, postgres_server_url

from mind.store.database import Database
from mind.store.migrate import upgrade
from mind.store.models import OutboxEvent
from mind.tools.base import DetailMode, ToolContext

# Tests of other features run without the entry decision layer (`[actions]`); the tests of
# initiative turn it on where they build their settings.
os.environ.setdefault("TOBE_ACTIONS__ENABLED", "false")
# Terminal programs under test size themselves from their pseudo-terminal; a runner's
# COLUMNS/LINES (pytest-xdist workers export 80x24) would override it.
for variable in ("COLUMNS", "LINES"):
    os.environ.pop(variable, None)

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def store_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def empty_store_url(store_backend: str, tmp_path: Path) -> Iterator[str]:
    if store_backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'data' / 'tobe.db'}"
        return
    with fresh_postgres_database(postgres_server_url()) as url:
        yield url


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("store-template") / "tobe.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[str]:
    with fresh_postgres_database(postgres_server_url()) as url:
        upgrade(url)
        yield database_name(url)


@pytest.fixture
def store_url(store_backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    if store_backend == "sqlite":
        path = tmp_path / "data" / "tobe.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
        return
    template = request.getfixturevalue("postgres_template")
    with fresh_postgres_database(postgres_server_url(), template=template) as url:
        yield url


@pytest.fixture
def database_events() -> list[OutboxEvent]:
    """Every event the `database` fixture committed, in commit order."""
    return []


@pytest.fixture
async def database(store_url: str, database_events: list[OutboxEvent]) -> AsyncIterator[Database]:
    db = Database.open(store_url, on_commit=database_events.extend)
    try:
        yield db
    finally:
        await db.close()


@pytest.fixture
def tool_context() -> Callable[[str], ToolContext]:
    """A tool call's context in the conversation with this key."""

    def context(conversation_key: str) -> ToolContext:
        return ToolContext(
            conversation_key=conversation_key,
            run_id="run_1",
            tool_call_id="call_1",
            principal="alice",
            detail_mode=DetailMode.TRANSPARENT,
            report_progress=lambda message, fraction: None,
        )

    return context
