"""The Hand: tools, a local policy, and the HandLink stream with reconnect and reconciliation.

    hand = Hand("laptop")

    @hand.tool(effect="read_only")
    async def add(a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        report_progress("adding", 0.5)
        return a + b

    asyncio.run(hand.serve("127.0.0.1:7410", token))

An offer whose arguments do not match the tool's schema is rejected, and every offer whose
approval binding carries a digest is checked against the arguments. With
`Hand(..., require_binding=True)` the Hand also rejects an offer for a tool that is not
read-only when it comes without a binding (what allowed the call and its digest).

`serve` keeps one stream to the Mind, reconnecting with backoff (1 s doubling to 30 s) and
listing the tasks it still holds, so the Mind can tell it to keep going, drop them or resend
their results; a final ending (see "Stream endings" in hand.proto) raises `HandRefused`
instead. Every report carries a sequence number, and a result is kept until the ack naming
it (kind and number) arrives. It logs (logger `hand`, see `hand._lines`) one line when it
attaches, when the stream ends and before each reconnect. `run` is the same for a script:
blocking, and a refusal ends the program with one line and status 1.

A Hand answers a quick call with its result alone when the Mind allows it (`result_accepts`
in hand.proto's "Result as acceptance"): it sends `accepted` only for a task still running
`ACCEPT_DELAY` after the offer, or before the task's first progress, so a quick tool costs one
report and one ack. `Hand(..., result_accepts=False)` always sends `accepted` first. With the
Mind's consent it also sends the frames queued together as one message and reads the Mind's
batches (`batches`, see "Batches" in hand.proto); `Hand(..., batches=False)` does not.

Tools may come and go while the Hand runs (`add_tool`, `remove_tool`, `replace_tools`, called
from the event loop the Hand runs on): the changes of one event-loop turn reach the Mind as one
`tools_changed` with the whole current set, and every hello declares the set of its moment.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

import grpc

from hand._lines import attached_line, log, show_by_default, token_problem
from hand._progress import bind_progress
from hand._tools import Effect, InvalidArguments, Tool, ToolError, ToolFunction
from tobe import telemetry
from tobe.runtime.backoff import Backoff
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.runtime.digest import NotCanonicalizable, arguments_digest
from tobe.runtime.tasks import cancel_and_wait
from tobe.runtime.tls import ClientTls
from tobe.telemetry import instruments
from tobe.v1 import common_pb2, hand_pb2, hand_pb2_grpc

_EFFECTS = {
    Effect.READ_ONLY: common_pb2.EFFECT_CLASS_READ_ONLY,
    Effect.WORKSPACE_WRITE: common_pb2.EFFECT_CLASS_WORKSPACE_WRITE,
    Effect.EXTERNAL_SIDE_EFFECT: common_pb2.EFFECT_CLASS_EXTERNAL_SIDE_EFFECT,
}
_SOURCES = {
    hand_pb2.APPROVAL_SOURCE_PERSON: "person",
    hand_pb2.APPROVAL_SOURCE_GRANT: "grant",
    hand_pb2.APPROVAL_SOURCE_POLICY: "policy",
    hand_pb2.APPROVAL_SOURCE_REVIEWER: "reviewer",
}
# Endings that retrying cannot fix ("Stream endings" in hand.proto): the operator must change
# the credential or the Hand. ABORTED: another Hand took this Hand's name over (`replace`);
# reconnecting would take it back, and the two would replace each other forever.
# How long a task granted result-as-acceptance may run before the Hand sends `accepted` (never
# more than half the offer's accept timeout): long enough for a quick tool's result to answer
# the offer, short enough that a slow tool's acceptance is not noticeably late.
ACCEPT_DELAY = 0.02
# The most frames one message carries when the Mind granted batches.
BATCH = 64
_FINAL = (
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ABORTED,
)


# A channel of its own subchannels: gRPC shares them between channels process-wide by default,
# so a new channel would inherit the old one's reconnect backoff (failing at once meanwhile).
_FRESH: list[tuple[str, int | str]] = [("grpc.use_local_subchannel_pool", 1)]
# What the person running the Hand can do about a final ending; PERMISSION_DENIED's and
# INVALID_ARGUMENT's details already name the fix.
_FIXES = {
    grpc.StatusCode.UNAUTHENTICATED: (
        "check it with `tobe admin whoami --token-file FILE`, or create one with "
        "`tobe admin credentials create --kind hand --principal NAME --scope serve:YOU`"
    ),
    grpc.StatusCode.ALREADY_EXISTS: (
        "stop the other Hand, give this one another name, or take the name over with "
        "--replace (`serve(..., replace=True)`)"
    ),
    grpc.StatusCode.ABORTED: "this Hand stops and does not reconnect",
}


class HandRefused(Exception):
    """The Mind ended this Hand's stream for good (bad or revoked credential, invalid
    declaration, a name held by another Hand, or taken over by another Hand process), or the
    credential could not even be sent. `str()` is one line saying what to do."""

    def __init__(self, code: grpc.StatusCode, details: str, *, local: bool = False) -> None:
        fix = _FIXES.get(code)
        if local:
            message = details
        else:
            message = f"the Mind refused this Hand ({code.name}: {details})"
        super().__init__(f"{message}; {fix}" if fix else message)
        self.code = code
        self.details = details


@dataclass(frozen=True)
class Offer:
    """A task offer as the local policy sees it."""

    task_id: str
    attempt: int
    tool: str
    arguments: dict[str, Any]
    conversation_key: str
    approval_id: str
    # What allowed the call: "person", "grant", "policy", "reviewer"; "" without a binding.
    approval_source: str = ""


# Returns a reason to reject the offer, or None to accept it.
Policy = Callable[[Offer], str | None]
# A function declared as a tool; the declaration returns it unchanged.
Function = TypeVar("Function", bound=Callable[..., Any])
Call = grpc.aio.StreamStreamCall[hand_pb2.AttachRequest, hand_pb2.AttachResponse]


@dataclass(eq=False)
class HeldTask:
    """A task this Hand accepted and has not yet seen acknowledged."""

    task_id: str
    attempt: int
    job: asyncio.Task[None] | None = None
    result: hand_pb2.TaskResult | None = None
    # The sequence number the result was last sent with; only its ack releases the result.
    result_seq: int = 0
    # The `accepted` not sent yet, waiting for the result to answer the offer instead.
    pending_accept: asyncio.TimerHandle | None = None


class Hand:
    def __init__(
        self,
        name: str,
        *,
        version: str = "",
        policy: Policy | None = None,
        require_binding: bool = False,
        result_accepts: bool = True,
        batches: bool = True,
    ) -> None:
        self.name = name
        self.version = version
        self.policy = policy
        # Reject effectful offers that come without an approval binding.
        self.require_binding = require_binding
        # Ask the Mind to take a result for a task still offered as its acceptance too.
        self.result_accepts = result_accepts
        # Whether the current stream's welcome granted it.
        self._result_accepted = False
        # Ask the Mind for batched frames both ways; whether the current welcome granted them.
        self.batches = batches
        self._batched = False
        self.tools: dict[str, Tool] = {}
        self.held: dict[str, HeldTask] = {}
        self.hand_id = ""
        # Sent in every hello: how the Mind tells this Hand's reconnect from another Hand.
        self.instance_id = uuid.uuid4().hex
        # Whether the next hello asks to take the name over (only until the first welcome).
        self._replace = False
        self._outbox: asyncio.Queue[hand_pb2.AttachRequest] | None = None
        self._heartbeat_interval = 10.0
        self._last_seq = 0
        self._target = ""
        self._welcomes = 0
        # A `tools_changed` is scheduled for the end of this event-loop turn.
        self._declaring = False
        self.attached = asyncio.Event()
        # How the last stream to the Mind ended; "" before the first ending and once welcomed.
        self._ending = ""

    # -- declaring tools ------------------------------------------------------------------

    @overload
    def tool(
        self,
        function: Function,
        *,
        name: str | None = None,
        description: str | None = None,
        effect: Effect | str = Effect.READ_ONLY,
        background: bool = False,
        decision: str = "",
        sensitive: bool = False,
        dataset: str = "",
    ) -> Function: ...

    @overload
    def tool(
        self,
        function: None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        effect: Effect | str = Effect.READ_ONLY,
        background: bool = False,
        decision: str = "",
        sensitive: bool = False,
        dataset: str = "",
    ) -> Callable[[Function], Function]: ...

    def tool(
        self,
        function: Function | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        effect: Effect | str = Effect.READ_ONLY,
        background: bool = False,
        decision: str = "",
        sensitive: bool = False,
        dataset: str = "",
    ) -> Function | Callable[[Function], Function]:
        """Decorator: offer a typed function as a tool (usable with or without arguments).

        `decision` is the text a person approves, as a template over the arguments (e.g.
        `"{argv}"` shows a command line; see `ToolSpec.decision_template` in hand.proto).
        `sensitive` marks a tool that reads someone's personal data, from `dataset` (e.g.
        `"health.sleep"`; "" = the tool's name): a turn that calls it keeps no readable
        argument, result or thinking once it ended (`ToolSpec.sensitive`).
        """

        def register(target: Function) -> Function:
            self.add_tool(
                ToolFunction.wrap(
                    target,
                    name=name,
                    description=description,
                    effect=effect,
                    background=background,
                    decision=decision,
                    sensitive=sensitive,
                    dataset=dataset,
                )
            )
            return target

        return register(function) if function is not None else register

    def add_tool(self, tool: Tool) -> None:
        """Declare a tool; while attached, the Mind hears of it at once (`tools_changed`)."""
        if tool.name in self.tools:
            raise ValueError(f"tool {tool.name!r} is declared twice")
        self.tools[tool.name] = tool
        self._tools_changed()

    def remove_tool(self, name: str) -> Tool:
        """Withdraw a tool; returns it. Runs that start afterwards no longer see it, offers
        for it are rejected, and a task of it already running finishes as usual."""
        if name not in self.tools:
            raise ValueError(f"this Hand has no tool {name!r}")
        removed = self.tools.pop(name)
        self._tools_changed()
        return removed

    def replace_tools(self, tools: Iterable[Tool]) -> None:
        """Declare exactly these tools from now on (e.g. what a server this Hand hosts lists
        after it restarted), in place of all the current ones."""
        new: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in new:
                raise ValueError(f"tool {tool.name!r} is declared twice")
            new[tool.name] = tool
        self.tools = new
        self._tools_changed()

    def _tools_changed(self) -> None:
        """Tell the Mind the current tool set once this event-loop turn is over, so a burst of
        changes sends one `tools_changed`. Not attached (or no loop running yet): the next
        hello carries the set."""
        if self._outbox is None or self._declaring:
            return
        self._declaring = True
        asyncio.get_running_loop().call_soon(self._declare_tools)

    def _declare_tools(self) -> None:
        self._declaring = False
        if self._send(
            hand_pb2.AttachRequest(tools_changed=hand_pb2.ToolsChanged(tools=self._specs()))
        ):
            log.info("declared %d tools to the Mind", len(self.tools))

    # -- the stream -----------------------------------------------------------------------

    def run(
        self, target: str, token: str, *, tls: ClientTls | None = None, replace: bool = False
    ) -> None:
        """`serve` for a script: blocks until Ctrl-C; a refusal exits with one line, status 1."""
        try:
            asyncio.run(self.serve(target, token, tls=tls, replace=replace))
        except KeyboardInterrupt:
            return
        except HandRefused as exc:
            raise SystemExit(f"Error: {exc}") from None

    @property
    def detachment(self) -> str:
        """Why this Hand is not attached to its Mind (for its health); "" while it is."""
        if self.attached.is_set():
            return ""
        return self._ending or f"attaching to the Mind at {self._target}"

    async def serve(
        self, target: str, token: str, *, tls: ClientTls | None = None, replace: bool = False
    ) -> None:
        """Stay attached to the Mind at `target` until cancelled; raises HandRefused.

        A name held by another live Hand is refused (ALREADY_EXISTS) unless `replace`: then
        this Hand takes it over once, and the other one stops (ABORTED).

        With `tls` (see `hand.client_tls`), or for a `tls://host:port` target, over TLS. Each
        attempt dials on a fresh channel with subchannels of its own, so this loop's backoff is
        the only one: a channel kept across attempts runs its own reconnect backoff and fails
        calls at once while it waits, so attempts after the Mind was back kept failing
        (reattaching took ~40 s).
        """
        problem = token_problem(token)
        if problem is not None:
            raise HandRefused(grpc.StatusCode.UNAUTHENTICATED, problem, local=True)
        show_by_default()
        self._target = target
        self._replace = replace
        backoff = Backoff()
        while True:
            ending = await self._attempt(target, token, tls, backoff)
            self._ending = ending
            delay = backoff.next_delay()
            log.warning("%s; reconnecting in %.1fs", ending, delay)
            await asyncio.sleep(delay)

    async def _attempt(
        self, target: str, token: str, tls: ClientTls | None, backoff: Backoff
    ) -> str:
        """One stream on a fresh channel; says how it ended (a final ending raises)."""
        welcomes = self._welcomes
        async with open_channel(target, tls=tls, extra_options=_FRESH) as channel:
            try:
                await self._attach(hand_pb2_grpc.HandLinkStub(channel), token, backoff)
                why = "the Mind ended the stream"
            except grpc.aio.AioRpcError as exc:
                if exc.code() in _FINAL:
                    raise HandRefused(exc.code(), exc.details() or "") from None
                why = f"{exc.code().name}: {exc.details()}"
        if self._welcomes > welcomes:
            return f"disconnected from the Mind at {target} ({why})"
        return f"stream to the Mind failed ({why})"

    async def _attach(
        self, stub: hand_pb2_grpc.HandLinkAsyncStub, token: str, backoff: Backoff
    ) -> None:
        call = stub.Attach(metadata=bearer_metadata(token))
        outbox: asyncio.Queue[hand_pb2.AttachRequest] = asyncio.Queue()
        outbox.put_nowait(hand_pb2.AttachRequest(hello=self._hello()))
        self._outbox = outbox
        writer = asyncio.create_task(self._write(call, outbox))
        beats = asyncio.create_task(self._beat())
        try:
            while True:
                # Raises the stream's error status; grpc.aio.EOF when it ended with OK.
                response = await call.read()
                if not isinstance(response, hand_pb2.AttachResponse):
                    return
                await self._handle(response, backoff)
                for frame in response.more:
                    await self._handle(frame, backoff)
        finally:
            self._outbox = None
            self._result_accepted = False
            self._batched = False
            self.attached.clear()
            # The next hello lists these tasks as running; reconciliation accepts them.
            for held in self.held.values():
                self._forget_accept(held)
            try:
                await cancel_and_wait(writer, beats)
            finally:
                call.cancel()

    async def _write(self, call: Call, outbox: asyncio.Queue[hand_pb2.AttachRequest]) -> None:
        try:
            while True:
                frame = await outbox.get()
                while self._batched and not outbox.empty() and len(frame.more) < BATCH:
                    frame.more.append(outbox.get_nowait())
                await call.write(frame)
        except asyncio.InvalidStateError:
            # The stream ended while a frame was on its way: the reader reports how it ended
            # (this used to escape from the stream's cleanup and stop the whole Hand).
            return

    async def _beat(self) -> None:
        # The welcome sets the interval: beat at its pace from the first heartbeat on.
        await self.attached.wait()
        while True:
            await asyncio.sleep(self._heartbeat_interval)
            self._send(
                hand_pb2.AttachRequest(
                    heartbeat=hand_pb2.Heartbeat(unix_millis=int(time.time() * 1000))
                )
            )

    def _send(self, frame: hand_pb2.AttachRequest) -> bool:
        """Queue a frame on the current stream; False while disconnected."""
        if self._outbox is None:
            return False
        self._outbox.put_nowait(frame)
        return True

    def _report(self, frame: hand_pb2.AttachRequest) -> int:
        """Send a report under the next sequence number, which its ack echoes; returns it."""
        self._last_seq += 1
        frame.seq = self._last_seq
        self._send(frame)
        return frame.seq

    def _specs(self) -> list[hand_pb2.ToolSpec]:
        """The current tools as declared in a hello or a `tools_changed`."""
        return [
            hand_pb2.ToolSpec(
                name=tool.name,
                description=tool.description,
                parameters_json_schema=json.dumps(tool.json_schema),
                effect=_EFFECTS[tool.effect],
                background=tool.background,
                decision_template=tool.decision,
                sensitive=tool.sensitive,
                dataset=tool.dataset,
            )
            for tool in self.tools.values()
        ]

    def _hello(self) -> hand_pb2.HandHello:
        hello = hand_pb2.HandHello(
            name=self.name,
            version=self.version,
            tools=self._specs(),
            instance_id=self.instance_id,
            replace=self._replace,
            result_accepts=self.result_accepts,
            batches=self.batches,
        )
        for held in self.held.values():
            state = (
                hand_pb2.HELD_TASK_STATE_FINISHED
                if held.result is not None
                else hand_pb2.HELD_TASK_STATE_RUNNING
            )
            hello.held_tasks.append(
                hand_pb2.HeldTask(task_id=held.task_id, attempt=held.attempt, state=state)
            )
        return hello

    # -- frames from the Mind -------------------------------------------------------------

    async def _handle(self, response: hand_pb2.AttachResponse, backoff: Backoff) -> None:
        kind = response.WhichOneof("frame")
        if kind == "welcome":
            backoff.reset()
            self._replace = False
            self.hand_id = response.welcome.hand_id
            self._result_accepted = self.result_accepts and response.welcome.result_accepts
            self._batched = self.batches and response.welcome.batches
            if response.welcome.heartbeat_interval_ms > 0:
                self._heartbeat_interval = response.welcome.heartbeat_interval_ms / 1000
            self._welcomes += 1
            self._ending = ""
            self.attached.set()
            log.info(attached_line(self._target, response.welcome, len(self.tools)))
        elif kind == "offer":
            self._on_offer(response.offer)
        elif kind == "cancel":
            self._on_cancel(response.cancel)
        elif kind == "ack":
            self._on_ack(response.ack)
        elif kind == "reconcile":
            self._on_reconcile(response.reconcile)
        elif kind == "ping":
            self._send(
                hand_pb2.AttachRequest(
                    heartbeat=hand_pb2.Heartbeat(unix_millis=int(time.time() * 1000))
                )
            )

    def _on_offer(self, offer: hand_pb2.TaskOffer) -> None:
        current = self.held.get(offer.task_id)
        if current is not None:
            if current.attempt == offer.attempt:
                return
            self._drop(current)
        reason, tool, arguments = self._screen(offer)
        if reason is not None:
            log.info("rejected task %s (%s): %s", offer.task_id, offer.tool, reason)
            self._report(
                hand_pb2.AttachRequest(
                    rejected=hand_pb2.TaskRejected(
                        task_id=offer.task_id, attempt=offer.attempt, reason=reason
                    )
                )
            )
            return
        assert tool is not None and arguments is not None
        held = HeldTask(offer.task_id, offer.attempt)
        self.held[held.task_id] = held
        if self._result_accepted:
            delay = min(ACCEPT_DELAY, offer.accept_timeout_ms / 2000 or ACCEPT_DELAY)
            held.pending_accept = asyncio.get_running_loop().call_later(
                delay, self._send_accepted, held
            )
        else:
            self._send_accepted(held)
        held.job = asyncio.create_task(
            self._execute(held, tool, arguments, dict(offer.trace_context))
        )

    def _screen(
        self, offer: hand_pb2.TaskOffer
    ) -> tuple[str | None, Tool | None, dict[str, Any] | None]:
        """Why this Hand refuses an offer (None when it accepts), with the parsed call."""
        tool = self.tools.get(offer.tool)
        if tool is None:
            return f"this Hand has no tool {offer.tool!r}", None, None
        try:
            arguments = json.loads(offer.arguments_json or "{}")
        except json.JSONDecodeError as exc:
            return f"arguments are not JSON: {exc}", None, None
        if not isinstance(arguments, dict):
            return "arguments must be a JSON object", None, None
        try:
            tool.validate(arguments)
        except InvalidArguments as exc:
            return str(exc), None, None
        digest = offer.approval.arguments_digest if offer.HasField("approval") else ""
        if not digest and self.require_binding and tool.effect is not Effect.READ_ONLY:
            return (
                f"this Hand requires an approval binding for {tool.effect.value} tools "
                "and the offer has none",
                None,
                None,
            )
        if digest:
            problem = _digest_problem(arguments, digest)
            if problem is not None:
                return problem, None, None
        if self.policy is not None:
            reason = self.policy(
                Offer(
                    offer.task_id,
                    offer.attempt,
                    offer.tool,
                    arguments,
                    offer.conversation_key,
                    offer.approval.approval_id,
                    _SOURCES.get(offer.approval.source, ""),
                )
            )
            if reason:
                return reason, None, None
        return None, tool, arguments

    def _on_cancel(self, cancel: hand_pb2.TaskCancel) -> None:
        held = self.held.get(cancel.task_id)
        if held is None or held.attempt != cancel.attempt:
            return
        if held.job is not None and not held.job.done():
            log.info("cancelling task %s: %s", held.task_id, cancel.reason)
            held.job.cancel()

    def _on_ack(self, ack: hand_pb2.ReportAck) -> None:
        held = self.held.get(ack.task_id)
        if held is None or held.attempt != ack.attempt:
            return
        if held.result is not None:
            # Only the result's own ack settles it (any verdict: applied, or refused for good);
            # acks of earlier reports, progress above all, may still be on their way.
            if ack.kind == hand_pb2.REPORT_KIND_RESULT and ack.seq == held.result_seq:
                if ack.status == hand_pb2.ACK_STATUS_INVALID and held.result.images:
                    self._resend_without_images(held, ack.message)
                    return
                del self.held[held.task_id]
        elif ack.status != hand_pb2.ACK_STATUS_OK:
            log.info(
                "the Mind refused task %s (%s); dropping it",
                ack.task_id,
                hand_pb2.AckStatus.Name(ack.status),
            )
            self._drop(held)

    def _on_reconcile(self, verdict: hand_pb2.Reconcile) -> None:
        held = self.held.get(verdict.task_id)
        if held is None or held.attempt != verdict.attempt:
            return
        if verdict.action == hand_pb2.RECONCILE_ACTION_DROP:
            self._drop(held)
        elif verdict.action == hand_pb2.RECONCILE_ACTION_RESEND_RESULT and held.result:
            self._send_result(held)

    def _send_accepted(self, held: HeldTask) -> None:
        self._forget_accept(held)
        self._report(
            hand_pb2.AttachRequest(
                accepted=hand_pb2.TaskAccepted(task_id=held.task_id, attempt=held.attempt)
            )
        )

    def _confirm(self, held: HeldTask) -> None:
        """Send the task's pending `accepted` now (a progress report must follow it)."""
        if held.pending_accept is not None:
            self._send_accepted(held)

    @staticmethod
    def _forget_accept(held: HeldTask) -> None:
        """Send no `accepted` for the task any more: its result answers the offer."""
        if held.pending_accept is not None:
            held.pending_accept.cancel()
            held.pending_accept = None

    def _drop(self, held: HeldTask) -> None:
        self._forget_accept(held)
        self.held.pop(held.task_id, None)
        if held.job is not None and not held.job.done():
            held.job.cancel()

    # -- running a task -------------------------------------------------------------------

    async def _execute(
        self, held: HeldTask, tool: Tool, arguments: dict[str, Any], trace: dict[str, str]
    ) -> None:
        """Run the tool in a span continuing the offering call's trace (`trace_context`)."""
        attributes: dict[str, telemetry.AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool.name,
            "tobe.task.id": held.task_id,
            "tobe.task.attempt": held.attempt,
        }
        with (
            telemetry.resumed(trace),
            telemetry.span(f"execute_tool {tool.name}", attributes=attributes) as span,
        ):
            result = await self._outcome(held, tool, arguments)
            outcome = "ok" if result.ok else "cancelled" if result.cancelled else "error"
            span.set_attribute("tobe.outcome", outcome)
        instruments.hand_tasks.add(1, {"tool": tool.name, "outcome": outcome})
        if self.held.get(held.task_id) is held:
            held.result = result
            self._send_result(held)

    async def _outcome(
        self, held: HeldTask, tool: Tool, arguments: dict[str, Any]
    ) -> hand_pb2.TaskResult:
        def progress(message: str, fraction: float | None) -> None:
            if self.held.get(held.task_id) is held and held.result is None:
                self._confirm(held)
                self._report(
                    hand_pb2.AttachRequest(
                        progress=hand_pb2.TaskProgress(
                            task_id=held.task_id,
                            attempt=held.attempt,
                            message=message,
                            fraction=-1.0 if fraction is None else fraction,
                        )
                    )
                )

        bind_progress(progress)
        result = hand_pb2.TaskResult(task_id=held.task_id, attempt=held.attempt)
        try:
            output = await tool.call(arguments)
            result.output = output.text
            result.images.extend(
                common_pb2.ImageUpload(media_type=media_type, data=data)
                for media_type, data in output.images
            )
            result.ok = True
        except asyncio.CancelledError:
            result.cancelled, result.error = True, "cancelled"
        except ToolError as exc:
            result.error = str(exc)
        except Exception as exc:
            log.exception("tool %s failed", tool.name)
            result.error = f"{type(exc).__name__}: {exc}"
        return result

    def _resend_without_images(self, held: HeldTask, why: str) -> None:
        """The Mind refused the result for its images (the task is unchanged): send the text
        alone, saying why the images are missing."""
        assert held.result is not None
        log.info("the Mind refused the images of task %s: %s", held.task_id, why)
        count = len(held.result.images)
        del held.result.images[:]
        note = f"[{count} image{'s' if count > 1 else ''} left out: {why}]"
        held.result.output = f"{held.result.output}\n{note}" if held.result.output else note
        self._send_result(held)

    def _send_result(self, held: HeldTask) -> None:
        """Send the held result (again); it stays held until the Mind acknowledges it."""
        assert held.result is not None
        self._forget_accept(held)
        held.result_seq = self._report(hand_pb2.AttachRequest(result=held.result))


def _digest_problem(arguments: dict[str, Any], digest: str) -> str | None:
    """Why the approved digest does not cover these arguments (None when it does)."""
    try:
        actual = arguments_digest(arguments)
    except NotCanonicalizable as exc:
        return f"the arguments cannot be bound to an approval: {exc}"
    if actual != digest:
        return "the arguments differ from what was approved (digest mismatch)"
    return None
