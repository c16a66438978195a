"""`tobe backup` and `tobe restore` on a data directory no service runs on: what the archive
holds (the person's widgets too) and leaves out, its modes, schema versions, and what a restore
replaces. The commands run in this process; test_backup_e2e.py runs them as processes beside a
running Mind."""

from __future__ import annotations

import asyncio
import io
import json
import socket
import sqlite3
import stat
import tarfile
from pathlib import Path

import pytest
from backup_cli import cli_env, tree
from backup_cli import tobe_here as tobe
from helpers.mind_process import issue_token, store_url
from helpers.postgres import fresh_postgres_database, postgres_server_url

from management.backup import pg_dump_command
from mind.store import models
from mind.store.database import Database
from mind.store.migrate import current, head_revision, upgrade
from mind.store.write_tx import WriteTx
from mind.widgets.types import put_type
from mind.widgets.widgets import Widgets

pytestmark = pytest.mark.sqlite_store(reason="backs up and restores the SQLite store file")

CONFIG = 'log_level = "INFO"\n'


def _data_dir(tmp_path: Path) -> Path:
    """A data directory with a migrated store holding one credential, and files of each kind."""
    data_dir = tmp_path / "data"
    upgrade(store_url(data_dir))
    issue_token(store_url(data_dir), kind="client", principal="alice", scopes=["chat"])
    credentials = data_dir / "credentials"
    credentials.mkdir(mode=0o700)
    for name in ("client.token", "secrets.key"):
        (credentials / name).write_text(f"{name} secret\n")
        (credentials / name).chmod(0o600)
    (data_dir / "skills").mkdir()
    (data_dir / "skills" / "tea.skill.md").write_text("# tea\n")
    (data_dir / "logs").mkdir()
    (data_dir / "logs" / "mind.log").write_text("a log line\n")
    (data_dir / "runtime.json").write_text('{"services": {}}\n')
    return data_dir


def _names(archive: Path) -> list[str]:
    with tarfile.open(archive) as tar:
        return tar.getnames()


def _manifest(archive: Path) -> dict[str, object]:
    with tarfile.open(archive) as tar:
        handle = tar.extractfile("manifest.json")
        assert handle is not None
        return dict(json.loads(handle.read()))


def test_the_archive_is_owner_only_and_holds_snapshots_never_wal_sockets_or_runtime_files(
    tmp_path: Path,
) -> None:
    data_dir = _data_dir(tmp_path)
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    # An adapter's own database whose last commit is only in its write-ahead log.
    adapter_db = data_dir / "awareness" / "adapters" / "feeds" / "data" / "seen.db"
    adapter_db.parent.mkdir(parents=True)
    live = sqlite3.connect(adapter_db, isolation_level=None)
    live.execute("PRAGMA journal_mode=WAL")
    live.execute("PRAGMA wal_autocheckpoint=0")
    live.execute("CREATE TABLE seen (id TEXT)")
    live.execute("INSERT INTO seen VALUES ('only-in-the-wal')")
    assert Path(f"{adapter_db}-wal").stat().st_size > 0
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(data_dir / "mind.sock"))
    archive = tmp_path / "out" / "backup.tar.gz"
    archive.parent.mkdir()
    try:
        result = tobe(cli_env(data_dir, config), "backup", str(archive))
    finally:
        listening.close()
        live.close()

    assert result.returncode == 0, result.stderr
    assert f"to {archive}" in result.stdout
    assert "holds secrets" in result.stdout and "(0600)" in result.stdout
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    assert sorted(p.name for p in archive.parent.iterdir()) == ["backup.tar.gz"]
    names = _names(archive)
    assert names[0] == "manifest.json"
    assert {
        "store.db",
        "config/config.toml",
        "data/credentials/client.token",
        "data/credentials/secrets.key",
        "data/skills/tea.skill.md",
        "data/awareness/adapters/feeds/data/seen.db",
    } <= set(names)
    left_out = [n for n in names if n.endswith(("-wal", "-shm", ".sock", "runtime.json"))]
    assert left_out == []
    assert not any(n.startswith("data/logs") or n == "data/tobe.db" for n in names)
    manifest = _manifest(archive)
    assert manifest["schema_revision"] == head_revision()
    assert manifest["databases"] == ["awareness/adapters/feeds/data/seen.db"]

    restored = tmp_path / "restored"
    result = tobe(cli_env(restored, tmp_path / "elsewhere.toml"), "restore", str(archive))
    assert result.returncode == 0, result.stderr
    copy = sqlite3.connect(restored / "awareness" / "adapters" / "feeds" / "data" / "seen.db")
    assert copy.execute("SELECT id FROM seen").fetchall() == [("only-in-the-wal",)]
    copy.close()
    files = tree(restored)
    assert files["credentials/secrets.key"] == tree(data_dir)["credentials/secrets.key"]
    assert files["credentials/secrets.key"][0] == 0o600
    assert files["tobe.db"][0] == 0o600
    assert all(mode & 0o077 == 0 for mode, _ in files.values())
    assert "logs/mind.log" not in files and "runtime.json" not in files


def test_backup_never_replaces_a_file_without_force(tmp_path: Path) -> None:
    data_dir = _data_dir(tmp_path)
    archive = tmp_path / "backup.tar.gz"
    archive.write_text("an earlier file")
    env = cli_env(data_dir, tmp_path / "none.toml")

    result = tobe(env, "backup", str(archive))
    assert result.returncode == 1
    assert result.stderr == (
        f"Error: {archive} exists; choose another name or pass --force to replace it\n"
    )
    assert archive.read_text() == "an earlier file"

    assert tobe(env, "backup", "--force", str(archive)).returncode == 0
    assert _names(archive)[0] == "manifest.json"
    # A directory gets a dated archive in it.
    result = tobe(env, "backup", str(tmp_path))
    [dated] = tmp_path.glob("tobe-backup-*.tar.gz")
    assert f"to {dated}" in result.stdout


def test_an_archive_from_an_older_schema_is_migrated_forward(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    older = "0011"
    upgrade(store_url(data_dir), older)
    # A row as that schema holds it: today's models have columns the older store lacks.
    store = sqlite3.connect(data_dir / "tobe.db")
    store.execute(
        "INSERT INTO credentials (id, kind, principal, scopes, prefix, secret_hash, label,"
        " created_at) VALUES ('c1', 'client', 'alice', '[\"chat\"]', 'p1', ?, '',"
        " '2026-01-01 00:00:00')",
        ("0" * 64,),
    )
    store.commit()
    store.close()
    archive = tmp_path / "older.tar.gz"
    assert tobe(cli_env(data_dir, tmp_path / "none.toml"), "backup", str(archive)).returncode == 0
    assert _manifest(archive)["schema_revision"] == older

    restored = tmp_path / "restored"
    result = tobe(cli_env(restored, tmp_path / "none.toml"), "restore", str(archive))

    assert result.returncode == 0, result.stderr
    assert f"The store is at schema {head_revision()} (migrated from {older})" in result.stdout
    assert current(store_url(restored)) == head_revision() != older
    store = sqlite3.connect(restored / "tobe.db")
    assert store.execute("SELECT principal FROM credentials").fetchall() == [("alice",)]
    store.close()


def test_an_archive_from_a_newer_schema_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    data_dir = _data_dir(tmp_path)
    store = sqlite3.connect(data_dir / "tobe.db")
    store.execute("UPDATE alembic_version SET version_num = '9999'")
    store.commit()
    store.close()
    archive = tmp_path / "newer.tar.gz"
    assert tobe(cli_env(data_dir, tmp_path / "none.toml"), "backup", str(archive)).returncode == 0
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    before = tree(target)

    for args in ((), ("--force",)):
        result = tobe(cli_env(target, tmp_path / "none.toml"), "restore", *args, str(archive))
        assert result.returncode == 1
        assert result.stderr == (
            f"Error: {archive} holds a store at schema revision 9999, newer than this ToBe "
            f"0.1.0 knows (up to {head_revision()}); restore it with ToBe 0.1.0 or newer\n"
        )
        assert tree(target) == before


def test_restore_into_a_data_directory_in_use_needs_force_and_sets_the_old_files_aside(
    tmp_path: Path,
) -> None:
    data_dir = _data_dir(tmp_path)
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    archive = tmp_path / "backup.tar.gz"
    assert tobe(cli_env(data_dir, config), "backup", str(archive)).returncode == 0
    (data_dir / "credentials" / "client.token").write_text("changed since\n")
    (data_dir / "skills" / "new.skill.md").write_text("# new\n")
    config.write_text('log_level = "DEBUG"\n')
    before = tree(data_dir)
    env = cli_env(data_dir, config)

    result = tobe(env, "restore", str(archive))
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: {data_dir} is not empty (")
    assert "pass --force" in result.stderr and len(result.stderr.splitlines()) == 1
    assert tree(data_dir) == before

    result = tobe(env, "restore", "--force", str(archive))
    assert result.returncode == 0, result.stderr
    [aside] = data_dir.glob("replaced-by-restore-*")
    assert f"What the data directory held before is in {aside}" in result.stdout
    assert (aside / "credentials" / "client.token").read_text() == "changed since\n"
    assert (aside / "skills" / "new.skill.md").exists()
    assert (aside / "tobe.db").exists()
    assert (data_dir / "credentials" / "client.token").read_text() == "client.token secret\n"
    assert not (data_dir / "skills" / "new.skill.md").exists()
    # The configuration file is only written when asked.
    assert config.read_text() == 'log_level = "DEBUG"\n'
    assert "pass --config to write it too" in result.stdout

    result = tobe(env, "restore", "--force", "--config", str(archive))
    assert result.returncode == 0, result.stderr
    assert config.read_text() == CONFIG
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    [replaced] = tmp_path.glob("config.toml.replaced-by-restore-*")
    assert replaced.read_text() == 'log_level = "DEBUG"\n'


def test_a_file_that_is_no_backup_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.tar.gz"
    with tarfile.open(bogus, "w:gz") as tar:
        tar.add(Path(__file__), arcname="notes.py")
    target = tmp_path / "target"

    result = tobe(cli_env(target, tmp_path / "none.toml"), "restore", str(bogus))

    assert result.returncode == 1
    assert result.stderr == (
        f"Error: {bogus} is not a backup this ToBe can restore: its first member is not "
        "manifest.json\n"
    )
    assert not target.exists()


@pytest.mark.postgres
def test_on_postgresql_the_backup_leaves_the_store_to_pg_dump(tmp_path: Path) -> None:
    server = postgres_server_url()
    data_dir = tmp_path / "data"
    (data_dir / "credentials").mkdir(parents=True)
    (data_dir / "credentials" / "secrets.key").write_text("key\n")
    with fresh_postgres_database(server) as url:
        upgrade(url)
        archive = tmp_path / "backup.tar.gz"
        env = cli_env(data_dir, tmp_path / "none.toml", TOBE_DATABASE_URL=url)

        result = tobe(env, "backup", str(archive))

    assert result.returncode == 0, result.stderr
    [line] = [line for line in result.stdout.splitlines() if "pg_dump" in line]
    assert line.startswith("The store is PostgreSQL; back it up with: pg_dump --format=custom")
    names = _names(archive)
    assert "store.db" not in names and "data/credentials/secrets.key" in names
    manifest = _manifest(archive)
    assert manifest["database"] == "postgresql"
    assert manifest["schema_revision"] == head_revision()


def test_the_pg_dump_line_never_shows_the_password() -> None:
    line = pg_dump_command("postgres://tobe:s3cret@db.example:5432/tobe?sslmode=require")

    assert "s3cret" not in line
    assert line == (
        "pg_dump --format=custom --file=tobe-store.pgdump "
        "'postgresql://tobe@db.example:5432/tobe?sslmode=require' "
        "(password: PGPASSWORD or ~/.pgpass)"
    )


def test_symbolic_links_are_restored_as_they_were_and_none_is_written_through(
    tmp_path: Path,
) -> None:
    data_dir = _data_dir(tmp_path)
    venv = data_dir / "workspace" / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to("/usr/bin/python3")
    archive = tmp_path / "backup.tar.gz"
    assert tobe(cli_env(data_dir, tmp_path / "none.toml"), "backup", str(archive)).returncode == 0
    restored = tmp_path / "restored"

    result = tobe(cli_env(restored, tmp_path / "none.toml"), "restore", str(archive))

    assert result.returncode == 0, result.stderr
    assert (restored / "workspace" / "venv" / "bin" / "python").readlink() == Path(
        "/usr/bin/python3"
    )

    # An archive whose member would be written through one of its links is refused.
    outside = tmp_path / "outside"
    outside.mkdir()
    crafted = tmp_path / "crafted.tar.gz"
    with tarfile.open(archive) as source, tarfile.open(crafted, "w:gz") as tar:
        manifest = source.getmember("manifest.json")
        tar.addfile(manifest, source.extractfile(manifest))
        link = tarfile.TarInfo("data/escape")
        link.type, link.linkname = tarfile.SYMTYPE, str(outside)
        tar.addfile(link)
        planted = tarfile.TarInfo("data/escape/planted.txt")
        tar.addfile(planted, io.BytesIO(b""))
    target = tmp_path / "target"

    result = tobe(cli_env(target, tmp_path / "none.toml"), "restore", str(crafted))

    assert result.returncode == 1
    assert result.stderr == (
        f"Error: {crafted} is not a backup this ToBe can restore: it holds "
        "'data/escape/planted.txt' under a symbolic link\n"
    )
    assert list(outside.iterdir()) == [] and not target.exists()


def test_a_restored_configuration_naming_another_data_directory_is_pointed_out(
    tmp_path: Path,
) -> None:
    data_dir = _data_dir(tmp_path)
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{data_dir}"\n')
    archive = tmp_path / "backup.tar.gz"
    assert tobe(cli_env(data_dir, config), "backup", str(archive)).returncode == 0
    restored = tmp_path / "restored"
    new_config = tmp_path / "new" / "config.toml"

    result = tobe(cli_env(restored, new_config), "restore", "--config", str(archive))

    assert result.returncode == 0, result.stderr
    assert new_config.read_text() == config.read_text()
    assert (
        f"The restored configuration sets data_dir = {data_dir}, not {restored} where this "
        f"restore went: edit it, or restore again with --data-dir {data_dir} --force"
    ) in result.stdout


def _with_a_widget(data_dir: Path) -> str:
    """A conversation holding a widget of type `notes` with one record; returns its id."""
    schema = json.dumps(
        {"modules": {"items": {"description": "One note.", "schema": {"type": "object"}}}}
    )

    async def make() -> str:
        database = Database.open(store_url(data_dir))
        try:

            def unit(tx: WriteTx) -> None:
                tx.session.add(models.Conversation(key="p_notes", owner="alice"))
                tx.session.flush()
                put_type(tx, "notes", schema, b"<!doctype html><p>notes</p>", force=False)

            await database.write(unit)
            widgets = Widgets(database)
            made = await widgets.create("p_notes", "notes", "Groceries", idempotency_key=None)
            await widgets.write(
                "p_notes", made.id, "items", "milk", {"text": "oat"}, expected_revision=None
            )
            return made.id
        finally:
            await database.close()

    return asyncio.run(make())


def test_a_restored_archive_holds_the_widgets_their_records_and_types(tmp_path: Path) -> None:
    data_dir = _data_dir(tmp_path)
    widget_id = _with_a_widget(data_dir)
    archive = tmp_path / "widgets.tar.gz"
    assert tobe(cli_env(data_dir, tmp_path / "none.toml"), "backup", str(archive)).returncode == 0

    restored = tmp_path / "restored"
    result = tobe(cli_env(restored, tmp_path / "none.toml"), "restore", str(archive))

    assert result.returncode == 0, result.stderr
    store = sqlite3.connect(restored / "tobe.db")
    try:
        widgets = store.execute("SELECT id, type_name, title FROM widgets").fetchall()
        records = store.execute("SELECT record_id, data FROM widget_records").fetchall()
        pages = store.execute("SELECT name FROM widget_types").fetchall()
    finally:
        store.close()
    assert widgets == [(widget_id, "notes", "Groceries")]
    assert [(record, json.loads(data)) for record, data in records] == [("milk", {"text": "oat"})]
    assert pages == [("notes",)]
