"""When `tobe backup` last archived this data directory, and whether that archive is still there.

Read from the record `tobe backup` keeps (`management.backup_record`). None ever taken, one
older than `MAX_AGE_DAYS`, or an archive that was moved or deleted since is a warning: ToBe
works, but its conversations, memory and credentials live on one disk.
"""

from __future__ import annotations

from datetime import UTC, datetime

from management.backup import pg_dump_command
from management.backup_record import RecordError, last_backup
from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from mind.store.engine import is_sqlite, sync_url
from tobe.config import Settings

CHECK = "backup"
MAX_AGE_DAYS = 30


def check_backup(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    fix = _fix(settings)
    try:
        last = last_backup(settings.data_dir)
    except RecordError as exc:
        return [Finding(Status.WARN, CHECK, str(exc), f"{fix} (it records the backup anew)")]
    if last is None:
        return [Finding(Status.WARN, CHECK, f"none was ever taken of {settings.data_dir}", fix)]
    days = (datetime.now(UTC) - last.taken_at).days
    taken = last.taken_at.strftime("%Y-%m-%d %H:%M UTC")
    said = f"last taken {taken} ({_ago(days)}) to {last.archive}"
    if not last.archive.is_file():
        return [Finding(Status.WARN, CHECK, f"{said}, which no longer exists", fix)]
    if days > MAX_AGE_DAYS:
        return [Finding(Status.WARN, CHECK, f"{said}: older than {MAX_AGE_DAYS} days", fix)]
    if last.database == "postgresql":
        said += " (without the PostgreSQL store: that is pg_dump's)"
    return [Finding(Status.OK, CHECK, said)]


def _fix(settings: Settings) -> str:
    """`tobe backup DIR`, and on PostgreSQL the pg_dump command `tobe backup` prints."""
    if is_sqlite(sync_url(settings.store_url)):
        return "`tobe backup DIR` (a directory on another disk)"
    return (
        f"`tobe backup DIR` (a directory on another disk), and back up the PostgreSQL store "
        f"with {pg_dump_command(settings.store_url)}"
    )


def _ago(days: int) -> str:
    if days == 0:
        return "today"
    return "1 day ago" if days == 1 else f"{days} days ago"
