"""Which store the end-to-end helpers give a Mind: the SQLite file in its data directory, or a
PostgreSQL database of its own on the server named by `TOBE_TEST_PG_URL`.

`database_url(data_dir)` is the store of the Mind on `data_dir`. On PostgreSQL the first call
for a data directory creates a fresh database (a copy of one migrated once per process) and the
same URL is answered afterwards; the database is dropped when the test or module that created
it ends (`used`), or at the end of the session (a session fixture's).
The data directory stays for everything else: credentials files, logs, the state lock.

The backend is `--store-backend` (tests/conftest.py), or for the tests marked `pg_e2e` their
`mind_store` (or `module_store`) parameter. `connect`, `rows` and `dump` read a store on either
backend.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, inspect, text

from helpers.postgres import database_name, fresh_postgres_database, postgres_server_url
from mind.store.engine import create_migration_engine
from mind.store.migrate import upgrade

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
BACKENDS = (SQLITE, POSTGRESQL)


@dataclass
class _Scope:
    backend: str
    drops: ExitStack | None
    created: list[Path]


@dataclass
class _State:
    # The session's backend (`--store-backend`) and the one in use now.
    default: str = SQLITE
    backend: str = SQLITE
    template: str = ""
    sqlite_template: Path | None = None
    # Databases by data directory; those the current test created, and the stack dropping them.
    databases: dict[Path, str] = field(default_factory=dict)
    created: list[Path] = field(default_factory=list)
    drops: ExitStack | None = None
    session: ExitStack = field(default_factory=ExitStack)
    # The module's scope (`used(..., module=True)`), for module fixtures set up inside a test's.
    module: _Scope | None = None


_state = _State()


def configure(default: str) -> None:
    """The session's backend (`--store-backend`)."""
    _state.default = _state.backend = default


def database_url(data_dir: Path) -> str:
    """The store URL of the Mind whose data directory is `data_dir` (once given a PostgreSQL
    database, always that one)."""
    key = data_dir.resolve()
    if key not in _state.databases and _state.backend == SQLITE:
        return f"sqlite:///{data_dir / 'tobe.db'}"
    if key not in _state.databases:
        stack = _state.drops or _state.session
        fresh = fresh_postgres_database(postgres_server_url(), template=_template())
        _state.databases[key] = stack.enter_context(fresh)
        if _state.drops is not None:
            _state.created.append(key)
    return _state.databases[key]


def environment(data_dir: Path) -> dict[str, str]:
    """The settings that point a ToBe process on `data_dir` at its store."""
    url = database_url(data_dir)
    return {"TOBE_DATABASE_URL": "" if url.startswith("sqlite") else url}


def migrate(url: str) -> None:
    """Bring the store at `url` to the head revision. A SQLite file not made yet is a copy of
    one migrated once per process: hundreds of Minds are started, each on a new store, and
    running every migration takes a fraction of a second each time."""
    path = Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None
    if path is None or path.exists():
        upgrade(url)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(_sqlite_template(), path)  # its owner-only mode too, as the store makes it


def _sqlite_template() -> Path:
    if _state.sqlite_template is None:
        directory = tempfile.mkdtemp(prefix="tobe-store-template-")
        _state.session.callback(shutil.rmtree, directory, ignore_errors=True)
        path = Path(directory) / "tobe.db"
        upgrade(f"sqlite:///{path}")
        _state.sqlite_template = path
    return _state.sqlite_template


def _template() -> str:
    """A database at the head revision, migrated once per process, to copy."""
    if not _state.template:
        url = _state.session.enter_context(fresh_postgres_database(postgres_server_url()))
        upgrade(url)
        _state.template = database_name(url)
    return _state.template


@contextmanager
def used(chosen: str, *, module: bool = False) -> Iterator[None]:
    """One test (or one module) on `chosen`: the databases it creates are dropped when it ends."""
    outer = _current()
    previous_module = _state.module
    with ExitStack() as drops:
        mine = _Scope(chosen, drops, [])
        _enter(mine)
        if module:
            _state.module = mine
        try:
            yield
        finally:
            for key in mine.created:
                del _state.databases[key]
            _enter(outer)
            _state.module = previous_module


@contextmanager
def fixture_setup(scope: str, *, on_module_store: bool) -> Iterator[None]:
    """While a fixture wider than a test is set up: its databases live as long as its scope
    (the session's, or the module's unless it asks for `module_store`), on the session's
    backend, whichever test first asked for it."""
    if scope == "function" or (scope != "session" and on_module_store):
        yield
        return
    outer = _current()
    if scope == "session" or _state.module is None:
        _enter(_Scope(_state.default, None, []))
    else:
        _enter(_state.module)
    try:
        yield
    finally:
        _enter(outer)


def _current() -> _Scope:
    return _Scope(_state.backend, _state.drops, _state.created)


def _enter(scope: _Scope) -> None:
    _state.backend, _state.drops, _state.created = scope.backend, scope.drops, scope.created


class Rows(list[tuple[Any, ...]]):
    """A query's rows, read like a `sqlite3` cursor's."""

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self)

    def fetchone(self) -> tuple[Any, ...] | None:
        return self[0] if self else None


class StoreConnection:
    """One transaction on a store, on either backend, used like a `sqlite3` connection: `?`
    marks the arguments, in order; JSON columns come as text, as SQLite reads them
    (PostgreSQL's driver decodes them)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def execute(self, sql: str, args: Sequence[object] = ()) -> Rows:
        parts = sql.split("?")
        numbered = parts[0] + "".join(f":p{i}{part}" for i, part in enumerate(parts[1:]))
        result = self._connection.execute(text(numbered), {f"p{i}": a for i, a in enumerate(args)})
        if not result.returns_rows:
            return Rows()
        return Rows(tuple(_as_text(value) for value in row) for row in result)


@contextmanager
def connect(url: str) -> Iterator[StoreConnection]:
    """A transaction on the store at `url`, committed when the block ends."""
    engine = create_migration_engine(url)
    try:
        with engine.begin() as connection:
            yield StoreConnection(connection)
    finally:
        engine.dispose()


def rows(url: str, sql: str, *args: object) -> list[tuple[Any, ...]]:
    """The rows of one query on the store at `url` (see `StoreConnection`)."""
    with connect(url) as connection:
        return connection.execute(sql, args).fetchall()


def dump(url: str) -> str:
    """Every row of every table of the store at `url`, as text (what a secret must not be in)."""
    engine = create_migration_engine(url)
    try:
        with engine.connect() as connection:
            tables = inspect(connection).get_table_names()
            return "\n".join(
                f"{table}: {row!r}"
                for table in tables
                for row in connection.execute(text(f'SELECT * FROM "{table}"'))
            )
    finally:
        engine.dispose()


def _as_text(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, dict | list) else value


def close() -> None:
    """Drop the session's databases (the template, those made by module fixtures)."""
    _state.session.close()
    _state.databases.clear()
    _state.template, _state.sqlite_template = "", None
