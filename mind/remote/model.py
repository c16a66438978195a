"""Domain types of remote execution: task states, report outcomes, reconciliation verdicts.

Nothing here knows about gRPC; the HandLink servicer converts these to and from `tobe.v1`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from mind.conversation.images import ImageUpload
from mind.tools.base import ApprovalBinding, DetailMode, Effect


class TaskState(StrEnum):
    OFFERED = "offered"
    ACCEPTED = "accepted"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"
    LOST = "lost"

    @property
    def terminal(self) -> bool:
        return self not in (TaskState.OFFERED, TaskState.ACCEPTED)


class AckStatus(StrEnum):
    OK = "ok"
    # The report names an attempt that is not the task's current one.
    STALE = "stale"
    ALREADY_TERMINAL = "already_terminal"
    # No such task, or it was offered to another Hand.
    UNKNOWN_TASK = "unknown_task"
    # The report does not fit the task's state (e.g. a result before accepted).
    INVALID = "invalid"


class ReportKind(StrEnum):
    """The kind of Hand report an ack answers."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    PROGRESS = "progress"
    RESULT = "result"


class ReconcileAction(StrEnum):
    KEEP_RUNNING = "keep_running"
    DROP = "drop"
    RESEND_RESULT = "resend_result"


class HeldState(StrEnum):
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(frozen=True)
class ToolDecl:
    """A tool as a Hand declared it."""

    name: str
    description: str
    parameters: dict[str, Any]
    effect: Effect
    # Calls start as background tasks: the call returns at once, the result arrives later.
    background: bool = False
    # What a person approves, over the arguments (`ToolSpec.decision_template`); "" = default.
    decision_template: str = ""
    # Reads someone's personal data (`ToolSpec.sensitive`): a turn calling it is sealed
    # (`mind.sealing`) under `dataset` (`ToolSpec.dataset`; "" = the tool's name).
    sensitive: bool = False
    dataset: str = ""


@dataclass(frozen=True)
class NewTask:
    """What the Mind asks a Hand to run."""

    conversation_key: str
    run_id: str
    tool_call_id: str
    hand_name: str
    tool: str
    arguments: dict[str, Any]
    detail_mode: DetailMode
    background: bool = False
    # What allowed the call; sent with every offer (and re-offer) of its task.
    approval: ApprovalBinding | None = None


@dataclass(frozen=True)
class TaskRecord:
    """A committed snapshot of one task row (with its remote run's context)."""

    id: str
    remote_run_id: str
    conversation_key: str
    run_id: str
    tool_call_id: str
    hand_name: str
    tool: str
    attempt: int
    state: TaskState
    arguments: dict[str, Any]
    approval: ApprovalBinding | None
    detail_mode: DetailMode
    background: bool
    cancel_requested_at: datetime | None
    cancel_reason: str
    output: str
    error: str
    created_at: datetime
    updated_at: datetime
    # Its sealed turn ended (`mind.sealing`): `arguments` are gone, it must not be offered.
    arguments_removed: bool = False
    # References (`{digest, media_type, size_bytes}`) of the images its result carried; the
    # bytes are in `media`, stored in the unit that recorded the result.
    images: tuple[dict[str, Any], ...] = ()

    @property
    def terminal(self) -> bool:
        return self.state.terminal


@dataclass(frozen=True)
class Report:
    """The Registry's answer to one report or Mind-side transition request."""

    status: AckStatus
    task: TaskRecord | None
    message: str = ""

    @property
    def applied(self) -> bool:
        return self.status is AckStatus.OK


@dataclass(frozen=True)
class HandResult:
    ok: bool
    output: str = ""
    error: str = ""
    cancelled: bool = False
    # As the Hand sent them, not checked yet (`Authority.result` checks them).
    images: tuple[ImageUpload, ...] = ()

    @property
    def state(self) -> TaskState:
        if self.ok:
            return TaskState.SUCCEEDED
        return TaskState.CANCELLED if self.cancelled else TaskState.FAILED


@dataclass(frozen=True)
class ImageLimits:
    """How many images a result may carry and how large each may be: the limits a person's
    message has (`mind.max_images`, `mind.max_image_bytes`)."""

    max_bytes: int
    max_count: int


@dataclass(frozen=True)
class HeldTask:
    task_id: str
    attempt: int
    state: HeldState


@dataclass(frozen=True)
class ReconcileVerdict:
    task_id: str
    attempt: int
    action: ReconcileAction


@dataclass(frozen=True)
class Transition:
    task_id: str
    attempt: int
    from_state: str
    to_state: str
    terminal: bool
    detail: str = ""
    created_at: datetime | None = field(default=None, compare=False)
