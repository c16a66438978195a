"""Reaching the Management service: the running Mind's socket, or in-process under the lock.

1. If the data directory's management socket accepts a connection, a Mind is serving it: go
   online.
2. Otherwise try the state lock. Taken: no Mind is running (a leftover socket file is stale), so
   run the same service in-process against the store (offline) while holding the lock; a Mind
   that starts meanwhile waits for the lock, up to its own lock timeout. Like the Mind at its
   start, the offline path first migrates the store to the current schema.
3. The lock is held but the socket does not answer: a Mind is starting (or stopping). Retry
   both until `wait` runs out, then give up with a message saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import socket
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from management.hosting import serve_management
from management.service import ManagementService
from management.status import display_url
from mind.store.database import Database
from mind.store.migrate import upgrade
from tobe.config import Settings
from tobe.runtime.channel import open_channel
from tobe.runtime.statelock import StateLock, StateLockBusy
from tobe.v1 import management_pb2_grpc

log = logging.getLogger(__name__)

OFFLINE_HOLDER = "tobe admin (offline)"
PROBE_TIMEOUT = 1.0
RETRY_INTERVAL = 0.1


class ManagementUnavailable(Exception):
    """Neither the running Mind nor the offline path can serve this call right now."""


@dataclass
class Connection:
    stub: management_pb2_grpc.ManagementStub
    # "online" or "offline".
    mode: str
    # Where the calls go, for `--verbose`.
    description: str


def socket_answers(path: Path) -> bool:
    """True when something accepts connections on the Unix socket (a stale file refuses)."""
    if not path.exists():
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(PROBE_TIMEOUT)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


@contextlib.asynccontextmanager
async def _online(path: Path) -> AsyncIterator[Connection]:
    channel = open_channel(f"unix:{path}")
    try:
        yield Connection(
            stub=management_pb2_grpc.ManagementStub(channel),
            mode="online",
            description=f"online: the running Mind at unix:{path}",
        )
    finally:
        await channel.close()


@contextlib.asynccontextmanager
async def _offline(settings: Settings, lock: StateLock) -> AsyncIterator[Connection]:
    """The same service, in this process, on a private socket in a fresh 0700 directory."""
    try:
        await asyncio.to_thread(upgrade, settings.store_url)
    except Exception as exc:
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        raise ManagementUnavailable(
            f"cannot open the database {display_url(settings.store_url)}: {reason}; "
            "check TOBE_DATABASE_URL, or run `tobe db upgrade` to see what the migration says"
        ) from exc
    database = Database.open(settings.store_url)
    private_dir = Path(tempfile.mkdtemp(prefix="tobe-admin-"))
    try:
        service = ManagementService(
            database, database_url=settings.store_url, data_dir=settings.data_dir
        )
        endpoint = await serve_management(service, private_dir / "management.sock")
        channel = open_channel(endpoint.target)
        try:
            yield Connection(
                stub=management_pb2_grpc.ManagementStub(channel),
                mode="offline",
                description=(
                    f"offline: no Mind is running; in-process under the state lock {lock.path}"
                ),
            )
        finally:
            await channel.close()
            await endpoint.stop(grace=1.0)
    finally:
        await database.close()
        shutil.rmtree(private_dir, ignore_errors=True)


@contextlib.asynccontextmanager
async def connect(settings: Settings, *, wait: float = 5.0) -> AsyncIterator[Connection]:
    """A connection to the Management service, online or offline (see the module docstring)."""
    path = settings.management_socket
    deadline = time.monotonic() + wait
    while True:
        if socket_answers(path):
            async with _online(path) as connection:
                yield connection
            return
        lock = StateLock(settings.data_dir, OFFLINE_HOLDER)
        try:
            lock.acquire()
        except OSError as exc:
            raise ManagementUnavailable(
                f"cannot use the data directory {settings.data_dir}: {exc.strerror or exc}; "
                "check TOBE_DATA_DIR or --data-dir"
            ) from exc
        except StateLockBusy as busy:
            if time.monotonic() >= deadline:
                raise ManagementUnavailable(
                    f"{busy.holder or 'another process'} holds the data directory "
                    f"{settings.data_dir}, but its management socket {path} does not answer: "
                    "the Mind may be starting or stopping. Retry in a moment, or wait longer "
                    "with `tobe admin --wait SECONDS …`"
                ) from None
            await asyncio.sleep(RETRY_INTERVAL)
            continue
        try:
            if path.exists():
                log.debug("removing stale management socket %s", path)
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            async with _offline(settings, lock) as connection:
                yield connection
            return
        finally:
            lock.release()
