"""The at-head check the Mind makes before it would load Alembic: it agrees with Alembic, and
anything short of a store known to be at the head means "migrate"."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from mind.store import migrate, schema_head
from mind.store.engine import create_migration_engine
from mind.store.upgrade_child import StoreUpgradeError


def _set_revision(url: str, revision: str) -> None:
    engine = create_migration_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
    finally:
        engine.dispose()


def test_the_head_read_from_the_revision_files_is_alembics() -> None:
    assert schema_head.packaged_head() == migrate.head_revision()


def test_only_a_store_at_the_head_counts_as_at_head(empty_store_url: str) -> None:
    assert not schema_head.at_head(empty_store_url)
    migrate.upgrade(empty_store_url, "0001")
    assert not schema_head.at_head(empty_store_url)
    migrate.upgrade(empty_store_url)
    assert schema_head.at_head(empty_store_url)
    _set_revision(empty_store_url, "a-newer-tobes-revision")
    assert not schema_head.at_head(empty_store_url)


def test_a_missing_sqlite_store_is_not_at_head_and_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "data" / "tobe.db"
    assert not schema_head.at_head(f"sqlite:///{path}")
    assert not path.exists()


def test_upgrade_when_behind_migrates_a_store_that_is_behind(empty_store_url: str) -> None:
    migrate.upgrade(empty_store_url, "0001")
    schema_head.upgrade_when_behind(empty_store_url)
    assert migrate.current(empty_store_url) == migrate.head_revision()


def test_revision_files_with_two_heads_give_no_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_text('revision = "a"\ndown_revision = None\n')
    (tmp_path / "b.py").write_text('revision: str = "b"\ndown_revision: str | None = None\n')
    monkeypatch.setattr(schema_head, "VERSIONS", tmp_path)
    assert schema_head.packaged_head() is None
    (tmp_path / "c.py").write_text('revision = "c"\ndown_revision = ("a", "b")\n')
    assert schema_head.packaged_head() == "c"


def test_a_failed_upgrade_names_the_childs_last_error_line(empty_store_url: str) -> None:
    migrate.upgrade(empty_store_url)
    _set_revision(empty_store_url, "a-newer-tobes-revision")
    with pytest.raises(StoreUpgradeError, match="a-newer-tobes-revision"):
        schema_head.upgrade_when_behind(empty_store_url)
