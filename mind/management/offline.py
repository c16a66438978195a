"""The Management service in the operator's process while no Mind runs, under the state lock.

Holding the data directory's state lock is what makes this safe: a Mind that starts meanwhile
waits for the lock (up to its own lock timeout), so there is still one writer. Like the Mind at
its start, this first migrates the store to the current schema. The service is served on a
private socket in a fresh 0700 directory, so the caller speaks the same contract either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from mind.management.hosting import serve_management
from mind.management.service import ManagementService
from mind.management.status import display_url
from mind.providers.prices import Pricing
from mind.scheduler.clock import clock_from
from mind.store.database import Database
from mind.usage.reports import UsageReports
from tobe.config import Settings
from tobe.runtime.statelock import StateLock

log = logging.getLogger(__name__)

HOLDER = "tobe admin (offline)"


class OfflineUnavailable(Exception):
    """The data directory or its store cannot be used; the message says what to check.

    Not a refusal: it is raised before any Management call is served, and the CLI prints it."""


@dataclass(frozen=True)
class OfflineService:
    """Where the in-process service answers, and the lock it is served under."""

    target: str
    lock_path: Path


@contextlib.asynccontextmanager
async def serve_offline(settings: Settings) -> AsyncIterator[OfflineService]:
    """Serve Management in this process for as long as the context is open.

    Takes the state lock without waiting: `StateLockBusy` means a Mind (or another offline
    command) holds it. A socket file the Mind left behind is stale once the lock is ours, and
    is removed so that nobody mistakes it for a running Mind.
    """
    lock = StateLock(settings.data_dir, HOLDER)
    try:
        lock.acquire()
    except OSError as exc:
        raise OfflineUnavailable(
            f"cannot use the data directory {settings.data_dir}: {exc.strerror or exc}; "
            "check TOBE_DATA_DIR or --data-dir"
        ) from exc
    try:
        _remove_stale_socket(settings.management_socket)
        async with _serving(settings) as target:
            yield OfflineService(target=target, lock_path=lock.path)
    finally:
        lock.release()


def _remove_stale_socket(path: Path) -> None:
    if path.exists():
        log.debug("removing stale management socket %s", path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.asynccontextmanager
async def _serving(settings: Settings) -> AsyncIterator[str]:
    from mind.store.migrate import upgrade  # only here: the Mind's own start skips Alembic

    try:
        await asyncio.to_thread(upgrade, settings.store_url)
    except Exception as exc:
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        raise OfflineUnavailable(
            f"cannot open the database {display_url(settings.store_url)}: {reason}; "
            "check TOBE_DATABASE_URL, or run `tobe db upgrade` to see what the migration says"
        ) from exc
    database = Database.open(settings.store_url)
    private_dir = Path(tempfile.mkdtemp(prefix="tobe-admin-"))
    try:
        service = ManagementService(
            database,
            database_url=settings.store_url,
            data_dir=settings.data_dir,
            profiles=settings.profiles,
            clock=clock_from(settings.scheduler),
            usage=UsageReports(database, Pricing.from_settings(settings)),
        )
        endpoint = await serve_management(service, private_dir / "management.sock")
        try:
            yield endpoint.target
        finally:
            await endpoint.stop(grace=1.0)
    finally:
        await database.close()
        shutil.rmtree(private_dir, ignore_errors=True)
