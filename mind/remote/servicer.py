"""The HandLink gRPC servicer: converts frames to domain calls and domain verdicts to status.

One `Attach` stream per Hand. A reader task applies the Hand's frames in order (each report
is committed before its ack is queued) and pings a Hand silent for half the heartbeat timeout;
the response generator writes whatever the HandConnection queues: acks, offers, cancels,
pings, and finally the reason the stream closes. A `tools_changed` frame replaces the Hand's
tool set on its connection, validated as the hello's tools are.
A hello that cannot be accepted ends the stream with the status its refusal's kind has in the
Mind's one table (`mind.status_codes`); a stream the Mind closes later ends with the status its
close reason names.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import grpc

from mind.conversation.images import ImageUpload
from mind.credentials import Identity
from mind.errors import InvalidInput, NotAllowed, Unauthenticated
from mind.remote.authority import Authority
from mind.remote.hub import (
    HAND_NAME,
    TOOL_NAME,
    AckFrame,
    CancelFrame,
    CloseFrame,
    CloseReason,
    HandConnection,
    HandHub,
    OfferFrame,
    Outbound,
    PingFrame,
    granted_names,
    served_principals,
)
from mind.remote.model import (
    AckStatus,
    HandResult,
    HeldState,
    HeldTask,
    ReconcileAction,
    ReconcileVerdict,
    ReportKind,
    ToolDecl,
)
from mind.remote.taskservice import TaskService
from mind.status_codes import STATUS_CODES
from mind.tools.base import ApprovalBinding, ApprovalSource, Effect
from tobe.config import RemoteSettings
from tobe.runtime.decision_template import TemplateError, check_template
from tobe.runtime.status import status_codes
from tobe.v1 import common_pb2, hand_pb2, hand_pb2_grpc

log = logging.getLogger(__name__)

T = TypeVar("T")

_EFFECTS = {
    common_pb2.EFFECT_CLASS_READ_ONLY: Effect.READ_ONLY,
    common_pb2.EFFECT_CLASS_WORKSPACE_WRITE: Effect.WORKSPACE_WRITE,
    common_pb2.EFFECT_CLASS_EXTERNAL_SIDE_EFFECT: Effect.EXTERNAL_SIDE_EFFECT,
}
_ACKS = {
    AckStatus.OK: hand_pb2.ACK_STATUS_OK,
    AckStatus.STALE: hand_pb2.ACK_STATUS_STALE,
    AckStatus.ALREADY_TERMINAL: hand_pb2.ACK_STATUS_ALREADY_TERMINAL,
    AckStatus.UNKNOWN_TASK: hand_pb2.ACK_STATUS_UNKNOWN_TASK,
    AckStatus.INVALID: hand_pb2.ACK_STATUS_INVALID,
}
_KINDS = {
    ReportKind.ACCEPTED: hand_pb2.REPORT_KIND_ACCEPTED,
    ReportKind.REJECTED: hand_pb2.REPORT_KIND_REJECTED,
    ReportKind.PROGRESS: hand_pb2.REPORT_KIND_PROGRESS,
    ReportKind.RESULT: hand_pb2.REPORT_KIND_RESULT,
}
_ACTIONS = {
    ReconcileAction.KEEP_RUNNING: hand_pb2.RECONCILE_ACTION_KEEP_RUNNING,
    ReconcileAction.DROP: hand_pb2.RECONCILE_ACTION_DROP,
    ReconcileAction.RESEND_RESULT: hand_pb2.RECONCILE_ACTION_RESEND_RESULT,
}
_SOURCES = {
    ApprovalSource.PERSON: hand_pb2.APPROVAL_SOURCE_PERSON,
    ApprovalSource.GRANT: hand_pb2.APPROVAL_SOURCE_GRANT,
    ApprovalSource.POLICY: hand_pb2.APPROVAL_SOURCE_POLICY,
    ApprovalSource.REVIEWER: hand_pb2.APPROVAL_SOURCE_REVIEWER,
}
_CLOSE_CODES = {
    CloseReason.REPLACED: grpc.StatusCode.ABORTED,
    CloseReason.SILENT: grpc.StatusCode.UNAVAILABLE,
    CloseReason.SHUTDOWN: grpc.StatusCode.UNAVAILABLE,
    CloseReason.PROTOCOL: grpc.StatusCode.FAILED_PRECONDITION,
    CloseReason.INVALID: grpc.StatusCode.INVALID_ARGUMENT,
}
MAX_INSTANCE_ID = 64
SECOND_HELLO = "hello may be sent only once, as the first frame of the stream"

Context = grpc.aio.ServicerContext[hand_pb2.AttachRequest, hand_pb2.AttachResponse]


class NotAHand(Unauthenticated):
    """The stream's credential is not a Hand's."""


class HelloError(InvalidInput):
    """The hello frame is missing or malformed; the message names the field."""


class InvalidTools(InvalidInput):
    """A tool set (the hello's or a `tools_changed`) is invalid; the message names the field."""


class NameNotGranted(NotAllowed):
    """The credential may not attach under the Hand name it asked for."""


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def parse_tools(specs: list[hand_pb2.ToolSpec], field: str = "hello.tools") -> dict[str, ToolDecl]:
    """A Hand's tool set by name; `field` is where the specs sit in the frame (the hello or a
    `tools_changed`), for the error naming the bad one. Raises InvalidTools."""
    tools: dict[str, ToolDecl] = {}
    for index, spec in enumerate(specs):
        where = f"{field}[{index}]"
        if not TOOL_NAME.match(spec.name):
            raise InvalidTools(f"{where}.name {spec.name!r} must match {TOOL_NAME.pattern}")
        if spec.name in tools:
            raise InvalidTools(f"{where}.name {spec.name!r} is declared twice")
        try:
            schema = json.loads(spec.parameters_json_schema or "{}")
        except json.JSONDecodeError as exc:
            raise InvalidTools(f"{where}.parameters_json_schema is not JSON: {exc}") from None
        if not isinstance(schema, dict):
            raise InvalidTools(f"{where}.parameters_json_schema must be a JSON object")
        properties = schema.get("properties")
        try:
            check_template(
                spec.decision_template, set(properties) if isinstance(properties, dict) else set()
            )
        except TemplateError as exc:
            raise InvalidTools(f"{where}.decision_template: {exc}") from None
        tools[spec.name] = ToolDecl(
            name=spec.name,
            description=spec.description,
            parameters=schema,
            effect=_EFFECTS.get(spec.effect, Effect.UNKNOWN),
            # A sensitive call's result must reach its own turn, which seals it: a background
            # result would arrive after the turn ended, as a note of its own.
            background=spec.background and not spec.sensitive,
            decision_template=spec.decision_template,
            sensitive=spec.sensitive,
            dataset=spec.dataset,
        )
    return tools


def hand_name(hello: hand_pb2.HandHello, identity: Identity) -> str:
    name = hello.name or identity.principal
    if not HAND_NAME.match(name):
        field = "hello.name" if hello.name else "hello.name (defaulted to the principal)"
        raise HelloError(f"{field} {name!r} must match {HAND_NAME.pattern}")
    if name not in granted_names(identity.principal, identity.scopes):
        raise NameNotGranted(
            f"hello.name {name!r} is not granted to this credential: a Hand attaches under its "
            f"credential's principal ({identity.principal!r}) or a name given by a "
            f"'hand:<name>' scope (e.g. 'hand:{name}')"
        )
    return name


def instance_id(hello: hand_pb2.HandHello) -> str:
    if len(hello.instance_id) > MAX_INSTANCE_ID:
        raise HelloError(f"hello.instance_id must be at most {MAX_INSTANCE_ID} characters")
    return hello.instance_id


def held_tasks(hello: hand_pb2.HandHello) -> list[HeldTask]:
    return [
        HeldTask(
            task_id=item.task_id,
            attempt=item.attempt,
            state=HeldState.FINISHED
            if item.state == hand_pb2.HELD_TASK_STATE_FINISHED
            else HeldState.RUNNING,
        )
        for item in hello.held_tasks
    ]


def binding_to_proto(binding: ApprovalBinding) -> hand_pb2.ApprovalBinding:
    return hand_pb2.ApprovalBinding(
        approval_id=binding.approval_id,
        arguments_digest=binding.arguments_digest,
        source=_SOURCES[binding.source],
        detail=binding.detail,
    )


def to_proto(frame: Outbound) -> hand_pb2.AttachResponse:
    match frame:
        case OfferFrame(task=task):
            offer = hand_pb2.TaskOffer(
                task_id=task.id,
                attempt=task.attempt,
                tool=task.tool,
                arguments_json=json.dumps(task.arguments, ensure_ascii=False),
                accept_timeout_ms=_ms(frame.accept_timeout),
                run_timeout_ms=_ms(frame.run_timeout),
                conversation_key=task.conversation_key,
            )
            if task.approval is not None:
                offer.approval.CopyFrom(binding_to_proto(task.approval))
            return hand_pb2.AttachResponse(offer=offer)
        case CancelFrame():
            return hand_pb2.AttachResponse(
                cancel=hand_pb2.TaskCancel(
                    task_id=frame.task_id, attempt=frame.attempt, reason=frame.reason
                )
            )
        case AckFrame():
            return hand_pb2.AttachResponse(
                ack=hand_pb2.ReportAck(
                    task_id=frame.task_id,
                    attempt=frame.attempt,
                    status=_ACKS[frame.status],
                    message=frame.message,
                    kind=_KINDS[frame.kind],
                    seq=frame.seq,
                )
            )
        case PingFrame():
            return hand_pb2.AttachResponse(ping=hand_pb2.Ping(unix_millis=int(time.time() * 1000)))
        case ReconcileVerdict():
            return hand_pb2.AttachResponse(
                reconcile=hand_pb2.Reconcile(
                    task_id=frame.task_id, attempt=frame.attempt, action=_ACTIONS[frame.action]
                )
            )
    raise TypeError(f"not an outbound frame: {frame!r}")


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

    async def Attach(  # noqa: N802 - gRPC method name
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
        )
        welcome = hand_pb2.HandWelcome(
            hand_id=connection.hand_id,
            hand_name=connection.name,
            heartbeat_interval_ms=_ms(self._settings.heartbeat_interval),
            accept_timeout_ms=_ms(self._settings.accept_timeout),
            run_timeout_ms=_ms(self._settings.run_timeout),
            heartbeat_timeout_ms=_ms(self._settings.heartbeat_timeout),
            serves=sorted(connection.serves - {"*"}),
            serves_all="*" in connection.serves,
        )
        self._hub.attach(connection, replace=hello.replace)
        reader: asyncio.Task[None] | None = None
        try:
            yield hand_pb2.AttachResponse(welcome=welcome)
            verdicts = await self._guarded(self._tasks.hand_attached(connection, held_tasks(hello)))
            for verdict in verdicts:
                yield to_proto(verdict)
            reader = asyncio.create_task(self._read(connection, frames))
            self._readers.add(reader)
            reader.add_done_callback(self._readers.discard)
            while True:
                frame = await connection.next_frame()
                if isinstance(frame, CloseFrame):
                    await self._end(context, frame)
                    return
                yield to_proto(frame)
        finally:
            if reader is not None:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
            self._hub.detach(connection)
            self._tasks.hand_detached(connection)

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
        self,
        frames: AsyncIterator[hand_pb2.AttachRequest],
        ping: HandConnection | None = None,
    ) -> hand_pb2.AttachRequest | None:
        """The next frame; None when the Hand ended the stream. Raises TimeoutError when the
        Hand stayed silent for the heartbeat timeout; `ping`, when given, is sent a ping once
        half of it has passed."""
        timeout = self._settings.heartbeat_timeout
        reading = asyncio.ensure_future(_read_one(frames))
        try:
            if ping is not None:
                await asyncio.wait([reading], timeout=timeout / 2)
                if not reading.done():
                    ping.send(PingFrame())
                    timeout -= timeout / 2
            await asyncio.wait([reading], timeout=timeout)
            if not reading.done():
                raise TimeoutError
            return reading.result()
        finally:
            reading.cancel()

    async def _read(
        self, connection: HandConnection, frames: AsyncIterator[hand_pb2.AttachRequest]
    ) -> None:
        reason, message = CloseReason.ENDED, "the Hand ended the stream"
        reports = _Reports(connection, self._spawn, self._apply)
        try:
            while (frame := await self._next(frames, ping=connection)) is not None:
                if _task_of(frame):
                    await reports.apply(frame)
                else:
                    await self._guarded(self._apply(connection, frame))
        except TimeoutError:
            reason = CloseReason.SILENT
            message = f"no frame from the Hand for {self._settings.heartbeat_timeout:g} s"
            log.warning("hand %s: %s; closing its stream", connection.name, message)
        except grpc.aio.AbortError:
            # A frame did not decode and the call already ended with INVALID_ARGUMENT; ending
            # the connection without a status of its own lets the handler return.
            message = "a frame could not be decoded"
        except grpc.aio.AioRpcError as exc:
            message = f"the stream failed: {exc.code().name}"
        except asyncio.CancelledError:
            raise
        except Exception:
            if connection.closed is not None:
                return  # the stream is being ended from the Mind's side; reading just stopped
            log.exception("hand %s: failed to apply a frame; closing its stream", connection.name)
            message = "the Mind failed to apply a frame"
        connection.close(reason, message)

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
            self._change_tools(connection, frame.tools_changed)
        elif kind == "hello":
            log.info("hand %s sent a second hello; ending its stream", connection.name)
            connection.close(CloseReason.PROTOCOL, SECOND_HELLO)
        # Heartbeats need no answer: receiving any frame already proved the Hand alive.

    @staticmethod
    def _change_tools(connection: HandConnection, frame: hand_pb2.ToolsChanged) -> None:
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


async def _read_one(
    frames: AsyncIterator[hand_pb2.AttachRequest],
) -> hand_pb2.AttachRequest | None:
    """The next frame, None at the end of the stream (as a coroutine, so it can be awaited
    in steps without being cancelled in between)."""
    try:
        return await anext(frames)
    except StopAsyncIteration:
        return None


def _task_of(frame: hand_pb2.AttachRequest) -> str:
    """The task a report is about; empty for frames about the stream (hello, heartbeat)."""
    kind = frame.WhichOneof("frame")
    if kind in ("accepted", "rejected", "progress", "result"):
        return str(getattr(frame, kind).task_id)
    return ""


class _Reports:
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
        task_id = _task_of(frame)
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
