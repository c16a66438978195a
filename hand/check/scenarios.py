"""The scenarios of `tobe hand check`, in the order they run, each with the sentences of
hand.proto it checks (`tests/hand/test_check_scenarios.py` keeps them verbatim in the proto's
text).

A scenario uses fresh task ids and leaves the Hand attached (except `final`, which runs last),
so any subset runs on its own.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc

from hand.check.link import ACCEPT_TIMEOUT, HEARTBEAT_INTERVAL
from hand.check.session import Failure, Session, describe, kind
from tobe.runtime.digest import arguments_digest
from tobe.v1 import common_pb2, hand_pb2

ECHO, WAIT, WRITE = "conformance_echo", "conformance_wait", "conformance_write"
CONFORMANCE_EFFECTS = {
    ECHO: common_pb2.EFFECT_CLASS_READ_ONLY,
    WAIT: common_pb2.EFFECT_CLASS_READ_ONLY,
    WRITE: common_pb2.EFFECT_CLASS_EXTERNAL_SIDE_EFFECT,
}
HAND_NAME = re.compile(r"[a-z][a-z0-9-]{0,14}")
TOOL_NAME = re.compile(r"[a-z][a-z0-9_]{0,46}")
# Arguments with numbers whose text differs from their RFC 8785 form: the inputs of the digest
# test vectors (proto/tobe/v1/testdata), each with the `text` conformance_write needs.
TRICKY_ARGUMENTS = (
    '{"text":"two","count":2.0}',
    '{"text":"big","n":1e16}',
    '{"text":"small","n":1e-05}',
    '{"text":"zero","n":-0.0}',
    '{"text":"café ☕ 😀"}',
)


@dataclass(frozen=True)
class Scenario:
    name: str
    # Passages of the hand.proto comments, each verbatim, quoted in a failure.
    quote: tuple[str, ...]
    run: Callable[[Session], Awaitable[None]]


def _text(value: str) -> str:
    return json.dumps({"text": value})


async def _echo_result(session: Session, task_id: str, text: str) -> None:
    _, result = await session.until_result(task_id)
    if not result.ok or result.output != text:
        raise Failure(f"the result was ok={result.ok} output={result.output!r}, not {text!r}")


async def hello(session: Session) -> None:
    declared = session.stream.hello
    if not HAND_NAME.fullmatch(declared.name) and declared.name:
        raise Failure(f"hello.name {declared.name!r} does not match {HAND_NAME.pattern}")
    names = [tool.name for tool in declared.tools]
    if len(set(names)) != len(names):
        raise Failure(f"a tool is declared twice: {names}")
    import jsonschema  # only `tobe hand check` runs this; the serving Hand never loads it

    for tool in declared.tools:
        if not TOOL_NAME.fullmatch(tool.name):
            raise Failure(f"tool name {tool.name!r} does not match {TOOL_NAME.pattern}")
        try:
            schema = json.loads(tool.parameters_json_schema or "{}")
            jsonschema.Draft202012Validator.check_schema(schema)
        except (json.JSONDecodeError, jsonschema.SchemaError) as exc:
            raise Failure(f"tool {tool.name}: parameters_json_schema is not valid: {exc}") from None
        if not isinstance(schema, dict) or schema.get("type", "object") != "object":
            raise Failure(f"tool {tool.name}: parameters_json_schema is not an object schema")
        wanted = CONFORMANCE_EFFECTS.get(tool.name)
        if wanted is not None and tool.effect != wanted:
            raise Failure(
                f"tool {tool.name} is declared {common_pb2.EffectClass.Name(tool.effect)}, "
                f"not {common_pb2.EffectClass.Name(wanted)}"
            )
    await asyncio.sleep(HEARTBEAT_INTERVAL)
    if session.stream.extra_hellos:
        raise Failure("the Hand sent a second hello on the stream")


async def normal(session: Session) -> None:
    task_id = session.task_id("echo")
    session.offer(task_id, ECHO, _text("hello, check"))
    accepted = await session.accepted(task_id)
    reports, result = await session.until_result(task_id)
    if not result.ok or result.output != "hello, check":
        raise Failure(f"the result was ok={result.ok} output={result.output!r}")
    seqs = [frame.seq for frame in [accepted, *reports] if frame.seq]
    if len(set(seqs)) != len(seqs):
        raise Failure(f"two reports of one task carry the same seq: {seqs}")
    await session.nothing_more(task_id, 2 * HEARTBEAT_INTERVAL, "after the result's ack")


async def progress(session: Session) -> None:
    task_id = session.task_id("progress")
    session.offer(task_id, WAIT, '{"seconds":0.5}')
    await session.accepted(task_id)
    reports, result = await session.until_result(task_id)
    updates = [frame.progress for frame in reports if kind(frame) == "progress"]
    if not updates:
        raise Failure("the result came without any progress frame before it")
    for update in updates:
        if update.fraction > 1:
            raise Failure(f"a progress fraction is {update.fraction}, beyond 1")
    if not result.ok or result.output != "done":
        raise Failure(f"the result was ok={result.ok} output={result.output!r}, not 'done'")


async def reject(session: Session) -> None:
    for label, tool, arguments in (
        ("an undeclared tool", "conformance_absent", _text("x")),
        ("arguments without the required text", ECHO, "{}"),
        ("arguments where text is a number", ECHO, '{"text":7}'),
    ):
        task_id = session.task_id("reject")
        session.offer(task_id, tool, arguments)
        frame = await session.answer(task_id)
        if kind(frame) != "rejected":
            raise Failure(f"the Hand accepted an offer with {label}: {tool} {arguments}")
        if not frame.rejected.reason:
            raise Failure(f"the rejection of an offer with {label} gives no reason")


async def cancel(session: Session) -> None:
    task_id = session.task_id("cancel")
    session.offer(task_id, WAIT, '{"seconds":30}')
    await session.accepted(task_id)
    session.cancel(task_id, 1)
    try:
        _, result = await session.until_result(task_id)
    except Failure as failure:
        raise Failure(
            f"after the cancel of a running conformance_wait(30) ({failure}) the Hand did "
            "not stop and report a cancelled result"
        ) from None
    if result.ok or not result.cancelled:
        raise Failure(
            f"after the cancel the result was ok={result.ok} cancelled={result.cancelled}"
        )


async def stale_cancel(session: Session) -> None:
    task_id = session.task_id("stale-cancel")
    session.offer(task_id, WAIT, '{"seconds":1}')
    await session.accepted(task_id)
    session.cancel(task_id, 2)
    session.cancel(session.task_id("never-offered"), 1)
    _, result = await session.until_result(task_id)
    if not result.ok or result.cancelled:
        raise Failure(
            "a cancel naming attempt 2 of a task running attempt 1 stopped it: the result was "
            f"ok={result.ok} cancelled={result.cancelled}"
        )


async def heartbeat(session: Session) -> None:
    stream = session.stream
    since = time.monotonic()
    for _ in range(3):
        beat = await stream.heartbeat_after(since, 2 * HEARTBEAT_INTERVAL + 0.5)
        if beat is None:
            raise Failure(
                f"no heartbeat within {2 * HEARTBEAT_INTERVAL + 0.5:g} s "
                f"(heartbeat_interval_ms = {int(HEARTBEAT_INTERVAL * 1000)})"
            )
        since = beat
    stream.send(hand_pb2.AttachResponse(ping=hand_pb2.Ping(unix_millis=int(time.time() * 1000))))
    answer = await stream.heartbeat_after(since, HEARTBEAT_INTERVAL / 2)
    if answer is None:
        raise Failure(
            f"no heartbeat within {HEARTBEAT_INTERVAL / 2:g} s of a ping sent right after "
            "the last heartbeat"
        )


async def refused_ack(session: Session) -> None:
    for status in (
        hand_pb2.ACK_STATUS_ALREADY_TERMINAL,
        hand_pb2.ACK_STATUS_STALE,
        hand_pb2.ACK_STATUS_UNKNOWN_TASK,
    ):
        task_id = session.task_id("refused")
        session.offer(task_id, ECHO, _text("refused"))
        await session.accepted(task_id)
        reports, _ = await session.until_result(task_id, ack_result=False)
        session.ack(reports[-1], status)
        await session.nothing_more(
            task_id, HEARTBEAT_INTERVAL, f"after a {hand_pb2.AckStatus.Name(status)} result ack"
        )
        stream = await session.force_reconnect()
        held = [item.task_id for item in stream.hello.held_tasks]
        if task_id in held:
            raise Failure(
                f"after a {hand_pb2.AckStatus.Name(status)} ack of its result the Hand still "
                "lists the task in hello.held_tasks"
            )
        _drop_all(session)
        await session.nothing_more(task_id, HEARTBEAT_INTERVAL, "after the reconnect")


def _drop_all(session: Session, keep: str = "") -> None:
    """Answer DROP for every held task but `keep` (leftovers of failed scenarios)."""
    for item in session.stream.hello.held_tasks:
        if item.task_id != keep:
            _reconcile(session, item, hand_pb2.RECONCILE_ACTION_DROP)


def _reconcile(
    session: Session, item: hand_pb2.HeldTask, action: hand_pb2.ReconcileAction.ValueType
) -> None:
    session.stream.send(
        hand_pb2.AttachResponse(
            reconcile=hand_pb2.Reconcile(task_id=item.task_id, attempt=item.attempt, action=action)
        )
    )


async def _reconnect_holding(
    session: Session, task_id: str, state: hand_pb2.HeldTaskState.ValueType
) -> hand_pb2.HeldTask:
    """Force a reconnect; the new hello must list the task in `state`."""
    stream = await session.force_reconnect()
    item = next((held for held in stream.hello.held_tasks if held.task_id == task_id), None)
    _drop_all(session, keep=task_id)
    wanted = hand_pb2.HeldTaskState.Name(state)
    if item is None:
        raise Failure(f"after the reconnect, hello.held_tasks does not list the task ({wanted})")
    if item.state != state or item.attempt != 1:
        raise Failure(
            f"hello.held_tasks lists the task as {hand_pb2.HeldTaskState.Name(item.state)} "
            f"attempt {item.attempt}, not {wanted} attempt 1"
        )
    return item


async def reconnect_keep_running(session: Session) -> None:
    task_id = session.task_id("keep")
    session.offer(task_id, WAIT, '{"seconds":2.5}')
    await session.accepted(task_id)
    item = await _reconnect_holding(session, task_id, hand_pb2.HELD_TASK_STATE_RUNNING)
    _reconcile(session, item, hand_pb2.RECONCILE_ACTION_KEEP_RUNNING)
    _, result = await session.until_result(task_id)
    if not result.ok or result.output != "done":
        raise Failure(f"the result on the new stream was ok={result.ok} output={result.output!r}")


async def reconnect_resend_result(session: Session) -> None:
    task_id = session.task_id("resend")
    session.offer(task_id, ECHO, _text("again"))
    await session.accepted(task_id)
    await session.until_result(task_id, ack_result=False)
    item = await _reconnect_holding(session, task_id, hand_pb2.HELD_TASK_STATE_FINISHED)
    _reconcile(session, item, hand_pb2.RECONCILE_ACTION_RESEND_RESULT)
    await _echo_result(session, task_id, "again")


async def reconnect_drop(session: Session) -> None:
    task_id = session.task_id("drop")
    session.offer(task_id, WAIT, '{"seconds":2}')
    await session.accepted(task_id)
    started = time.monotonic()
    item = await _reconnect_holding(session, task_id, hand_pb2.HELD_TASK_STATE_RUNNING)
    _reconcile(session, item, hand_pb2.RECONCILE_ACTION_DROP)
    # Past the time the task would have finished, and then some.
    remaining = max(0.0, started + 2 - time.monotonic()) + 2 * HEARTBEAT_INTERVAL
    await session.nothing_more(task_id, remaining, "after a DROP verdict")


async def approvals(session: Session) -> None:
    for arguments in TRICKY_ARGUMENTS:
        task_id = session.task_id("bound")
        digest = arguments_digest(json.loads(arguments))
        session.offer(task_id, WRITE, arguments, approval=_binding(digest))
        frame = await session.answer(task_id)
        if kind(frame) != "accepted":
            raise Failure(
                f"the Hand rejected {arguments} bound to its correct digest {digest}: "
                f"{frame.rejected.reason!r}"
            )
        await _echo_result(session, task_id, json.loads(arguments)["text"])
    task_id = session.task_id("mismatch")
    wrong = arguments_digest({"text": "something else"})
    session.offer(task_id, WRITE, _text("approved?"), approval=_binding(wrong))
    frame = await session.answer(task_id)
    if kind(frame) != "rejected":
        raise Failure(
            "the Hand accepted a conformance_write offer whose approval digest is not the "
            f"digest of its arguments ({describe(frame)})"
        )


async def granted(session: Session) -> None:
    """What a Hand asks for in its hello, granted: result-as-acceptance (a quick result may
    answer its offer alone, a slow task is still accepted in time) and batches (offers sent as
    one message are each answered). The stream after it has no grant again; `normal` and the
    others check the Hand's path without them."""
    hello = session.stream.hello
    if not hello.result_accepts and not hello.batches:
        return  # the Hand asks for neither: the other scenarios check its only path
    session.link.granting = True
    try:
        await session.force_reconnect()
        _drop_all(session)
        if hello.batches:
            await _batched_offers(session)
        if hello.result_accepts:
            await _result_accepts(session)
    finally:
        session.link.granting = False
        await session.force_reconnect()
        _drop_all(session)


async def _batched_offers(session: Session) -> None:
    batch = [(session.task_id("batched"), text) for text in ("first in batch", "second in batch")]
    session.offer_batch([(task_id, ECHO, _text(text)) for task_id, text in batch])
    for task_id, text in batch:
        frame = await session.report(task_id, "result or accepted", ACCEPT_TIMEOUT)
        if kind(frame) == "accepted":
            session.ack(frame)
            await _echo_result(session, task_id, text)
        elif kind(frame) != "result" or frame.result.output != text:
            raise Failure(f"an offer sent in a batch was answered with {describe(frame)}")
        else:
            session.ack(frame)


async def _result_accepts(session: Session) -> None:
    quick = session.task_id("at-once")
    session.offer(quick, ECHO, _text("at once"))
    frame = await session.report(quick, "result or accepted", ACCEPT_TIMEOUT)
    if kind(frame) == "accepted":
        session.ack(frame)
        await _echo_result(session, quick, "at once")
    elif kind(frame) != "result" or frame.result.attempt != 1:
        raise Failure(f"the first report after a granted offer was {describe(frame)}")
    elif not frame.result.ok or frame.result.output != "at once":
        raise Failure(f"the result alone was {describe(frame)}, not ok 'at once'")
    else:
        session.ack(frame)
    slow = session.task_id("slow")
    session.offer(slow, WAIT, '{"seconds":1.5}')
    frame = await session.report(slow, "accepted", ACCEPT_TIMEOUT / 2)
    if kind(frame) != "accepted":
        raise Failure(
            f"the first report of a task still running was {describe(frame)}, not accepted"
        )
    session.ack(frame)
    _, result = await session.until_result(slow)
    if not result.ok or result.output != "done":
        raise Failure(f"the result was ok={result.ok} output={result.output!r}, not 'done'")


def _binding(digest: str) -> hand_pb2.ApprovalBinding:
    return hand_pb2.ApprovalBinding(
        approval_id="check-approval",
        arguments_digest=digest,
        source=hand_pb2.APPROVAL_SOURCE_PERSON,
        detail="tobe hand check",
    )


async def final(session: Session) -> None:
    session.stream.end(grpc.StatusCode.ABORTED, "the check replaces this Hand's stream")
    await session.stream.closed.wait()
    try:
        stream = await asyncio.wait_for(session.link.streams.get(), 4 * HEARTBEAT_INTERVAL)
    except TimeoutError:
        return
    stream.end(grpc.StatusCode.ABORTED, "the check replaces this Hand's stream")
    raise Failure("after a stream ended with ABORTED, the Hand reconnected")


SCENARIOS = (
    Scenario(
        "hello",
        (
            "`hello.name` (or, when empty, the credential's principal) must match "
            "[a-z][a-z0-9-]{0,14}; tool names must match [a-z][a-z0-9_]{0,46}.",
            "JSON Schema (draft 2020-12) of the arguments object.",
        ),
        hello,
    ),
    Scenario(
        "normal",
        (
            "within the accept timeout",
            "exactly one per accepted attempt",
            "a Hand matches an ack to its report by `(task_id, attempt, kind, seq)`, never by "
            "the task alone",
            "A Hand keeps a result until it has the result's ack (any status), and resends it "
            "after a reconnect when told RESEND_RESULT.",
        ),
        normal,
    ),
    Scenario(
        "progress",
        (
            "sends at least one progress frame at once (fraction 0..1, or negative), then waits "
            '`seconds`; result ok = true, output "done".',
        ),
        progress,
    ),
    Scenario(
        "reject",
        (
            "Every Hand rejects an offer for a tool it did not declare, and one whose arguments do "
            "not match the tool's schema.",
        ),
        reject,
    ),
    Scenario(
        "cancel",
        (
            "after a `cancel` frame the Hand should stop and report a result (ok = false, "
            "cancelled = true).",
        ),
        cancel,
    ),
    Scenario(
        "stale-cancel",
        (
            "The attempt number is a fencing token",
            "A `cancel` for a task the Hand no longer holds is ignored.",
        ),
        stale_cancel,
    ),
    Scenario(
        "heartbeat",
        (
            "A Hand sends a `heartbeat` at least every `welcome.heartbeat_interval_ms`. When no "
            "frame has arrived for half of `welcome.heartbeat_timeout_ms`, the Mind sends one "
            "`ping`; the Hand answers it at once with a `heartbeat`.",
        ),
        heartbeat,
    ),
    Scenario(
        "refused-ack",
        (
            "A report that cannot apply changes nothing, is logged, and gets an `ack` saying why",
            "A Hand keeps a result until it has the result's ack (any status)",
        ),
        refused_ack,
    ),
    Scenario(
        "reconnect-keep-running",
        (
            "A Hand that loses its stream with a retryable ending reconnects with backoff (1 s "
            "doubling to 30 s, reset after a welcome) and lists in `hello.held_tasks` every "
            "task it still holds and its local state.",
            "KEEP_RUNNING the task is still open on the Mind's side; keep going and report later",
        ),
        reconnect_keep_running,
    ),
    Scenario(
        "reconnect-resend-result",
        ("RESEND_RESULT the Hand says it finished; send the `result` frame again",),
        reconnect_resend_result,
    ),
    Scenario(
        "reconnect-drop",
        ("DROP the task is terminal (or unknown, or a stale attempt); stop it, forget it",),
        reconnect_drop,
    ),
    Scenario(
        "approvals",
        (
            "A Hand may reject an effectful offer that has no binding, and must reject one whose "
            "digest differs from its own.",
        ),
        approvals,
    ),
    Scenario(
        "granted",
        (
            "a result for a task still offered accepts it and ends it in one report, committed "
            "together",
            "Such a Hand still sends `accepted` for a task whose result is not ready soon after "
            "the offer",
            "the frames in a frame's `more` follow it, in order, exactly as if each had been sent "
            "on its own",
        ),
        granted,
    ),
    Scenario(
        "final",
        (
            "These are final: the Hand must not reconnect with the same credential and hello "
            "until an operator changed something",
        ),
        final,
    ),
)
