"""The backup archive: a gzip'd tar whose first member is `manifest.json`.

    manifest.json      what the archive holds (`Manifest`)
    store.db           a snapshot of the Mind's SQLite store (absent on PostgreSQL)
    data/…             the data directory: credentials, TLS, skills, resources, workspace, and
                       Awareness's journal (a snapshot too), media and adapter state
    config/config.toml the configuration file, when there was one

Every SQLite database is a snapshot taken with SQLite's backup API, never a copy of the live
file, so the archive holds no -wal or -shm file. What is never archived (`left_out`): sockets
and other special files, the state locks, runtime.json (where services listened then) and
up.json (what `tobe up` supervised then), logs, backup.json (this data directory's last backup,
`management.backup_record`), and files a restore set aside.
"""

from __future__ import annotations

import json
import tarfile
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath

FORMAT = 1
MANIFEST = "manifest.json"
STORE = "store.db"
DATA = "data"
CONFIG = "config/config.toml"
SQLITE_HEADER = b"SQLite format 3\x00"
# Top-level entries of a data directory a restore sets aside: `<prefix><UTC time>`.
REPLACED_PREFIX = "replaced-by-restore-"
# A restore extracts into this directory inside the data directory first.
STAGING_PREFIX = ".restoring-"

_RUNTIME_NAMES = frozenset(
    {
        "state.lock",
        "runtime.json",
        "runtime.lock",
        "logs",
        "mind.sock",
        "hand-health.sock",
        "backup.json",
        "up.json",
    }
)
# The temporary files those are written to before they are renamed into place.
_RUNTIME_TEMPORARY = (".runtime.json.", ".backup.json.", ".up.json.")
_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


class ArchiveError(Exception):
    """The file is not a ToBe backup this version can read; the message says why."""


@dataclass(frozen=True)
class Manifest:
    tobe_version: str
    created_at: str
    # "sqlite" (the store is `store.db`) or "postgresql" (the store is not in the archive).
    database: str
    # The store's Alembic revision when it was taken; None for a store never migrated.
    schema_revision: str | None
    # Where the data directory and configuration file were (for messages).
    data_dir: str
    config_file: str | None
    # Paths under `data/` that are SQLite snapshots.
    databases: list[str] = field(default_factory=list)
    format: int = FORMAT

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), indent=2, sort_keys=True).encode() + b"\n"

    @classmethod
    def from_bytes(cls, raw: bytes) -> Manifest:
        try:
            fields = json.loads(raw)
            version = int(fields.get("format", 0))
        except (ValueError, TypeError, AttributeError) as exc:
            raise ArchiveError(f"its {MANIFEST} is not valid JSON") from exc
        if version > FORMAT:
            raise ArchiveError(
                f"it was written by ToBe {fields.get('tobe_version', '?')} in backup format "
                f"{version}; this ToBe reads format {FORMAT}: restore it with that version"
            )
        try:
            return cls(**fields)
        except TypeError as exc:
            raise ArchiveError(f"its {MANIFEST} lacks or misnames a field ({exc})") from exc


def left_out(relative: PurePosixPath) -> bool:
    """Whether a data directory entry (relative path) is runtime state, never archived."""
    name = relative.name
    if relative.parts[0].startswith((REPLACED_PREFIX, STAGING_PREFIX)):
        return True
    if name in _RUNTIME_NAMES and relative.parts[:-1] in ((), ("awareness",)):
        return True
    return name.startswith(_RUNTIME_TEMPORARY) or name.endswith(".sock")


def is_sqlite_side_file(name: str) -> bool:
    return name.endswith(_SQLITE_SIDE_FILES)


def read_manifest(archive: tarfile.TarFile) -> Manifest:
    """The manifest, which must be the archive's first member."""
    first = archive.next()
    if first is None or first.name != MANIFEST or not first.isfile():
        raise ArchiveError(f"its first member is not {MANIFEST}")
    handle = archive.extractfile(first)
    if handle is None:
        raise ArchiveError(f"its {MANIFEST} cannot be read")
    return Manifest.from_bytes(handle.read())
