"""Where and when `tobe backup` last wrote an archive: `<data_dir>/backup.json`, for `tobe doctor`.

Written once the archive is in place, atomically (a private temporary file renamed over it) and
owner-only. Never archived itself (`backup_format.left_out`): a restored data directory would
otherwise claim the backup it came from as its own latest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tobe.runtime.private_files import replace_json

RECORD_FILE = "backup.json"


class RecordError(Exception):
    """The record exists but cannot be read; the message says why."""


@dataclass(frozen=True)
class LastBackup:
    archive: Path
    # Timezone-aware (UTC).
    taken_at: datetime
    # "sqlite" (the store is in the archive) or "postgresql" (it is left to pg_dump).
    database: str


def record_file(data_dir: Path) -> Path:
    return data_dir / RECORD_FILE


def record_backup(data_dir: Path, last: LastBackup) -> None:
    """Replace the record with `last`."""
    record = {
        "archive": str(last.archive),
        "taken_at": last.taken_at.isoformat(timespec="seconds"),
        "database": last.database,
    }
    replace_json(record_file(data_dir), record)


def last_backup(data_dir: Path) -> LastBackup | None:
    """The last backup recorded; None when none was ever taken of this data directory."""
    path = record_file(data_dir)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        taken_at = datetime.fromisoformat(str(raw["taken_at"]))
        if taken_at.tzinfo is None:
            raise ValueError(f"taken_at {raw['taken_at']!r} has no time zone")
        return LastBackup(Path(str(raw["archive"])), taken_at, str(raw["database"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RecordError(f"{path} cannot be read ({exc})") from exc
