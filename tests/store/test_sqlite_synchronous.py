"""`[store] sqlite_synchronous`: how often the Mind's SQLite store syncs to disk is a setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from mind.providers.factory import DEMO_SCRIPT
from mind.providers.scripted import ScriptedProvider
from mind.server import MindApp
from mind.store.engine import create_engine
from tobe.config import load_settings

# What `PRAGMA synchronous` reads back.
PRAGMA_VALUES = {"normal": 1, "full": 2}


@pytest.mark.parametrize("level", ["normal", "full"])
async def test_the_minds_write_connection_syncs_as_the_setting_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, level: str
) -> None:
    monkeypatch.setenv("TOBE_STORE__SQLITE_SYNCHRONOUS", level)
    settings = load_settings(data_dir=tmp_path)
    app = MindApp.build(settings, ScriptedProvider.from_file(DEMO_SCRIPT))
    try:
        # SQLite writes go through the one write connection (`mind.store.engine`).
        async with app.engine.connect() as writer:
            synchronous = (await writer.exec_driver_sql("PRAGMA synchronous")).scalar()
            assert synchronous == PRAGMA_VALUES[level]
            await writer.commit()
    finally:
        await app.read_engine.dispose()
        await app.engine.dispose()


def test_the_store_syncs_normal_unless_told_otherwise(tmp_path: Path) -> None:
    assert load_settings(data_dir=tmp_path).store.sqlite_synchronous == "normal"


def test_an_unknown_synchronous_level_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="sqlite_synchronous"):
        load_settings(store={"sqlite_synchronous": "off"})
    with pytest.raises(ValueError, match="normal or full"):
        create_engine(f"sqlite:///{tmp_path / 'tobe.db'}", sqlite_synchronous="off")  # type: ignore[arg-type]
