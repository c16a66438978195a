"""Provider keys sealed in the store: round trip, what the store holds, refusals."""

from __future__ import annotations

import stat

import pytest
from helpers import store_backend

from mind.credentials.provider_keys import (
    MAIN,
    ProviderKeyError,
    describe_key,
    offline_keys,
    secrets_key_file,
    stored_key,
)
from tobe.config import Settings, load_settings
from tobe.runtime.statelock import StateLock

KEY = "sk-proj-sealed-4242"


@pytest.fixture
def settings(tmp_path) -> Settings:
    """On the test's store (`--store-backend`)."""
    data_dir = tmp_path / "data"
    url = store_backend.environment(data_dir)["TOBE_DATABASE_URL"]
    return load_settings(data_dir=data_dir, database_url=url)


def _store_bytes(settings: Settings) -> bytes:
    """Everything the store holds: its files (database, WAL, free pages) on SQLite, every row
    of every table on PostgreSQL."""
    if settings.database_url:
        return store_backend.dump(settings.store_url).encode()
    return b"".join(p.read_bytes() for p in settings.data_dir.glob("tobe.db*"))


def test_a_stored_key_is_sealed_in_the_store_and_read_back_for_its_kind(settings):
    with offline_keys(settings) as keys:
        keys.put(MAIN, "openai", KEY, actor="test")
    assert stored_key(settings, "openai") == KEY
    assert stored_key(settings, "anthropic") is None
    assert KEY.encode() not in _store_bytes(settings)
    key_file = secrets_key_file(settings.data_dir)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    shown = describe_key(settings)
    assert shown is not None and (shown.kind, shown.last4) == ("openai", "4242")


def test_setting_and_deleting_are_audited_without_the_key(settings):
    with offline_keys(settings) as keys:
        keys.put(MAIN, "openai", KEY, actor="test")
        keys.put(MAIN, "openai", KEY + "b", actor="test")
        assert keys.delete(MAIN, actor="test") is True
        assert keys.delete(MAIN, actor="test") is False
    with store_backend.connect(settings.store_url) as db:
        rows = db.execute("select action, target, details from management_audit").fetchall()
        [(left,)] = db.execute("select count(*) from provider_secrets").fetchall()
    assert [row[0] for row in rows] == [
        "provider_key.set",
        "provider_key.set",
        "provider_key.delete",
    ]
    assert all(KEY not in str(row) for row in rows)
    assert left == 0 and stored_key(settings, "openai") is None


def test_a_replaced_secrets_key_is_an_error_not_a_silent_miss(settings):
    with offline_keys(settings) as keys:
        keys.put(MAIN, "openai", KEY, actor="test")
    key_file = secrets_key_file(settings.data_dir)
    key_file.unlink()
    with offline_keys(settings) as keys:
        keys.put("other", "gemini", "g-key", actor="test")  # makes a new secrets key
    with pytest.raises(ProviderKeyError, match="does not open"):
        stored_key(settings, "openai")


def test_writing_is_refused_in_one_line_while_a_mind_holds_the_data_directory(settings):
    with StateLock(settings.data_dir, "tobe mind serve on 127.0.0.1:7410"):
        with pytest.raises(ProviderKeyError, match="tobe mind serve.*stop the Mind"):
            with offline_keys(settings):
                pass


@pytest.mark.sqlite_store(
    reason="a store not yet created is the SQLite file; a PostgreSQL database is its operator's"
)
def test_a_store_that_does_not_exist_holds_no_key_and_is_not_created(settings):
    assert stored_key(settings, "openai") is None
    assert describe_key(settings) is None
    assert not (settings.data_dir / "tobe.db").exists()
