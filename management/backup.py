"""`tobe backup`: one archive of a ToBe's state, consistent while its services write.

Each SQLite database (the Mind's store, Awareness's journal, an adapter's own) is copied with
SQLite's backup API: one read transaction, so the copy is the state of one commit, and WAL
readers never block the writers. The other files are copied as they are. The archive is written
owner-only to a temporary file beside its destination and renamed into place when complete, so
a crash or a full disk never leaves a half archive under the name asked for.
"""

from __future__ import annotations

import io
import os
import sqlite3
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from sqlalchemy.engine import URL

from management.backup_format import (
    CONFIG,
    DATA,
    MANIFEST,
    SQLITE_HEADER,
    STORE,
    Manifest,
    is_sqlite_side_file,
    left_out,
)
from management.backup_record import LastBackup, record_backup, record_file
from mind.store.engine import is_sqlite, sync_url
from mind.store.migrate import current
from tobe import __version__
from tobe.config import Settings, config_file
from tobe.runtime.private_files import FILE_MODE

BUSY_TIMEOUT_MS = 10_000


class BackupError(Exception):
    """The backup cannot be taken; the message says why and what to do."""


@dataclass
class BackupReport:
    archive: Path
    manifest: Manifest
    files: int
    size: int
    # The command that backs up a PostgreSQL store, which the archive does not hold.
    pg_dump: str | None = None
    # Skills or resources directories outside the data directory, not in the archive.
    outside: list[Path] = field(default_factory=list)


def archive_path(target: Path, now: datetime) -> Path:
    """`target`, or a file named after `now` in it when it is a directory."""
    if target.is_dir():
        return target / f"tobe-backup-{now.strftime('%Y%m%dT%H%M%SZ')}.tar.gz"
    return target


def take_backup(settings: Settings, target: Path, *, overwrite: bool = False) -> BackupReport:
    """Write the archive of `settings`' data directory, store and configuration to `target`."""
    now = datetime.now(UTC)
    archive = archive_path(target, now).absolute()
    data_dir = settings.data_dir.absolute()
    if not data_dir.is_dir():
        raise BackupError(f"the data directory {data_dir} does not exist: nothing to back up")
    if archive.exists() and not overwrite:
        raise BackupError(f"{archive} exists; choose another name or pass --force to replace it")
    if not archive.parent.is_dir():
        raise BackupError(f"the directory {archive.parent} does not exist")
    if archive.is_relative_to(data_dir):
        raise BackupError(
            f"{archive} is inside the data directory {data_dir}: write it somewhere else"
        )
    with tempfile.TemporaryDirectory(prefix=".tobe-backup-", dir=archive.parent) as scratch:
        report = _write(settings, data_dir, archive, Path(scratch), now)
    try:
        record_backup(data_dir, LastBackup(archive, now, report.manifest.database))
    except OSError as exc:
        raise BackupError(
            f"wrote {archive}, but could not record it in {record_file(data_dir)} for "
            f"`tobe doctor`: {exc}"
        ) from exc
    return report


def _write(
    settings: Settings, data_dir: Path, archive: Path, scratch: Path, now: datetime
) -> BackupReport:
    store = _store_file(settings)
    members: list[tuple[Path, str]] = []
    databases: list[str] = []
    revision: str | None = None
    pg_dump: str | None = None
    if store is None:
        revision = _postgres_revision(settings.store_url)
        pg_dump = pg_dump_command(settings.store_url)
    elif store.is_file():
        snapshot(store, scratch / STORE)
        revision = current(f"sqlite:///{scratch / STORE}")
        _single_file(scratch / STORE)
        members.append((scratch / STORE, STORE))
    for path, relative in _data_files(data_dir, skip=store):
        name = f"{DATA}/{relative}"
        if path.is_file() and not path.is_symlink() and _is_sqlite(path):
            copy = scratch / DATA / relative
            copy.parent.mkdir(parents=True, exist_ok=True)
            snapshot(path, copy)
            _single_file(copy)
            databases.append(str(relative))
            path = copy
        members.append((path, name))
    config = config_file()
    if config.is_file():
        members.append((config, CONFIG))
    manifest = Manifest(
        tobe_version=__version__,
        created_at=now.isoformat(timespec="seconds"),
        database="sqlite" if store is not None else "postgresql",
        schema_revision=revision,
        data_dir=str(data_dir),
        config_file=str(config) if config.is_file() else None,
        databases=databases,
    )
    files = _write_archive(archive, manifest, members)
    return BackupReport(
        archive=archive,
        manifest=manifest,
        files=files,
        size=archive.stat().st_size,
        pg_dump=pg_dump,
        outside=_outside(settings, data_dir),
    )


def pg_dump_command(store_url: str) -> str:
    """The command that dumps the PostgreSQL store, its password left to pg_dump (prompt,
    PGPASSWORD or ~/.pgpass) so that the line never shows a secret."""
    url = sync_url(store_url)
    target = URL.create(
        "postgresql",
        username=url.username,
        host=url.host,
        port=url.port,
        database=url.database,
        query=url.query,
    ).render_as_string(hide_password=False)
    where = " (password: PGPASSWORD or ~/.pgpass)" if url.password else ""
    return f"pg_dump --format=custom --file=tobe-store.pgdump '{target}'{where}"


def snapshot(source: Path, destination: Path) -> None:
    """Copy the SQLite database `source` to `destination` through the backup API.

    `source` is opened read-write without creating it (a WAL reader needs the shared-memory
    file) and only read; as any last connection, closing it may checkpoint the WAL.
    """
    uri = source.absolute().as_uri() + "?mode=rw"
    with closing(sqlite3.connect(uri, uri=True)) as live:
        live.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        descriptor = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        os.close(descriptor)
        with closing(sqlite3.connect(destination)) as copy:
            live.backup(copy)


def _single_file(database: Path) -> None:
    """Make a snapshot one self-contained file (rollback journal) and check it is sound."""
    with closing(sqlite3.connect(database, isolation_level=None)) as connection:
        connection.execute("PRAGMA journal_mode=DELETE")
        verdict = connection.execute("PRAGMA quick_check").fetchone()[0]
    if verdict != "ok":
        raise BackupError(f"the copy of {database.name} fails SQLite's check: {verdict}")


def _store_file(settings: Settings) -> Path | None:
    """The SQLite store's file; None when the store is PostgreSQL."""
    url = sync_url(settings.store_url)
    if not is_sqlite(url):
        return None
    return Path(url.database or "").absolute()


def _postgres_revision(url: str) -> str | None:
    """The PostgreSQL store's revision, for the manifest; None when it cannot be read."""
    try:
        return current(url)
    except Exception:  # any driver's error: the archive is still useful without it
        return None


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _data_files(data_dir: Path, *, skip: Path | None) -> Iterator[tuple[Path, PurePosixPath]]:
    """Directories, regular files and symbolic links of the data directory, minus runtime
    state, the store (snapshotted on its own) and SQLite's -wal/-shm/-journal files."""
    for directory, subdirectories, files in os.walk(data_dir):
        here = Path(directory)
        subdirectories[:] = sorted(
            name
            for name in subdirectories
            if not left_out(PurePosixPath((here / name).relative_to(data_dir).as_posix()))
        )
        for name in subdirectories:
            yield here / name, PurePosixPath((here / name).relative_to(data_dir).as_posix())
        for name in sorted(files):
            path = here / name
            relative = PurePosixPath(path.relative_to(data_dir).as_posix())
            if left_out(relative) or path == skip or _is_side_file(path, skip):
                continue
            if path.is_symlink() or path.is_file():
                yield path, relative


def _is_side_file(path: Path, store: Path | None) -> bool:
    if not is_sqlite_side_file(path.name):
        return False
    base = path.with_name(path.name.rsplit("-", 1)[0])
    return base == store or _is_sqlite(base)


def _write_archive(archive: Path, manifest: Manifest, members: list[tuple[Path, str]]) -> int:
    """Write the tar to a private temporary file, then rename it to `archive`; returns how
    many files it holds."""
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{archive.name}.", suffix=".tmp", dir=archive.parent
    )
    os.fchmod(descriptor, FILE_MODE)
    files = 0
    try:
        with os.fdopen(descriptor, "wb") as out:
            with tarfile.open(fileobj=out, mode="w:gz", compresslevel=6) as tar:
                _add_bytes(tar, MANIFEST, manifest.to_bytes())
                for path, name in members:
                    try:
                        tar.add(path, arcname=name, recursive=False)
                    except FileNotFoundError:
                        continue  # removed while the backup ran (a temporary file)
                    files += not path.is_dir()
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, archive)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _sync_directory(archive.parent)
    return files


def _add_bytes(tar: tarfile.TarFile, name: str, content: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    info.mode = FILE_MODE
    info.mtime = int(datetime.now(UTC).timestamp())
    tar.addfile(info, io.BytesIO(content))


def _sync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _outside(settings: Settings, data_dir: Path) -> list[Path]:
    """Configured skills and resources directories that the data directory does not hold."""
    configured = [*settings.skills.dirs, *settings.resources.dirs]
    return [path for path in configured if not path.absolute().is_relative_to(data_dir)]
