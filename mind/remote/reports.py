"""Reading one Hand stream: its next frame, and its task reports applied in order within a task
and concurrently across tasks (`StreamReports`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from mind.remote.hub import CloseReason, HandConnection
from tobe.v1 import hand_pb2

log = logging.getLogger(__name__)


async def read_one(
    frames: AsyncIterator[hand_pb2.AttachRequest],
) -> hand_pb2.AttachRequest | None:
    """The next frame, None at the end of the stream (as a coroutine, so it can be awaited
    in steps without being cancelled in between)."""
    try:
        return await anext(frames)
    except StopAsyncIteration:
        return None


def task_of(frame: hand_pb2.AttachRequest) -> str:
    """The task a report is about; empty for frames about the stream (hello, heartbeat)."""
    kind = frame.WhichOneof("frame")
    if kind in ("accepted", "rejected", "progress", "result"):
        return str(getattr(frame, kind).task_id)
    return ""


class StreamReports:
    """One stream's reports, applied as they arrive: in order within a task, concurrently
    across tasks, so reports of different tasks share the store's commits and one task's
    commit never holds back another's. At most `WINDOW` are in flight; past that, reading the
    stream waits (gRPC flow control then slows the Hand)."""

    WINDOW = 64

    def __init__(
        self,
        connection: HandConnection,
        spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Future[None]],
        apply: Callable[[HandConnection, hand_pb2.AttachRequest], Awaitable[None]],
    ) -> None:
        self._connection = connection
        self._spawn = spawn
        self._apply = apply
        self._room = asyncio.Semaphore(self.WINDOW)
        # Each task's latest report being applied; the next one waits for it.
        self._last: dict[str, asyncio.Future[None]] = {}

    async def apply(self, frame: hand_pb2.AttachRequest) -> None:
        await self._room.acquire()
        task_id = task_of(frame)
        job = self._spawn(self._after(self._last.get(task_id), frame))
        self._last[task_id] = job
        job.add_done_callback(lambda done: self._settled(task_id, done))

    async def _after(
        self, previous: asyncio.Future[None] | None, frame: hand_pb2.AttachRequest
    ) -> None:
        if previous is not None:
            await asyncio.wait([previous])
        await self._apply(self._connection, frame)

    def _settled(self, task_id: str, job: asyncio.Future[None]) -> None:
        self._room.release()
        if self._last.get(task_id) is job:
            del self._last[task_id]
        if job.cancelled() or job.exception() is None or self._connection.closed is not None:
            return
        log.error(
            "hand %s: failed to apply a frame; closing its stream",
            self._connection.name,
            exc_info=job.exception(),
        )
        self._connection.close(CloseReason.ENDED, "the Mind failed to apply a frame")
