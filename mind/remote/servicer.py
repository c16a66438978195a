"""The HandLink gRPC servicer: converts frames to domain calls and domain verdicts to status.

One `Attach` stream per Hand. A reader task applies the Hand's frames in order (each report
is committed before its ack is queued) and pings a Hand silent for half the heartbeat timeout;
the response generator writes whatever the HandConnection queues: acks, offers, cancels,
pings, and finally the reason the stream closes; to a Hand granted batches, the frames queued
together go as one message, and its own batches are applied frame by frame. A
`tools_changed` frame replaces the Hand's tool set on its connection, validated as the hello's
tools are. Attaching, a new tool set and the end of the stream are written to the directory
the other Minds read (`Authority.directory`; nothing on SQLite).
A hello that cannot be accepted ends the stream with the status its refusal's kind has in the
Mind's one table (`mind.status_codes`); a stream the Mind closes later ends with the status its
close reason names.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

import grpc

from mind.conversation.images import ImageUpload
from mind.credentials import Identity
from mind.errors import Unauthenticated
from mind.remote.authority import Authority
from mind.remote.hello import (
    HelloError,
    InvalidTools,
    hand_name,
    held_tasks,
    instance_id,
    parse_tools,
)
from mind.remote.hub import (
    CloseFrame,
    CloseReason,
    HandConnection,
    HandHub,
    PingFrame,
    served_principals,
)
from mind.remote.model import HandResult
from mind.remote.outbound import batched, ms, to_proto, unbatched
from mind.remote.reports import StreamReports, read_one, task_of
from mind.remote.taskservice import TaskService
from mind.status_codes import STATUS_CODES
from tobe.config import RemoteSettings
from tobe.runtime.status import status_codes
from tobe.v1 import hand_pb2, hand_pb2_grpc

log = logging.getLogger(__name__)

T = TypeVar("T")

_CLOSE_CODES = {
    CloseReason.REPLACED: grpc.StatusCode.ABORTED,
    CloseReason.SILENT: grpc.StatusCode.UNAVAILABLE,
    CloseReason.SHUTDOWN: grpc.StatusCode.UNAVAILABLE,
    CloseReason.PROTOCOL: grpc.StatusCode.FAILED_PRECONDITION,
    CloseReason.INVALID: grpc.StatusCode.INVALID_ARGUMENT,
}
SECOND_HELLO = "hello may be sent only once, as the first frame of the stream"
# The most frames one message carries to a Hand granted batches.
BATCH = 64

Context = grpc.aio.ServicerContext[hand_pb2.AttachRequest, hand_pb2.AttachResponse]


class NotAHand(Unauthenticated):
    """The stream's credential is not a Hand's."""


@status_codes(STATUS_CODES)
class HandLinkServicer(hand_pb2_grpc.HandLinkServicer):
    def __init__(
        self,
        hub: HandHub,
        authority: Authority,
        tasks: TaskService,
        settings: RemoteSettings,
        identify: Callable[[], Identity],
    ) -> None:
        self._hub = hub
        self._authority = authority
        self._tasks = tasks
        self._settings = settings
        self._identify = identify
        self._readers: set[asyncio.Task[None]] = set()
        # Guarded jobs (`_spawn`) of any result; `close` waits for them.
        self._applying: set[asyncio.Task[object]] = set()

    async def close(self) -> None:
        """End every stream and stop reading, letting frames being applied finish first."""
        for connection in self._hub.connections():
            connection.close(CloseReason.SHUTDOWN, "the Mind is shutting down")
        readers = list(self._readers)
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        await asyncio.gather(*self._applying, return_exceptions=True)

    async def _guarded(self, work: Coroutine[Any, Any, T]) -> T:
        """Run a frame's work to its end even if the stream is cancelled meanwhile.

        The store finishes a write whose caller went away, but what follows the commit must
        happen too: a committed terminal that never settled its waiter and timers would leave
        its tool call waiting for nothing. `close` waits for every guarded job.
        """
        return await asyncio.shield(self._spawn(work))

    def _spawn(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        job = asyncio.ensure_future(work)
        self._applying.add(job)
        job.add_done_callback(self._applying.discard)
        return job

    async def Attach(
        self,
        request_iterator: AsyncIterator[hand_pb2.AttachRequest],
        context: Context,
    ) -> AsyncIterator[hand_pb2.AttachResponse]:
        identity = self._identify()
        if identity.kind != "hand":
            raise NotAHand("HandLink needs a credential of kind 'hand'")
        frames = aiter(request_iterator)
        try:
            first = await self._next(frames)
        except TimeoutError:
            raise HelloError(
                f"no hello within {self._settings.heartbeat_timeout:g} s: "
                "the first frame must be hello"
            ) from None
        if first is None or first.WhichOneof("frame") != "hello":
            raise HelloError("the first frame must be hello")
        hello = first.hello
        connection = HandConnection(
            name=hand_name(hello, identity),
            principal=identity.principal,
            credential_id=identity.credential_id,
            version=hello.version,
            instance_id=instance_id(hello),
            tools=parse_tools(list(hello.tools)),
            serves=served_principals(identity.principal, identity.scopes),
            result_accepts=hello.result_accepts,
            batches=hello.batches,
        )
        welcome = hand_pb2.HandWelcome(
            hand_id=connection.hand_id,
            hand_name=connection.name,
            heartbeat_interval_ms=ms(self._settings.heartbeat_interval),
            accept_timeout_ms=ms(self._settings.accept_timeout),
            run_timeout_ms=ms(self._settings.run_timeout),
            heartbeat_timeout_ms=ms(self._settings.heartbeat_timeout),
            serves=sorted(connection.serves - {"*"}),
            serves_all="*" in connection.serves,
            result_accepts=connection.result_accepts,
            batches=connection.batches,
        )
        self._hub.attach(connection, replace=hello.replace)
        attaching = self._spawn(self._authority.directory.attached(connection))
        reader: asyncio.Task[None] | None = None
        try:
            await asyncio.shield(attaching)
            yield hand_pb2.AttachResponse(welcome=welcome)
            verdicts = await self._guarded(self._tasks.hand_attached(connection, held_tasks(hello)))
            for verdict in verdicts:
                yield to_proto(verdict)
            reader = asyncio.create_task(self._read(connection, frames))
            self._readers.add(reader)
            reader.add_done_callback(self._readers.discard)
            batch = BATCH if connection.batches else 1
            while True:
                outgoing = await connection.next_frames(batch)
                last = outgoing[-1]
                closing = last if isinstance(last, CloseFrame) else None
                if closing is not None:
                    outgoing.pop()
                if outgoing:
                    yield batched(outgoing)
                if closing is not None:
                    await self._end(context, closing)
                    return
        finally:
            if reader is not None:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
            if self._hub.detach(connection):
                self._spawn(self._detached(attaching, connection))
            self._tasks.hand_detached(connection)

    async def _detached(self, attaching: asyncio.Task[None], connection: HandConnection) -> None:
        """Remove the stream's row from the directory once its attach was written."""
        await asyncio.gather(attaching, return_exceptions=True)
        await self._authority.directory.detached(connection)

    @staticmethod
    async def _end(context: Context, frame: CloseFrame) -> None:
        code = _CLOSE_CODES.get(frame.reason)
        if code is None:
            return
        try:
            await context.abort(code, frame.message)
        except grpc.aio.AbortError:
            raise
        except Exception:
            # gRPC could not send the status: the Hand is already gone and nobody is left to
            # tell why the stream ends. Any other failure is the Mind's own.
            if not context.done():
                raise
            log.info("hand stream already gone; not sent: %s %s", code.name, frame.message)

    async def _next(
        self, frames: AsyncIterator[hand_pb2.AttachRequest]
    ) -> hand_pb2.AttachRequest | None:
        """The next frame; None when the Hand ended the stream. Raises TimeoutError when the
        Hand stayed silent for the heartbeat timeout."""
        reading = asyncio.ensure_future(read_one(frames))
        try:
            await asyncio.wait([reading], timeout=self._settings.heartbeat_timeout)
            if not reading.done():
                raise TimeoutError
            return reading.result()
        finally:
            reading.cancel()

    async def _read(
        self, connection: HandConnection, frames: AsyncIterator[hand_pb2.AttachRequest]
    ) -> None:
        reason, message = CloseReason.ENDED, "the Hand ended the stream"
        reports = StreamReports(connection, self._spawn, self._apply)
        # Timed from when reading resumes, as a frame each: one ping after half the heartbeat
        # timeout without a frame, the end of the stream after all of it. A deadline moved per
        # frame costs less than a task and two waits per frame.
        timeout = self._settings.heartbeat_timeout
        loop = asyncio.get_running_loop()
        ping = loop.call_later(timeout / 2, connection.send, PingFrame())
        try:
            async with asyncio.timeout(timeout) as silence:
                async for batch in frames:
                    ping.cancel()
                    silence.reschedule(None)
                    for frame in unbatched(batch):
                        if task_of(frame):
                            await reports.apply(frame)
                        else:
                            await self._guarded(self._apply(connection, frame))
                    silence.reschedule(loop.time() + timeout)
                    ping = loop.call_later(timeout / 2, connection.send, PingFrame())
        except TimeoutError:
            if silence.expired():
                reason = CloseReason.SILENT
                message = f"no frame from the Hand for {timeout:g} s"
                log.warning("hand %s: %s; closing its stream", connection.name, message)
            elif self._failed_to_apply(connection):
                message = "the Mind failed to apply a frame"
            else:
                return
        except grpc.aio.AbortError:
            # A frame did not decode and the call already ended with INVALID_ARGUMENT; ending
            # the connection without a status of its own lets the handler return.
            message = "a frame could not be decoded"
        except grpc.aio.AioRpcError as exc:
            message = f"the stream failed: {exc.code().name}"
        except asyncio.CancelledError:
            raise
        except Exception:
            if not self._failed_to_apply(connection):
                return
            message = "the Mind failed to apply a frame"
        finally:
            ping.cancel()
        connection.close(reason, message)

    @staticmethod
    def _failed_to_apply(connection: HandConnection) -> bool:
        """Log a frame that failed; False when the stream is being ended from the Mind's side
        anyway (reading just stopped)."""
        if connection.closed is not None:
            return False
        log.exception("hand %s: failed to apply a frame; closing its stream", connection.name)
        return True

    async def _apply(self, connection: HandConnection, frame: hand_pb2.AttachRequest) -> None:
        kind, seq = frame.WhichOneof("frame"), frame.seq
        authority = self._authority
        if kind == "accepted":
            accepted = frame.accepted
            await authority.accepted(connection, accepted.task_id, accepted.attempt, seq=seq)
        elif kind == "rejected":
            rejected = frame.rejected
            await authority.rejected(
                connection, rejected.task_id, rejected.attempt, rejected.reason, seq=seq
            )
        elif kind == "progress":
            progress = frame.progress
            fraction = progress.fraction if progress.fraction >= 0 else None
            await authority.progress(
                connection,
                progress.task_id,
                progress.attempt,
                progress.message,
                fraction,
                seq=seq,
            )
        elif kind == "result":
            report = frame.result
            result = HandResult(
                ok=report.ok,
                output=report.output,
                error=report.error,
                cancelled=report.cancelled,
                images=tuple(ImageUpload(i.media_type, i.data) for i in report.images),
            )
            await authority.result(connection, report.task_id, report.attempt, result, seq=seq)
        elif kind == "tools_changed":
            await self._change_tools(connection, frame.tools_changed)
        elif kind == "hello":
            log.info("hand %s sent a second hello; ending its stream", connection.name)
            connection.close(CloseReason.PROTOCOL, SECOND_HELLO)
        # Heartbeats need no answer: receiving any frame already proved the Hand alive.

    async def _change_tools(self, connection: HandConnection, frame: hand_pb2.ToolsChanged) -> None:
        """Replace the Hand's tools; an invalid set ends the stream as an invalid hello does
        (its tools go with the stream). Tasks already offered keep their course."""
        try:
            tools = parse_tools(list(frame.tools), "tools_changed.tools")
        except InvalidTools as exc:
            log.info(
                "hand %s declared an invalid tool set; ending its stream: %s", connection.name, exc
            )
            connection.close(CloseReason.INVALID, str(exc))
            return
        change = connection.replace_tools(tools)
        log.info("hand %s changed its tools (%d now): %s", connection.name, len(tools), change)
        await self._authority.directory.tools_changed(connection)
