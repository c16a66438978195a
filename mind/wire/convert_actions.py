"""Initiative views (`mind.events.action_views`) ↔ `tobe.v1` messages, one pair per view, like
`mind.wire.convert` (proved both ways by `tests/contracts/test_view_contracts.py`)."""

from __future__ import annotations

from mind.errors import InvalidInput
from mind.events.action_views import (
    ActionTiming,
    FiringOutcome,
    FiringView,
    PendingActionView,
    PendingState,
    PlanStepView,
    ScheduledActionView,
    ScheduleState,
    TriggerKind,
    TriggerView,
)
from mind.scheduler.records import Change
from tobe.runtime.timestamps import from_timestamp, optional_moment, to_timestamp
from tobe.v1 import common_pb2

TIMINGS: dict[ActionTiming, common_pb2.ActionTiming.ValueType] = {
    ActionTiming.IMMEDIATE: common_pb2.ACTION_TIMING_IMMEDIATE,
    ActionTiming.PLANNED: common_pb2.ACTION_TIMING_PLANNED,
}
PENDING_STATES: dict[PendingState, common_pb2.PendingActionState.ValueType] = {
    PendingState.PENDING: common_pb2.PENDING_ACTION_STATE_PENDING,
    PendingState.CONFIRMED: common_pb2.PENDING_ACTION_STATE_CONFIRMED,
    PendingState.CANCELLED: common_pb2.PENDING_ACTION_STATE_CANCELLED,
    PendingState.AMENDED: common_pb2.PENDING_ACTION_STATE_AMENDED,
    PendingState.EXPIRED: common_pb2.PENDING_ACTION_STATE_EXPIRED,
}
SCHEDULE_STATES: dict[ScheduleState, common_pb2.ScheduleState.ValueType] = {
    ScheduleState.ACTIVE: common_pb2.SCHEDULE_STATE_ACTIVE,
    ScheduleState.PAUSED: common_pb2.SCHEDULE_STATE_PAUSED,
    ScheduleState.FINISHED: common_pb2.SCHEDULE_STATE_FINISHED,
    ScheduleState.DELETED: common_pb2.SCHEDULE_STATE_DELETED,
}
FIRING_OUTCOMES: dict[FiringOutcome, common_pb2.FiringOutcome.ValueType] = {
    FiringOutcome.RUNNING: common_pb2.FIRING_OUTCOME_RUNNING,
    FiringOutcome.SENT: common_pb2.FIRING_OUTCOME_SENT,
    FiringOutcome.SKIPPED: common_pb2.FIRING_OUTCOME_SKIPPED,
    FiringOutcome.FAILED: common_pb2.FIRING_OUTCOME_FAILED,
    FiringOutcome.ABORTED: common_pb2.FIRING_OUTCOME_ABORTED,
}
_TIMINGS_BACK = {value: key for key, value in TIMINGS.items()}
_PENDING_BACK = {value: key for key, value in PENDING_STATES.items()}
_SCHEDULE_BACK = {value: key for key, value in SCHEDULE_STATES.items()}
_FIRING_BACK = {value: key for key, value in FIRING_OUTCOMES.items()}


def plan_step_to_proto(view: PlanStepView) -> common_pb2.PlanStep:
    return common_pb2.PlanStep(
        order=view.order, action=view.action, purpose=view.purpose, after=list(view.after)
    )


def plan_step_from_proto(message: common_pb2.PlanStep) -> PlanStepView:
    return PlanStepView(message.order, message.action, message.purpose, tuple(message.after))


def trigger_to_proto(view: TriggerView) -> common_pb2.Trigger:
    message = common_pb2.Trigger(time_zone=view.time_zone)
    match view.kind:
        case TriggerKind.AT:
            assert view.at is not None
            message.at.CopyFrom(to_timestamp(view.at))
        case TriggerKind.INTERVAL:
            message.interval.CopyFrom(
                common_pb2.IntervalTrigger(
                    every_seconds=view.every_seconds, start_at=to_timestamp(view.start_at)
                )
            )
        case TriggerKind.CRON:
            message.cron.CopyFrom(common_pb2.CronTrigger(expression=view.cron))
        case TriggerKind.OBSERVATION:
            message.observation.CopyFrom(
                common_pb2.ObservationCondition(
                    adapter=view.adapter, kind=view.observation_kind, match=view.match
                )
            )
        case TriggerKind.MEMORY:
            message.memory.CopyFrom(
                common_pb2.MemoryCondition(key=view.memory_key, match=view.match)
            )
    return message


def trigger_from_proto(message: common_pb2.Trigger) -> TriggerView:
    zone = message.time_zone
    match message.WhichOneof("kind"):
        case "at":
            return TriggerView(TriggerKind.AT, zone, at=from_timestamp(message.at))
        case "interval":
            return TriggerView(
                TriggerKind.INTERVAL,
                zone,
                every_seconds=message.interval.every_seconds,
                start_at=optional_moment(message.interval, "start_at"),
            )
        case "cron":
            return TriggerView(TriggerKind.CRON, zone, cron=message.cron.expression)
        case "observation":
            condition = message.observation
            return TriggerView(
                TriggerKind.OBSERVATION,
                zone,
                adapter=condition.adapter,
                observation_kind=condition.kind,
                match=condition.match,
            )
        case "memory":
            return TriggerView(
                TriggerKind.MEMORY, zone, memory_key=message.memory.key, match=message.memory.match
            )
    raise ValueError("a trigger names no kind (at, interval, cron, observation or memory)")


def pending_action_to_proto(view: PendingActionView) -> common_pb2.PendingAction:
    return common_pb2.PendingAction(
        id=view.id,
        conversation_key=view.conversation_key,
        title=view.title,
        goal=view.goal,
        state=PENDING_STATES[view.state],
        timing=TIMINGS[view.timing],
        plan=[plan_step_to_proto(step) for step in view.plan],
        trigger=trigger_to_proto(view.trigger) if view.trigger is not None else None,
        reason=view.reason,
        created_at=to_timestamp(view.created_at),
        expires_at=to_timestamp(view.expires_at),
        decided_at=to_timestamp(view.decided_at),
        outcome=view.outcome,
    )


def pending_action_from_proto(message: common_pb2.PendingAction) -> PendingActionView:
    return PendingActionView(
        id=message.id,
        conversation_key=message.conversation_key,
        title=message.title,
        goal=message.goal,
        state=_PENDING_BACK[message.state],
        timing=_TIMINGS_BACK[message.timing],
        plan=tuple(plan_step_from_proto(step) for step in message.plan),
        trigger=trigger_from_proto(message.trigger) if message.HasField("trigger") else None,
        reason=message.reason,
        created_at=from_timestamp(message.created_at),
        expires_at=from_timestamp(message.expires_at),
        decided_at=optional_moment(message, "decided_at"),
        outcome=message.outcome,
    )


def firing_to_proto(view: FiringView) -> common_pb2.Firing:
    return common_pb2.Firing(
        id=view.id,
        schedule_id=view.schedule_id,
        due_at=to_timestamp(view.due_at),
        claimed_at=to_timestamp(view.claimed_at),
        outcome=FIRING_OUTCOMES[view.outcome],
        run_id=view.run_id,
        detail=view.detail,
    )


def firing_from_proto(message: common_pb2.Firing) -> FiringView:
    return FiringView(
        id=message.id,
        schedule_id=message.schedule_id,
        due_at=from_timestamp(message.due_at),
        claimed_at=from_timestamp(message.claimed_at),
        outcome=_FIRING_BACK[message.outcome],
        run_id=message.run_id,
        detail=message.detail,
    )


def scheduled_action_to_proto(view: ScheduledActionView) -> common_pb2.ScheduledAction:
    return common_pb2.ScheduledAction(
        id=view.id,
        conversation_key=view.conversation_key,
        title=view.title,
        goal=view.goal,
        plan=[plan_step_to_proto(step) for step in view.plan],
        trigger=trigger_to_proto(view.trigger),
        state=SCHEDULE_STATES[view.state],
        next_fire_at=to_timestamp(view.next_fire_at),
        created_at=to_timestamp(view.created_at),
        firing_count=view.firing_count,
        last_firing=firing_to_proto(view.last_firing) if view.last_firing else None,
        catch_up=view.catch_up,
    )


def scheduled_action_from_proto(message: common_pb2.ScheduledAction) -> ScheduledActionView:
    return ScheduledActionView(
        id=message.id,
        conversation_key=message.conversation_key,
        title=message.title,
        goal=message.goal,
        plan=tuple(plan_step_from_proto(step) for step in message.plan),
        trigger=trigger_from_proto(message.trigger),
        state=_SCHEDULE_BACK[message.state],
        next_fire_at=optional_moment(message, "next_fire_at"),
        created_at=from_timestamp(message.created_at),
        firing_count=message.firing_count,
        last_firing=(
            firing_from_proto(message.last_firing) if message.HasField("last_firing") else None
        ),
        catch_up=message.catch_up,
    )


SCHEDULE_CHANGES: dict[common_pb2.ScheduleChange.ValueType, Change] = {
    common_pb2.SCHEDULE_CHANGE_PAUSE: "pause",
    common_pb2.SCHEDULE_CHANGE_RESUME: "resume",
    common_pb2.SCHEDULE_CHANGE_DELETE: "delete",
}


def schedule_change(change: common_pb2.ScheduleChange.ValueType) -> Change:
    """The change a request names; InvalidInput for UNSPECIFIED or an unknown value."""
    if change not in SCHEDULE_CHANGES:
        raise InvalidInput("name the change: pause, resume or delete")
    return SCHEDULE_CHANGES[change]
