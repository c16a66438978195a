"""Migrations: they match the models, apply idempotently, and roll back to nothing."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner
from sqlalchemy import inspect, text

from mind.store import migrate
from mind.store.engine import create_migration_engine, is_sqlite
from mind.store.models import PARTIAL_INDEXES, Base
from mind.store.models.recall import BACKEND_OBJECTS
from tobe.cli import main

TOBE = Path(sys.executable).with_name("tobe")
TRIGGERS = {"messages_refuse_update", "tool_projections_terminal_once", "approvals_decided_once"}
RECALL_TRIGGERS = {"recall_entries_ai", "recall_entries_ad", "recall_entries_au"}


def schema(url: str) -> dict[str, object]:
    """Tables with their columns and indexes, plus triggers and the recorded revision."""
    engine = create_migration_engine(url)
    try:
        with engine.connect() as connection:
            inspector = inspect(connection)
            tables = {
                name: (
                    [
                        (c["name"], str(c["type"]), c["nullable"])
                        for c in inspector.get_columns(name)
                    ],
                    sorted(i["name"] for i in inspector.get_indexes(name)),
                )
                for name in inspector.get_table_names()
            }
            if is_sqlite(url):
                query = "SELECT name FROM sqlite_master WHERE type = 'trigger'"
            else:
                query = "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
            triggers = set(connection.scalars(text(query)))
            revision = MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()
    return {"tables": tables, "triggers": triggers, "revision": revision}


def _modelled(name: str | None, type_: str, parents: object) -> bool:
    """Leaves out what only the migrations create: the recall index's backend-only objects
    (FTS5 tables, expression index) and the partial unique indexes."""
    return name not in BACKEND_OBJECTS | PARTIAL_INDEXES


def test_models_and_migrations_agree(store_url: str) -> None:
    engine = create_migration_engine(store_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection, opts={"compare_type": True, "include_name": _modelled}
            )
            diff = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_upgrade_twice_changes_nothing_and_downgrade_removes_everything(
    empty_store_url: str,
) -> None:
    assert migrate.current(empty_store_url) is None
    migrate.upgrade(empty_store_url)
    first = schema(empty_store_url)
    assert first["revision"] == migrate.head_revision()
    assert set(first["tables"]) >= {t for t in Base.metadata.tables} | {"alembic_version"}
    indexes = {name for _, names in first["tables"].values() for name in names}
    assert indexes >= PARTIAL_INDEXES
    # The recall index's FTS5 table is kept in step by triggers on SQLite only.
    recall = RECALL_TRIGGERS if is_sqlite(empty_store_url) else set()
    assert first["triggers"] == TRIGGERS | recall

    migrate.upgrade(empty_store_url)
    assert schema(empty_store_url) == first

    migrate.downgrade(empty_store_url, "base")
    after = schema(empty_store_url)
    assert set(after["tables"]) - {"sqlite_sequence"} == {"alembic_version"}
    assert after["triggers"] == set()
    assert migrate.current(empty_store_url) is None
    if not is_sqlite(empty_store_url):
        engine = create_migration_engine(empty_store_url)
        try:
            with engine.connect() as connection:
                functions = connection.scalars(
                    text("SELECT proname FROM pg_proc WHERE proname LIKE 'tobe%'")
                ).all()
        finally:
            engine.dispose()
        assert functions == []

    migrate.upgrade(empty_store_url)
    assert schema(empty_store_url) == first


def run_tobe(tmp_path: Path, *args: str) -> str:
    env = {
        **os.environ,
        "TOBE_DATA_DIR": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        # The C locale of a minimal container or a cron job: nothing the command reads may
        # depend on the locale's encoding.
        "LC_ALL": "C",
        "LANG": "C",
    }
    env.pop("TOBE_CONFIG", None)
    env.pop("TOBE_DATABASE_URL", None)
    result = subprocess.run(
        [str(TOBE), "db", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_cli_upgrade_on_an_empty_data_dir_creates_the_database_once(tmp_path: Path) -> None:
    """The real `tobe` executable against the configured (default SQLite) store."""
    db_file = tmp_path / "data" / "tobe.db"
    url = f"sqlite:///{db_file}"

    head = migrate.head_revision()
    assert f"upgraded base -> {head}" in run_tobe(tmp_path, "upgrade")
    first = schema(url)
    assert first["revision"] == migrate.head_revision()
    before = digest(db_file)

    assert "nothing to do" in run_tobe(tmp_path, "upgrade")
    assert schema(url) == first
    assert digest(db_file) == before

    assert f"downgraded {head} -> base" in run_tobe(tmp_path, "downgrade", "base")
    assert set(schema(url)["tables"]) - {"sqlite_sequence"} == {"alembic_version"}


def test_cli_reports_and_moves_the_revision_of_a_database_by_url(empty_store_url: str) -> None:
    runner = CliRunner()

    def tobe_db(*args: str) -> str:
        result = runner.invoke(main, ["db", *args, "--url", empty_store_url])
        assert result.exit_code == 0, result.output
        return result.output.strip()

    head = migrate.head_revision()
    assert tobe_db("current") == "base (behind head)"
    assert tobe_db("upgrade") == f"upgraded base -> {head}"
    assert tobe_db("upgrade") == f"already at {head}; nothing to do"
    assert tobe_db("current") == f"{head} (head)"
    assert tobe_db("downgrade", "base") == f"downgraded {head} -> base"
    assert tobe_db("current") == "base (behind head)"


def test_cli_refuses_unknown_revisions_and_databases(tmp_path: Path) -> None:
    runner = CliRunner()
    url = f"sqlite:///{tmp_path / 'tobe.db'}"
    result = runner.invoke(main, ["db", "upgrade", "--url", url, "--revision", "nope"])
    assert result.exit_code == 1
    assert "upgrade failed" in result.output and "nope" in result.output
    result = runner.invoke(main, ["db", "current", "--url", "mysql://u:hunter2@h/db"])
    assert result.exit_code == 1
    assert "unsupported database" in result.output and "hunter2" not in result.output
