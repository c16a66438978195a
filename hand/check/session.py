"""What scenarios share: the current stream, fresh task ids, and the moves of a scripted Mind
(offer, ack, wait for a report, force a reconnect), each failing with what the Hand did."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

import grpc

from hand.check.link import ACCEPT_TIMEOUT, ScriptedLink, Stream
from tobe.v1 import hand_pb2

# A reconnect after a retryable ending comes after about 1 s of backoff.
RECONNECT_WAIT = 8.0
# How long a report may take when nothing delays it on the Hand's side.
PROMPT = 5.0

KINDS = {
    "accepted": hand_pb2.REPORT_KIND_ACCEPTED,
    "rejected": hand_pb2.REPORT_KIND_REJECTED,
    "progress": hand_pb2.REPORT_KIND_PROGRESS,
    "result": hand_pb2.REPORT_KIND_RESULT,
}


class Failure(Exception):
    """A scenario failed; the message says what the Hand did."""


def kind(frame: hand_pb2.AttachRequest) -> str:
    return frame.WhichOneof("frame") or "nothing"


def describe(frame: hand_pb2.AttachRequest) -> str:
    """A report in one line, for failure messages."""
    report = getattr(frame, kind(frame))
    fields = str(report).replace("\n", ", ").strip(", ")
    return f"{kind(frame)} {{{fields}}} seq={frame.seq}"


@dataclass
class Session:
    link: ScriptedLink
    stream: Stream
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def task_id(self, label: str) -> str:
        """A task id never used before in this run."""
        return f"check-{label}-{next(self._ids)}"

    async def live(self) -> Stream:
        """The current stream, waiting for the Hand to reconnect when it has ended."""
        if self.stream.closed.is_set():
            await self.reconnected()
        return self.stream

    async def reconnected(self) -> Stream:
        """The next stream the Hand opens; fails when none comes within RECONNECT_WAIT."""
        try:
            self.stream = await asyncio.wait_for(self.link.streams.get(), RECONNECT_WAIT)
        except TimeoutError:
            raise Failure(
                f"the Hand did not reconnect within {RECONNECT_WAIT:g} s after a retryable "
                "ending (UNAVAILABLE)"
            ) from None
        if self.stream.extra_hellos:
            raise Failure("the Hand sent a second hello on a stream")
        return self.stream

    async def force_reconnect(self) -> Stream:
        """End the stream with UNAVAILABLE and return the Hand's next one."""
        self.stream.end(grpc.StatusCode.UNAVAILABLE, "the check forces a reconnect")
        await self.stream.closed.wait()
        return await self.reconnected()

    def offer(
        self,
        task_id: str,
        tool: str,
        arguments_json: str,
        *,
        attempt: int = 1,
        approval: hand_pb2.ApprovalBinding | None = None,
    ) -> None:
        offer = _offer(task_id, tool, arguments_json, attempt)
        if approval is not None:
            offer.approval.CopyFrom(approval)
        self.stream.send(hand_pb2.AttachResponse(offer=offer))

    def offer_batch(self, offers: list[tuple[str, str, str]]) -> None:
        """Offers `(task_id, tool, arguments_json)` sent as one message (for a Hand granted
        batches): the first, with the others in its `more`."""
        first, *others = (hand_pb2.AttachResponse(offer=_offer(*offer, 1)) for offer in offers)
        first.more.extend(others)
        self.stream.send(first)

    def ack(
        self, frame: hand_pb2.AttachRequest, status: hand_pb2.AckStatus.ValueType | None = None
    ) -> None:
        report = getattr(frame, kind(frame))
        self.stream.send(
            hand_pb2.AttachResponse(
                ack=hand_pb2.ReportAck(
                    task_id=report.task_id,
                    attempt=report.attempt,
                    status=hand_pb2.ACK_STATUS_OK if status is None else status,
                    kind=KINDS[kind(frame)],
                    seq=frame.seq,
                )
            )
        )

    def cancel(self, task_id: str, attempt: int) -> None:
        self.stream.send(
            hand_pb2.AttachResponse(
                cancel=hand_pb2.TaskCancel(task_id=task_id, attempt=attempt, reason="check")
            )
        )

    async def report(
        self, task_id: str, waiting_for: str, timeout: float = PROMPT
    ) -> hand_pb2.AttachRequest:
        """The task's next report on the current stream; fails saying what was awaited."""
        frame = await self.stream.next_report(task_id, timeout)
        if frame is None:
            if self.stream.closed.is_set():
                raise Failure(f"the stream ended while the check waited for the {waiting_for}")
            raise Failure(f"no {waiting_for} for {task_id} within {timeout:g} s")
        return frame

    async def answer(self, task_id: str, attempt: int = 1) -> hand_pb2.AttachRequest:
        """The accepted or rejected answering an offer, acked; fails on any other report."""
        frame = await self.report(task_id, "accepted or rejected", ACCEPT_TIMEOUT)
        if kind(frame) not in ("accepted", "rejected"):
            raise Failure(f"the first report after the offer was {describe(frame)}")
        if getattr(frame, kind(frame)).attempt != attempt:
            raise Failure(f"the answer names another attempt: {describe(frame)}")
        self.ack(frame)
        return frame

    async def accepted(self, task_id: str, attempt: int = 1) -> hand_pb2.AttachRequest:
        frame = await self.answer(task_id, attempt)
        if kind(frame) != "accepted":
            raise Failure(f"the Hand rejected the offer: {frame.rejected.reason!r}")
        return frame

    async def until_result(
        self, task_id: str, timeout: float = PROMPT, *, ack_result: bool = True
    ) -> tuple[list[hand_pb2.AttachRequest], hand_pb2.TaskResult]:
        """Every report up to and including the result, each acked OK (the result only with
        `ack_result`)."""
        seen: list[hand_pb2.AttachRequest] = []
        while True:
            frame = await self.report(task_id, "result", timeout)
            seen.append(frame)
            if kind(frame) == "result":
                if ack_result:
                    self.ack(frame)
                return seen, frame.result
            if kind(frame) != "progress":
                raise Failure(f"a report other than progress before the result: {describe(frame)}")
            self.ack(frame)

    async def nothing_more(self, task_id: str, seconds: float, after: str) -> None:
        """Fails when the task gets any report within `seconds`."""
        frame = await self.stream.next_report(task_id, seconds)
        if frame is not None:
            raise Failure(f"{after}, the Hand still sent {describe(frame)}")


def _offer(task_id: str, tool: str, arguments_json: str, attempt: int) -> hand_pb2.TaskOffer:
    return hand_pb2.TaskOffer(
        task_id=task_id,
        attempt=attempt,
        tool=tool,
        arguments_json=arguments_json,
        accept_timeout_ms=int(ACCEPT_TIMEOUT * 1000),
        run_timeout_ms=60_000,
        conversation_key="check",
    )
