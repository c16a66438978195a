"""Reconciliation of a Hand's hello with the Registry (TaskService and Authority, in process)."""

from __future__ import annotations

import asyncio

from remote_harness import CONVERSATION, remote_settings

from mind.remote.authority import Authority
from mind.remote.hub import HandConnection, HandHub, OfferFrame
from mind.remote.model import NewTask, TaskState
from mind.remote.registry import Registry
from mind.remote.taskservice import TaskService
from mind.tools.base import DetailMode


def spec(call_id: str) -> NewTask:
    return NewTask(CONVERSATION, "run_1", call_id, "laptop", "echo", {}, DetailMode.SUMMARY)


async def test_only_tasks_created_before_the_hand_attached_count_as_not_listed(
    registry: Registry,
) -> None:
    hub, settings = HandHub(), remote_settings()
    authority = Authority(registry, hub, settings)
    service = TaskService(registry, authority, hub, settings)
    first = HandConnection("laptop", "laptop", "cred_1", "", {})
    hub.attach(first)
    before = await authority.offer(spec("call_1"))
    second = HandConnection("laptop", "laptop", "cred_1", "", {})
    hub.attach(second)
    # Offered on the new stream while its reconciliation has not read the Registry yet.
    since = await authority.offer(spec("call_2"))
    try:
        assert await service.hand_attached(second, []) == []
        again = await registry.get(before.task_id)
        fresh = await registry.get(since.task_id)
        assert again is not None and (again.state, again.attempt) == (TaskState.OFFERED, 2)
        assert fresh is not None and (fresh.state, fresh.attempt) == (TaskState.OFFERED, 1)
        frames = [await asyncio.wait_for(second.next_frame(), 1) for _ in range(2)]
        offers = [(f.task.id, f.task.attempt) for f in frames if isinstance(f, OfferFrame)]
        assert offers == [(since.task_id, 1), (before.task_id, 2)]
    finally:
        await authority.close()
        await service.close()
