"""The initiative views (`mind.events.action_views`) reach their `tobe.v1` messages and come
back, like the views of `test_view_contracts.py`; a trigger, a oneof on the wire, per kind."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from google.protobuf.message import Message as ProtoMessage
from test_view_contracts import Mapping, _is_set

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
from mind.wire import convert_actions as convert
from tobe.v1 import common_pb2

START = datetime(2026, 12, 3, 10, 11, 12, 345678, tzinfo=UTC)
LATER = START + timedelta(hours=2)

TRIGGERS = {
    TriggerKind.AT: TriggerView(TriggerKind.AT, "Europe/Paris", at=LATER),
    TriggerKind.INTERVAL: TriggerView(
        TriggerKind.INTERVAL, "UTC", every_seconds=3600, start_at=LATER
    ),
    TriggerKind.CRON: TriggerView(TriggerKind.CRON, "Europe/Paris", cron="0 9 * * 1-5"),
    TriggerKind.OBSERVATION: TriggerView(
        TriggerKind.OBSERVATION, "UTC", adapter="webhook", observation_kind="build", match="fail"
    ),
    TriggerKind.MEMORY: TriggerView(TriggerKind.MEMORY, "UTC", memory_key="mood", match="sad"),
}
# The one field of each kind's message that may be left empty, and why it can.
SPARSE_TRIGGERS = [
    TriggerView(TriggerKind.INTERVAL, "UTC", every_seconds=60),
    TriggerView(TriggerKind.OBSERVATION, "UTC"),
    TriggerView(TriggerKind.MEMORY, "UTC", memory_key="mood"),
]
PLAN = (
    PlanStepView(1, "laptop__read_file", "read the log"),
    PlanStepView(2, "send_message", "tell the owner", after=(1,)),
)
FIRING = FiringView(
    id=9,
    schedule_id="sch_1",
    due_at=START,
    claimed_at=START + timedelta(seconds=1),
    outcome=FiringOutcome.SENT,
    run_id="run_1",
    detail="matched",
)
FULL_PENDING = PendingActionView(
    id="act_1",
    conversation_key="p_x",
    title="Remind you",
    goal="remind me to call mum",
    state=PendingState.AMENDED,
    timing=ActionTiming.PLANNED,
    plan=PLAN,
    trigger=TRIGGERS[TriggerKind.AT],
    reason="it messages you later",
    created_at=START,
    expires_at=LATER,
    decided_at=START + timedelta(minutes=1),
    outcome="act_2",
)
FULL_SCHEDULED = ScheduledActionView(
    id="sch_1",
    conversation_key="p_x",
    title="Daily check",
    goal="check the build",
    plan=PLAN,
    trigger=TRIGGERS[TriggerKind.CRON],
    state=ScheduleState.PAUSED,
    next_fire_at=LATER,
    created_at=START,
    firing_count=3,
    last_firing=FIRING,
    catch_up=True,
)

MAPPINGS = {
    "PlanStep": Mapping(
        common_pb2.PlanStep,
        convert.plan_step_to_proto,
        convert.plan_step_from_proto,
        PLAN[1],
        PLAN[0],
    ),
    "PendingAction": Mapping(
        common_pb2.PendingAction,
        convert.pending_action_to_proto,
        convert.pending_action_from_proto,
        FULL_PENDING,
        dataclasses.replace(
            FULL_PENDING,
            state=PendingState.PENDING,
            timing=ActionTiming.IMMEDIATE,
            plan=(),
            trigger=None,
            reason="",
            decided_at=None,
            outcome="",
        ),
    ),
    "Firing": Mapping(
        common_pb2.Firing,
        convert.firing_to_proto,
        convert.firing_from_proto,
        FIRING,
        dataclasses.replace(FIRING, outcome=FiringOutcome.RUNNING, run_id="", detail=""),
    ),
    "ScheduledAction": Mapping(
        common_pb2.ScheduledAction,
        convert.scheduled_action_to_proto,
        convert.scheduled_action_from_proto,
        FULL_SCHEDULED,
        dataclasses.replace(
            FULL_SCHEDULED,
            trigger=TRIGGERS[TriggerKind.OBSERVATION],
            state=ScheduleState.ACTIVE,
            next_fire_at=None,
            firing_count=0,
            last_firing=None,
            catch_up=False,
        ),
    ),
}


@pytest.mark.parametrize("name", MAPPINGS)
def test_every_field_of_an_initiative_message_is_carried_by_its_view(name: str) -> None:
    mapping = MAPPINGS[name]
    carried = {field.name for field in dataclasses.fields(mapping.full)}
    assert carried == set(mapping.proto.DESCRIPTOR.fields_by_name)


@pytest.mark.parametrize("name", MAPPINGS)
def test_an_initiative_view_with_every_field_set_sets_every_field_of_its_message(
    name: str,
) -> None:
    mapping = MAPPINGS[name]
    message = mapping.to_proto(mapping.full)
    assert [f.name for f in message.DESCRIPTOR.fields if not _is_set(message, f)] == []


@pytest.mark.parametrize("name", MAPPINGS)
@pytest.mark.parametrize("variant", ["full", "sparse"])
def test_an_initiative_view_comes_back_equal_from_its_message(name: str, variant: str) -> None:
    mapping = MAPPINGS[name]
    view = getattr(mapping, variant)
    wire = mapping.to_proto(view).SerializeToString()
    assert mapping.from_proto(mapping.proto.FromString(wire)) == view


def _kind_message(message: common_pb2.Trigger) -> ProtoMessage | None:
    kind = message.WhichOneof("kind")
    value = getattr(message, kind) if kind else None
    return value if isinstance(value, ProtoMessage) and kind != "at" else None


@pytest.mark.parametrize("kind", list(TriggerKind))
def test_each_trigger_kind_sets_its_oneof_member_fully_and_comes_back_equal(
    kind: TriggerKind,
) -> None:
    view = TRIGGERS[kind]
    message = convert.trigger_to_proto(view)
    assert message.WhichOneof("kind") == kind.value
    inner = _kind_message(message)
    if inner is not None:
        assert [f.name for f in inner.DESCRIPTOR.fields if not _is_set(inner, f)] == []
    wire = message.SerializeToString()
    assert convert.trigger_from_proto(common_pb2.Trigger.FromString(wire)) == view


@pytest.mark.parametrize("view", SPARSE_TRIGGERS, ids=lambda view: view.kind.value)
def test_a_sparse_trigger_comes_back_equal(view: TriggerView) -> None:
    wire = convert.trigger_to_proto(view).SerializeToString()
    assert convert.trigger_from_proto(common_pb2.Trigger.FromString(wire)) == view


def test_every_trigger_kind_of_the_contract_has_a_view_kind() -> None:
    kinds = {field.name for field in common_pb2.Trigger.DESCRIPTOR.oneofs_by_name["kind"].fields}
    assert kinds == {kind.value for kind in TriggerKind}


def test_a_trigger_naming_no_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="names no kind"):
        convert.trigger_from_proto(common_pb2.Trigger(time_zone="UTC"))


@pytest.mark.parametrize("name", MAPPINGS)
def test_an_initiative_payload_reads_back_into_its_view(name: str) -> None:
    view: Any = MAPPINGS[name].full
    assert type(view).from_payload(view.to_payload()) == view


INITIATIVE_ENUMS: list[tuple[dict[Any, int], Any, Any]] = [
    (convert.TIMINGS, ActionTiming, common_pb2.ActionTiming.DESCRIPTOR),
    (convert.PENDING_STATES, PendingState, common_pb2.PendingActionState.DESCRIPTOR),
    (convert.SCHEDULE_STATES, ScheduleState, common_pb2.ScheduleState.DESCRIPTOR),
    (convert.FIRING_OUTCOMES, FiringOutcome, common_pb2.FiringOutcome.DESCRIPTOR),
]


@pytest.mark.parametrize(
    ("table", "domain", "proto"),
    INITIATIVE_ENUMS,
    ids=[domain.__name__ for _, domain, _ in INITIATIVE_ENUMS],
)
def test_each_initiative_word_has_one_contract_value_and_back(
    table: dict[Any, int], domain: Any, proto: Any
) -> None:
    assert set(domain) <= set(table)
    assert len(set(table.values())) == len(table)
    named = {value.number for value in proto.values if not value.name.endswith("_UNSPECIFIED")}
    assert named == set(table.values())
