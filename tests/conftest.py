"""Shared fixtures: a fresh store on each backend (SQLite always, PostgreSQL when configured).

`empty_store_url` is a new database without tables; `store_url` is a new one at the head
revision (copied from a template migrated once per test session); `database` is the store's
`Database` on `store_url` (its event callback is `database_events`). Tests using them run once
per backend.

End-to-end tests run their Minds on `--store-backend` (sqlite by default; postgresql gives each
Mind a database of its own on `TOBE_TEST_PG_URL`, see helpers/store_backend.py) through the
autouse `mind_store` fixture. Tests marked `pg_e2e` run on both backends in one run (ids
`[sqlite]` and `[postgresql]`); tests marked `sqlite_store` need the SQLite file itself and skip
on PostgreSQL.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from pathlib import Path

import pytest
from helpers import store_backend as e2e_store
from helpers.postgres import (
    PG_URL_ENV,
    database_name,
    fresh_postgres_database,
    postgres_server_url,
)

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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store-backend",
        choices=e2e_store.BACKENDS,
        default=e2e_store.SQLITE,
        help="the store of the Minds end-to-end tests start: the SQLite file in the data "
        f"directory, or a PostgreSQL database of their own on the server ${PG_URL_ENV}",
    )


def pytest_configure(config: pytest.Config) -> None:
    chosen = config.getoption("store_backend")
    if chosen == e2e_store.POSTGRESQL and not os.environ.get(PG_URL_ENV):
        raise pytest.UsageError(
            f"--store-backend=postgresql needs {PG_URL_ENV}, a PostgreSQL server URL "
            "(start one with scripts/start_test_postgres.sh)"
        )
    e2e_store.configure(chosen)
    config.pluginmanager.register(FixtureStoreScopes(), "fixture-store-scopes")


# What makes a file long, longest first: marked so, starting processes, making databases.
LONG_FIRST = ("long_running", "e2e", "postgres")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files that take long come first: those marked `long_running`, then those starting real
    processes (`e2e`), then those with tests on PostgreSQL (a database made for each test),
    then the rest; in the order collected within each group, each file's tests together.

    The test command hands whole files to its workers (`--dist loadfile`) in this order
    (`--no-loadscope-reorder`; by default pytest-xdist orders files by their number of tests,
    which starts the one-test soaks, the longest files, last). Workers freed near the end
    then take files of quick tests, and all finish together."""
    ranks: dict[Path, int] = {}
    for item in items:
        rank = next(
            (n for n, name in enumerate(LONG_FIRST) if item.get_closest_marker(name)),
            len(LONG_FIRST),
        )
        ranks[item.path] = min(rank, ranks.get(item.path, rank))
    items.sort(key=lambda item: ranks[item.path])


def pytest_unconfigure(config: pytest.Config) -> None:
    e2e_store.close()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A `pg_e2e` test runs on both stores when the session's is SQLite; one whose Mind is a
    module fixture (asking for `module_store`) gets that Mind once per store."""
    chosen = metafunc.config.getoption("store_backend")
    if not metafunc.definition.get_closest_marker("pg_e2e") or chosen != e2e_store.SQLITE:
        return
    if "module_store" in metafunc.fixturenames:
        metafunc.parametrize("module_store", BACKENDS, indirect=True, scope="module")
    else:
        metafunc.parametrize("mind_store", BACKENDS, indirect=True)


@pytest.fixture(scope="module", autouse=True)
def module_databases(request: pytest.FixtureRequest) -> Iterator[None]:
    """The databases a module's fixtures create (on `--store-backend`) live as long as it."""
    with e2e_store.used(request.config.getoption("store_backend"), module=True):
        yield


class FixtureStoreScopes:
    """A session or module fixture's databases belong to its scope, not to the test that first
    asked for it.

    A plugin rather than this conftest's own hook: pytest asks a session fixture's setup of the
    hooks of the session's node, the root directory, which this conftest (in tests/) is not
    consulted for; a conftest hook would miss every session fixture, whose databases were then
    dropped with the test or module that happened to set it up first."""

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(
        self, fixturedef: pytest.FixtureDef[object], request: pytest.FixtureRequest
    ) -> Generator[None, object, object]:
        if fixturedef.argname in ("module_databases", "module_store"):
            return (yield)
        on_module_store = "module_store" in fixturedef.argnames
        with e2e_store.fixture_setup(fixturedef.scope, on_module_store=on_module_store):
            return (yield)


@pytest.fixture(scope="module")
def module_store(request: pytest.FixtureRequest) -> Iterator[str]:
    """The store of the Minds a module fixture starts: such a fixture asks for this one, so
    that a `pg_e2e` test gets its Mind on each store."""
    chosen = getattr(request, "param", request.config.getoption("store_backend"))
    if chosen == e2e_store.POSTGRESQL:
        postgres_server_url()
    with e2e_store.used(chosen):
        yield chosen


@pytest.fixture(autouse=True)
def mind_store(request: pytest.FixtureRequest) -> Iterator[str]:
    """The store the Minds this test starts run on (helpers/store_backend.py)."""
    if "module_store" in request.fixturenames:
        chosen = request.getfixturevalue("module_store")
    else:
        chosen = getattr(request, "param", request.config.getoption("store_backend"))
    if chosen == e2e_store.POSTGRESQL:
        marker = request.node.get_closest_marker("sqlite_store")
        if marker is not None:
            pytest.skip(f"needs the SQLite store: {marker.kwargs.get('reason', '')}")
        postgres_server_url()
    with e2e_store.used(chosen):
        yield chosen


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
