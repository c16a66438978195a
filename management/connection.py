"""Reaching the Management service: the running Mind's socket, or in-process under the lock.

1. If the data directory's management socket accepts a connection, a Mind is serving it: go
   online.
2. Otherwise ask the Mind's package to serve it in this process (`mind.management.serve_offline`),
   which takes the state lock. Taken: no Mind is running, and the same service answers against
   the store (offline) while the lock is held.
3. The lock is held but the socket does not answer: a Mind is starting (or stopping). Retry
   both until `wait` runs out, then give up with a message saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from mind.management import OfflineUnavailable, serve_offline
from tobe.config import Settings
from tobe.runtime.channel import open_channel
from tobe.runtime.statelock import StateLockBusy
from tobe.v1 import management_pb2_grpc

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
async def _connection(target: str, mode: str, description: str) -> AsyncIterator[Connection]:
    channel = open_channel(target)
    try:
        yield Connection(
            stub=management_pb2_grpc.ManagementStub(channel), mode=mode, description=description
        )
    finally:
        await channel.close()


async def _reach(settings: Settings, stack: contextlib.AsyncExitStack, wait: float) -> Connection:
    """Open the connection on `stack`: online, offline, or after retrying (module docstring)."""
    path = settings.management_socket
    deadline = time.monotonic() + wait
    while True:
        if socket_answers(path):
            description = f"online: the running Mind at unix:{path}"
            return await stack.enter_async_context(
                _connection(f"unix:{path}", "online", description)
            )
        try:
            offline = await stack.enter_async_context(serve_offline(settings))
        except OfflineUnavailable as exc:
            raise ManagementUnavailable(str(exc)) from exc
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
        description = (
            f"offline: no Mind is running; in-process under the state lock {offline.lock_path}"
        )
        return await stack.enter_async_context(_connection(offline.target, "offline", description))


@contextlib.asynccontextmanager
async def connect(settings: Settings, *, wait: float = 5.0) -> AsyncIterator[Connection]:
    """A connection to the Management service, online or offline (see the module docstring)."""
    async with contextlib.AsyncExitStack() as stack:
        yield await _reach(settings, stack, wait)
