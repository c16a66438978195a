"""`tobe restore`: put a `tobe backup` archive back into a data directory, then migrate it.

Refused, with nothing changed, while any ToBe service runs on the data directory, when the
archive's store is from a newer schema than this ToBe knows, and when the data directory is not
empty (unless `force`). The archive is extracted into a private directory inside the data
directory first; only once all of it is there are the existing entries moved aside (to
`replaced-by-restore-<time>/`, never deleted) and the restored ones moved in. The configuration
file in the archive is written only when asked (`restore_config`), to where this ToBe reads it,
keeping the replaced one beside it.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tomllib
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from management.backup_format import (
    CONFIG,
    DATA,
    MANIFEST,
    REPLACED_PREFIX,
    STAGING_PREFIX,
    STORE,
    ArchiveError,
    Manifest,
    left_out,
    read_manifest,
)
from mind.store.engine import is_sqlite, sync_url
from mind.store.migrate import head_revision, is_packaged, upgrade
from tobe import __version__
from tobe.config import Settings, config_file
from tobe.runtime.addresses import runtime_file
from tobe.runtime.ports import running_services
from tobe.runtime.private_files import FILE_MODE, private_directory
from tobe.runtime.statelock import StateLock, StateLockBusy, is_locked

HOLDER = "tobe restore"
AWARENESS = "awareness"
_OTHERS = 0o077


class RestoreError(Exception):
    """The restore is refused or failed; the message says why and what to do."""


@dataclass
class RestoreReport:
    data_dir: Path
    manifest: Manifest
    # Where the entries the restore replaced were moved; None when there were none.
    replaced: Path | None = None
    # The store's revision after migrating (None: no store restored).
    revision: str | None = None
    # Where the configuration file was written, and where the one it replaced went.
    config: Path | None = None
    config_replaced: Path | None = None
    notes: list[str] = field(default_factory=list)


def restore(
    settings: Settings, archive_path: Path, *, force: bool = False, restore_config: bool = False
) -> RestoreReport:
    data_dir = settings.data_dir.absolute()
    refusal = running_on(data_dir)
    if refusal is not None:
        raise RestoreError(refusal)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    with _opened(archive_path) as archive:
        manifest = _read(archive_path, archive)
        store = _check(settings, archive_path, manifest)
        occupied = _occupied(data_dir, store)
        if occupied and not force:
            shown = ", ".join(path.name for path in occupied[:4])
            more = f" and {len(occupied) - 4} more" if len(occupied) > 4 else ""
            raise RestoreError(
                f"{data_dir} is not empty ({shown}{more}); restore into an empty data directory "
                f"(--data-dir) or pass --force to move what is there to "
                f"{data_dir / (REPLACED_PREFIX + '<time>')}"
            )
        locks = _lock(data_dir)
        try:
            report = RestoreReport(data_dir, manifest)
            staging = private_directory(data_dir / f"{STAGING_PREFIX}{stamp}")
            try:
                _extract(archive, staging)
                if occupied:
                    report.replaced = _set_aside(occupied, data_dir / f"{REPLACED_PREFIX}{stamp}")
                _move_in(staging, data_dir, store)
                if restore_config:
                    _restore_config(staging, stamp, report)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            _finish(settings, store, manifest, report)
            return report
        finally:
            for lock in locks:
                lock.release()


def running_on(data_dir: Path) -> str | None:
    """One line when a ToBe service runs on the data directory (it published its address, or
    holds the Mind's or Awareness's state lock); None when none does."""
    services = running_services(data_dir)
    if services:
        listing = ", ".join(f"{name} (pid {entry.pid})" for name, entry in sorted(services.items()))
        return (
            f"ToBe is running on {data_dir}: {listing}, per {runtime_file(data_dir)}; stop it "
            "(Ctrl-C in `tobe up`) and run tobe restore again"
        )
    for directory in (data_dir, data_dir / AWARENESS):
        if is_locked(directory):
            holder = (directory / "state.lock").read_text(errors="replace").strip()
            return (
                f"{holder or 'another process'} holds {directory / 'state.lock'}; stop it and "
                "run tobe restore again"
            )
    return None


@contextmanager
def _opened(path: Path) -> Iterator[tarfile.TarFile]:
    """The archive as a gzip'd tar, with an error naming the file when it is not one."""
    try:
        archive = tarfile.open(path, mode="r:gz")
    except FileNotFoundError:
        raise RestoreError(f"{path} does not exist") from None
    except (tarfile.TarError, OSError, zlib.error, EOFError) as exc:
        raise RestoreError(f"{path} is not a ToBe backup ({exc})") from None
    with archive:
        yield archive


def _read(path: Path, archive: tarfile.TarFile) -> Manifest:
    try:
        manifest = read_manifest(archive)
        links: set[PurePosixPath] = set()
        for member in archive.getmembers()[1:]:
            _check_member(member.name, links)
            if member.issym():
                links.add(PurePosixPath(member.name))
    except ArchiveError as exc:
        raise RestoreError(f"{path} is not a backup this ToBe can restore: {exc}") from None
    except (tarfile.TarError, OSError, zlib.error, EOFError) as exc:
        raise RestoreError(f"{path} is damaged ({exc})") from None
    return manifest


def _check_member(name: str, links: set[PurePosixPath]) -> None:
    """Refuse a name no backup writes, and one under a symbolic link of the archive (which
    extracting would write through)."""
    path = PurePosixPath(name)
    if name not in (STORE, CONFIG, "config") and (not path.parts or path.parts[0] != DATA):
        raise ArchiveError(f"it holds {name!r}, which no ToBe backup holds")
    if any(parent in links for parent in path.parents):
        raise ArchiveError(f"it holds {name!r} under a symbolic link")


def _check(settings: Settings, path: Path, manifest: Manifest) -> Path | None:
    """Refuse an archive this ToBe cannot use; return the SQLite store file it restores to
    (None when the store is PostgreSQL here)."""
    revision = manifest.schema_revision
    if revision is not None and not is_packaged(revision):
        raise RestoreError(
            f"{path} holds a store at schema revision {revision}, newer than this ToBe "
            f"{__version__} knows (up to {head_revision()}); restore it with ToBe "
            f"{manifest.tobe_version} or newer"
        )
    url = sync_url(settings.store_url)
    if not is_sqlite(url):
        if manifest.database == "sqlite" and revision is not None:
            raise RestoreError(
                f"{path} holds a SQLite store but this ToBe's store is PostgreSQL "
                "(TOBE_DATABASE_URL); restore with the default SQLite store (unset it)"
            )
        return None
    return Path(url.database or "").absolute()


def _occupied(data_dir: Path, store: Path | None) -> list[Path]:
    """What a restore would replace: the data directory's entries (not runtime state or
    earlier restores' leftovers) and a store file kept outside it."""
    entries = []
    if data_dir.is_dir():
        entries = sorted(path for path in data_dir.iterdir() if _holds_state(path, data_dir))
    if store is not None and not store.is_relative_to(data_dir):
        entries += [
            store.with_name(store.name + suffix)
            for suffix in ("", "-wal", "-shm", "-journal")
            if store.with_name(store.name + suffix).exists()
        ]
    return entries


def _holds_state(path: Path, data_dir: Path) -> bool:
    """Whether `path` is or holds something besides runtime state (a lock, runtime.json)."""
    if left_out(PurePosixPath(path.relative_to(data_dir).as_posix())):
        return False
    if path.is_dir() and not path.is_symlink():
        return any(_holds_state(child, data_dir) for child in path.iterdir())
    return True


def _lock(data_dir: Path) -> list[StateLock]:
    """The Mind's and Awareness's state locks, so that neither starts during the restore."""
    locks: list[StateLock] = []
    try:
        for directory in (data_dir, data_dir / AWARENESS):
            lock = StateLock(directory, HOLDER)
            lock.acquire()
            locks.append(lock)
    except StateLockBusy as busy:
        for lock in locks:
            lock.release()
        raise RestoreError(f"{busy}; stop it and run tobe restore again") from None
    return locks


def _extract(archive: tarfile.TarFile, staging: Path) -> None:
    """Everything but the manifest into `staging`, owner-only whatever the archive says."""
    members = [member for member in archive.getmembers() if member.name != MANIFEST]
    try:
        archive.extractall(staging, members=members, filter=_member_filter)
    except (tarfile.TarError, OSError, zlib.error, EOFError) as exc:
        raise RestoreError(f"cannot extract the archive ({exc}); nothing was changed") from None
    for directory, subdirectories, files in os.walk(staging):
        for name in [*subdirectories, *files]:
            path = Path(directory) / name
            if not path.is_symlink():
                os.chmod(path, path.stat().st_mode & ~_OTHERS & 0o7777)


def _member_filter(member: tarfile.TarInfo, destination: str) -> tarfile.TarInfo | None:
    """Tar's safe "data" filter, except that a symbolic link keeps its target as it was (a
    workspace's virtualenv links to an absolute path); `_check_member` already refused any
    member that extracting would write through a link."""
    if member.issym():
        return tarfile.tar_filter(member, destination)
    return tarfile.data_filter(member, destination)


def _set_aside(entries: list[Path], aside: Path) -> Path:
    private_directory(aside)
    for entry in entries:
        shutil.move(entry, aside / entry.name)
    return aside


def _move_in(staging: Path, data_dir: Path, store: Path | None) -> None:
    restored = staging / DATA
    if restored.is_dir():
        _merge(restored, data_dir)
    snapshot = staging / STORE
    if snapshot.is_file() and store is not None:
        store.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(snapshot, store)
        os.chmod(store, FILE_MODE)


def _merge(source: Path, destination: Path) -> None:
    """Move `source`'s entries into `destination`, into directories already there (the
    Awareness directory its state lock created) entry by entry."""
    for entry in sorted(source.iterdir()):
        target = destination / entry.name
        if target.is_dir() and not target.is_symlink() and entry.is_dir():
            _merge(entry, target)
        else:
            os.replace(entry, target)


def _restore_config(staging: Path, stamp: str, report: RestoreReport) -> None:
    """Write the archive's configuration file where this ToBe reads it, atomically; the file
    it replaces stays beside it."""
    saved = staging / CONFIG
    if not saved.is_file():
        report.notes.append("The archive holds no configuration file: none was restored.")
        return
    target = config_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{stamp}.tmp")
    shutil.copyfile(saved, temporary)
    os.chmod(temporary, FILE_MODE)
    if target.exists():
        report.config_replaced = target.with_name(f"{target.name}.{REPLACED_PREFIX}{stamp}")
        shutil.copy2(target, report.config_replaced)
    os.replace(temporary, target)
    report.config = target
    configured = _configured_data_dir(target)
    if configured is not None and configured.absolute() != report.data_dir:
        report.notes.append(
            f"The restored configuration sets data_dir = {configured}, not {report.data_dir} "
            "where this restore went: edit it, or restore again with --data-dir "
            f"{configured} --force"
        )


def _configured_data_dir(config: Path) -> Path | None:
    try:
        value = tomllib.loads(config.read_text()).get("data_dir")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    return Path(value) if isinstance(value, str) else None


def _finish(
    settings: Settings, store: Path | None, manifest: Manifest, report: RestoreReport
) -> None:
    """Migrate a restored SQLite store to this ToBe's schema; say what was not restored."""
    if store is not None and store.is_file():
        upgrade(settings.store_url)
        report.revision = head_revision()
    if manifest.database == "postgresql":
        report.notes.append(
            "The archive holds no database (its store was PostgreSQL): restore that from "
            "your pg_dump with pg_restore."
        )
