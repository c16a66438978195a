"""`[store] sqlite_synchronous`: how often the Mind's SQLite store syncs to disk is a setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from mind.scripted.provider import ScriptedProvider
from mind.server import build
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from tobe.config import ConfigError, load_settings
from tobe.provider_detect import DEMO_SCRIPT

# What `PRAGMA synchronous` reads back.
PRAGMA_VALUES = {"normal": 1, "full": 2}


def synchronous(tx: WriteTx) -> int | None:
    return tx.session.execute(text("PRAGMA synchronous")).scalar()


@pytest.mark.parametrize("level", ["normal", "full"])
async def test_the_minds_write_connection_syncs_as_the_setting_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, level: str
) -> None:
    monkeypatch.setenv("TOBE_STORE__SQLITE_SYNCHRONOUS", level)
    settings = load_settings(data_dir=tmp_path)
    app = build(settings, ScriptedProvider.from_file(DEMO_SCRIPT))
    try:
        # A unit runs on the store's one write connection (`mind.store.database`).
        assert await app.database.write(synchronous) == PRAGMA_VALUES[level]
    finally:
        await app.database.close()


def test_the_store_syncs_normal_unless_told_otherwise(tmp_path: Path) -> None:
    assert load_settings(data_dir=tmp_path).store.sqlite_synchronous == "normal"


def test_an_unknown_synchronous_level_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[store\] sqlite_synchronous: 'off' is not one of"):
        load_settings(store={"sqlite_synchronous": "off"})
    with pytest.raises(ValueError, match="normal or full"):
        Database.open(f"sqlite:///{tmp_path / 'tobe.db'}", sqlite_synchronous="off")  # type: ignore[arg-type]
