"""The Mind's frames to a Hand as protos: offers (with their approval binding), cancels, acks,
pings and reconcile verdicts; batched into one message, and a Hand's batch taken apart, for a
Hand granted batches."""

from __future__ import annotations

import json
import time

from mind.remote.hub import AckFrame, CancelFrame, OfferFrame, Outbound, PingFrame
from mind.remote.model import AckStatus, ReconcileAction, ReconcileVerdict, ReportKind
from mind.tools.base import ApprovalBinding, ApprovalSource
from tobe.v1 import hand_pb2

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


def ms(seconds: float) -> int:
    """Seconds as the whole milliseconds the protos carry."""
    return int(seconds * 1000)


def binding_to_proto(binding: ApprovalBinding) -> hand_pb2.ApprovalBinding:
    return hand_pb2.ApprovalBinding(
        approval_id=binding.approval_id,
        arguments_digest=binding.arguments_digest,
        source=_SOURCES[binding.source],
        detail=binding.detail,
    )


def batched(frames: list[Outbound]) -> hand_pb2.AttachResponse:
    """Frames as one message: the first, with the others in its `more`."""
    first, *others = frames
    response = to_proto(first)
    response.more.extend(to_proto(frame) for frame in others)
    return response


def unbatched(frame: hand_pb2.AttachRequest) -> list[hand_pb2.AttachRequest]:
    """A Hand's message as the frames it carries, in order (see "Batches" in hand.proto)."""
    if not frame.more:
        return [frame]
    return [frame, *frame.more]


def to_proto(frame: Outbound) -> hand_pb2.AttachResponse:
    match frame:
        case OfferFrame(task=task):
            offer = hand_pb2.TaskOffer(
                task_id=task.id,
                attempt=task.attempt,
                tool=task.tool,
                arguments_json=json.dumps(task.arguments, ensure_ascii=False),
                accept_timeout_ms=ms(frame.accept_timeout),
                run_timeout_ms=ms(frame.run_timeout),
                conversation_key=task.conversation_key,
                trace_context=frame.trace_context,
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
