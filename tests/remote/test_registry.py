"""Registry rules, one at a time (the stateful test explores their interleavings)."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

import pytest

from mind.remote.model import AckStatus, HandResult, NewTask, TaskState
from mind.remote.registry import Registry
from mind.store.database import Database
from mind.store.models import Task
from mind.store.write_tx import WriteTx
from mind.tools.base import ApprovalBinding, ApprovalSource, DetailMode

HAND = "laptop"
CONVERSATION = "p_remote"


def new_task(tool: str = "echo", background: bool = False) -> NewTask:
    return NewTask(
        conversation_key=CONVERSATION,
        run_id="run_1",
        tool_call_id="call_1",
        hand_name=HAND,
        tool=tool,
        arguments={"text": "hi"},
        detail_mode=DetailMode.TRANSPARENT,
        background=background,
    )


async def test_offer_accept_result_records_each_transition(registry: Registry) -> None:
    task = await registry.create(new_task())
    assert (await registry.accept(task.id, 1, hand_name=HAND)).status is AckStatus.OK
    done = await registry.finish(task.id, 1, HandResult(ok=True, output="hi"), hand_name=HAND)
    assert done.status is AckStatus.OK
    assert done.task is not None and done.task.state is TaskState.SUCCEEDED
    steps = [(t.from_state, t.to_state, t.terminal) for t in await registry.transitions(task.id)]
    assert steps == [
        ("", "offered", False),
        ("offered", "accepted", False),
        ("accepted", "succeeded", True),
    ]


async def test_a_task_keeps_its_binding_across_a_reoffer_and_a_fresh_read(
    registry: Registry,
) -> None:
    binding = ApprovalBinding(ApprovalSource.POLICY, "ab" * 32, "", "rules[1]")
    task = await registry.create(replace(new_task(), approval=binding))
    report = await registry.reoffer(task.id, 1)
    assert report.task is not None and report.task.attempt == 2
    assert report.task.approval == binding
    stored = await registry.get(task.id)
    assert stored is not None and stored.approval == binding
    plain = await registry.create(replace(new_task(), tool_call_id="call_2"))
    assert plain.approval is None
    fresh = await registry.get(plain.id)
    assert fresh is not None and fresh.approval is None


async def test_second_terminal_is_refused(registry: Registry) -> None:
    task = await registry.create(new_task())
    await registry.accept(task.id, 1, hand_name=HAND)
    await registry.finish(task.id, 1, HandResult(ok=True, output="first"), hand_name=HAND)
    again = await registry.finish(task.id, 1, HandResult(ok=False, error="x"), hand_name=HAND)
    late = await registry.time_out(task.id, 1, "run timeout")
    assert again.status is AckStatus.ALREADY_TERMINAL
    assert late.status is AckStatus.ALREADY_TERMINAL
    final = await registry.get(task.id)
    assert final is not None and final.state is TaskState.SUCCEEDED and final.output == "first"
    assert sum(t.terminal for t in await registry.transitions(task.id)) == 1


async def test_stale_attempt_changes_nothing(registry: Registry) -> None:
    task = await registry.create(new_task())
    assert (await registry.reoffer(task.id, 1)).status is AckStatus.OK
    stale = await registry.accept(task.id, 1, hand_name=HAND)
    assert stale.status is AckStatus.STALE
    current = await registry.get(task.id)
    assert current is not None and current.state is TaskState.OFFERED and current.attempt == 2


async def test_report_from_another_hand_is_unknown(registry: Registry) -> None:
    task = await registry.create(new_task())
    report = await registry.accept(task.id, 1, hand_name="intruder")
    missing = await registry.accept("t_missing", 1, hand_name=HAND)
    assert report.status is AckStatus.UNKNOWN_TASK and missing.status is AckStatus.UNKNOWN_TASK
    current = await registry.get(task.id)
    assert current is not None and current.state is TaskState.OFFERED


async def test_result_before_accept_is_invalid(registry: Registry) -> None:
    task = await registry.create(new_task())
    report = await registry.finish(task.id, 1, HandResult(ok=True), hand_name=HAND)
    assert report.status is AckStatus.INVALID
    assert len(await registry.transitions(task.id)) == 1


async def test_cancel_is_recorded_and_first_terminal_wins(registry: Registry) -> None:
    task = await registry.create(new_task())
    await registry.accept(task.id, 1, hand_name=HAND)
    cancel = await registry.request_cancel(task.id, "user stopped the run")
    assert cancel.task is not None and cancel.task.cancel_requested_at is not None
    assert cancel.task.state is TaskState.ACCEPTED
    won = await registry.finish(task.id, 1, HandResult(ok=True, output="done"), hand_name=HAND)
    late = await registry.finish(task.id, 1, HandResult(ok=False, cancelled=True), hand_name=HAND)
    assert won.status is AckStatus.OK and late.status is AckStatus.ALREADY_TERMINAL
    final = await registry.get(task.id)
    assert final is not None and final.state is TaskState.SUCCEEDED


async def test_cancel_of_terminal_task_changes_nothing(registry: Registry) -> None:
    task = await registry.create(new_task())
    await registry.reject(task.id, 1, "not on this device", hand_name=HAND)
    report = await registry.request_cancel(task.id, "late")
    assert report.status is AckStatus.ALREADY_TERMINAL
    final = await registry.get(task.id)
    assert final is not None and final.cancel_requested_at is None
    assert final.state is TaskState.REJECTED and final.error == "not on this device"


async def test_open_tasks_lists_only_unfinished_tasks_of_a_hand(registry: Registry) -> None:
    first = await registry.create(new_task())
    second = await registry.create(new_task())
    await registry.mark_lost(second.id, 1, "gone")
    assert [t.id for t in await registry.open_tasks(HAND)] == [first.id]
    assert await registry.open_tasks("other") == []


async def test_racing_terminals_commit_exactly_one(registry: Registry) -> None:
    task = await registry.create(new_task())
    await registry.accept(task.id, 1, hand_name=HAND)
    reports = await asyncio.gather(
        *(
            registry.finish(task.id, 1, HandResult(ok=True, output=str(i)), hand_name=HAND)
            for i in range(4)
        ),
        registry.time_out(task.id, 1, "run timeout"),
        registry.mark_lost(task.id, 1, "gone"),
    )
    applied = [r for r in reports if r.status is AckStatus.OK]
    assert len(applied) == 1
    assert all(r.status is AckStatus.ALREADY_TERMINAL for r in reports if r not in applied)
    assert sum(t.terminal for t in await registry.transitions(task.id)) == 1


async def test_reports_committed_in_one_group_decide_on_the_stored_task(
    registry: Registry, database: Database, store_backend: str
) -> None:
    """On SQLite, units queued together share one transaction and session: a result right
    behind its `accepted` must see the task accepted, even while another unit of the group
    holds the copy of the task loaded before the accept."""
    if store_backend != "sqlite":
        pytest.skip("group commit is the SQLite writer's")
    task = await registry.create(new_task())
    started, release = threading.Event(), threading.Event()

    def hold(_tx: WriteTx) -> None:
        started.set()
        release.wait(10)

    holding = asyncio.ensure_future(database.write(hold))
    assert await asyncio.to_thread(started.wait, 10)
    earlier = asyncio.ensure_future(database.write(lambda tx: tx.session.get(Task, task.id)))
    accept = asyncio.ensure_future(registry.accept(task.id, 1, hand_name=HAND))
    finish = asyncio.ensure_future(
        registry.finish(task.id, 1, HandResult(ok=True, output="hi"), hand_name=HAND)
    )
    await asyncio.sleep(0)  # all three are queued behind the held writer
    commits = database.stats.commits
    release.set()
    await holding
    assert (await accept).status is AckStatus.OK
    assert (await finish).status is AckStatus.OK
    assert (await earlier) is not None
    assert database.stats.commits == commits + 2  # the held unit, then the other three at once
