"""Model-based test of the task Registry (with the Authority and TaskService around it).

Hypothesis drives random interleavings of offer, accept, reject, progress, result, cancel,
timeout, disconnect, grace expiry and reconnect (with arbitrary held-task claims) against a
real store, plus a fault where the store commits but the caller sees an error and retries.
After every step: at most one terminal per task, the terminal is the last transition, the
Registry agrees with a simple model, and refused reports changed nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mind.remote.authority import Authority
from mind.remote.hub import HandConnection, HandHub
from mind.remote.model import (
    AckStatus,
    HandResult,
    HeldState,
    HeldTask,
    NewTask,
    ReconcileAction,
    TaskState,
)
from mind.remote.registry import Registry
from mind.remote.taskservice import TaskService
from mind.store.database import Database
from mind.store.group_writer import GroupWriter
from mind.store.models import Conversation, Task, TaskTransition
from mind.store.pool_writer import PoolWriter
from mind.tools.base import DetailMode
from tobe.config import RemoteSettings

HAND, OTHER = "laptop", "intruder"
OPEN = (TaskState.OFFERED, TaskState.ACCEPTED)
# Mind-side timers never fire on their own here: the test decides when a timeout happens.
SETTINGS = RemoteSettings(
    accept_timeout=3600, run_timeout=3600, heartbeat_timeout=3600, lost_grace=3600
)


_fault = {"armed": False}


def _failing_after(commit: Callable[..., Any]) -> Callable[..., Any]:
    """A writer's commit that, once armed, succeeds in the database but then raises."""

    def commit_then_fail(self: Any, *args: Any) -> Any:
        result = commit(self, *args)
        if _fault["armed"]:
            _fault["armed"] = False
            raise ConnectionError("connection lost after the commit")
        return result

    return commit_then_fail


@dataclass
class ModelTask:
    state: TaskState = TaskState.OFFERED
    attempt: int = 1


def expected(
    model: ModelTask, hand: str, attempt: int, allowed: tuple[TaskState, ...]
) -> AckStatus:
    if hand != HAND:
        return AckStatus.UNKNOWN_TASK
    if model.state.terminal:
        return AckStatus.ALREADY_TERMINAL
    if attempt != model.attempt:
        return AckStatus.STALE
    if model.state not in allowed:
        return AckStatus.INVALID
    return AckStatus.OK


class Store:
    """One SQLite file (or PostgreSQL database) shared by every example of a test run."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.database = Database.open(url)
        conversation = Conversation(key="p_model", owner="alice")
        self.run(self.database.write(lambda tx: tx.session.add(conversation)))

    def run(self, awaitable):
        return self.loop.run_until_complete(awaitable)

    def close(self) -> None:
        self.run(self.database.close())
        self.loop.close()


tasks_strategy = st.integers(min_value=0, max_value=7)
attempt_shift = st.sampled_from([0, 0, 0, -1, 1])
hands = st.sampled_from([HAND, HAND, HAND, OTHER])


class RegistryMachine(RuleBasedStateMachine):
    store: Store

    @initialize()
    def setup(self) -> None:
        self.registry = Registry(self.store.database)
        self.hub = HandHub()
        self.authority = Authority(self.registry, self.hub, SETTINGS)
        self.service = TaskService(self.registry, self.authority, self.hub, SETTINGS)
        self.connection = self._connect()
        self.ids: list[str] = []
        self.model: dict[str, ModelTask] = {}

    def teardown(self) -> None:
        if hasattr(self, "authority"):
            self.store.run(self.authority.close())
            self.store.run(self.service.close())

    def _connect(self) -> HandConnection:
        connection = HandConnection(HAND, "laptop", "cred_1", "", {})
        self.hub.attach(connection)
        return connection

    def _pick(self, index: int) -> tuple[str, ModelTask]:
        task_id = self.ids[index % len(self.ids)]
        return task_id, self.model[task_id]

    def _check(self, status: AckStatus, want: AckStatus, task_id: str, before: int) -> None:
        assert status is want, f"{task_id}: got {status}, model says {want}"
        if status is not AckStatus.OK:
            assert self._transition_count(task_id) == before, "a refused report changed state"

    def _transition_count(self, task_id: str) -> int:
        query = select(func.count()).where(TaskTransition.task_id == task_id)
        return self.store.run(
            self.store.database.read(lambda session: session.execute(query).scalar_one())
        )

    # -- rules ----------------------------------------------------------------------------

    @rule()
    def offer(self) -> None:
        spec = NewTask(
            "p_model", "run", f"call_{len(self.ids)}", HAND, "echo", {"n": 1}, DetailMode.SUMMARY
        )
        record = self.store.run(self.registry.create(spec))
        self.ids.append(record.id)
        self.model[record.id] = ModelTask()

    @precondition(lambda self: self.ids)
    @rule(index=tasks_strategy, shift=attempt_shift, hand=hands)
    def accept(self, index: int, shift: int, hand: str) -> None:
        task_id, model = self._pick(index)
        attempt, before = model.attempt + shift, self._transition_count(task_id)
        want = expected(model, hand, attempt, (TaskState.OFFERED,))
        report = self.store.run(self.registry.accept(task_id, attempt, hand_name=hand))
        self._check(report.status, want, task_id, before)
        if want is AckStatus.OK:
            model.state = TaskState.ACCEPTED

    @precondition(lambda self: self.ids)
    @rule(index=tasks_strategy, shift=attempt_shift, hand=hands)
    def reject(self, index: int, shift: int, hand: str) -> None:
        task_id, model = self._pick(index)
        attempt, before = model.attempt + shift, self._transition_count(task_id)
        want = expected(model, hand, attempt, (TaskState.OFFERED,))
        report = self.store.run(self.registry.reject(task_id, attempt, "no", hand_name=hand))
        self._check(report.status, want, task_id, before)
        if want is AckStatus.OK:
            model.state = TaskState.REJECTED

    @precondition(lambda self: self.ids)
    @rule(index=tasks_strategy, shift=attempt_shift, hand=hands)
    def progress(self, index: int, shift: int, hand: str) -> None:
        task_id, model = self._pick(index)
        attempt, before = model.attempt + shift, self._transition_count(task_id)
        want = expected(model, hand, attempt, (TaskState.ACCEPTED,))
        report = self.store.run(self.registry.check_progress(task_id, attempt, hand_name=hand))
        assert report.status is want
        assert self._transition_count(task_id) == before, "progress is not a transition"

    @precondition(lambda self: self.ids)
    @rule(
        index=tasks_strategy,
        shift=attempt_shift,
        hand=hands,
        outcome=st.sampled_from(["ok", "failed", "cancelled"]),
    )
    def result(self, index: int, shift: int, hand: str, outcome: str) -> None:
        task_id, model = self._pick(index)
        attempt, before = model.attempt + shift, self._transition_count(task_id)
        result = HandResult(ok=outcome == "ok", cancelled=outcome == "cancelled")
        want = expected(model, hand, attempt, (TaskState.ACCEPTED,))
        report = self.store.run(self.registry.finish(task_id, attempt, result, hand_name=hand))
        self._check(report.status, want, task_id, before)
        if want is AckStatus.OK:
            model.state = result.state

    @precondition(lambda self: self.ids)
    @rule(index=tasks_strategy)
    def cancel(self, index: int) -> None:
        task_id, model = self._pick(index)
        report = self.store.run(self.authority.cancel(task_id, "stop"))
        want = AckStatus.ALREADY_TERMINAL if model.state.terminal else AckStatus.OK
        assert report.status is want
        assert report.task is not None and report.task.state is model.state

    @precondition(lambda self: self.ids)
    @rule(index=tasks_strategy, shift=attempt_shift)
    def timeout(self, index: int, shift: int) -> None:
        task_id, model = self._pick(index)
        attempt, before = model.attempt + shift, self._transition_count(task_id)
        want = expected(model, HAND, attempt, OPEN)
        report = self.store.run(self.registry.time_out(task_id, attempt, "timeout"))
        self._check(report.status, want, task_id, before)
        if want is AckStatus.OK:
            model.state = TaskState.TIMED_OUT

    @precondition(lambda self: self.connection is not None)
    @rule()
    def disconnect(self) -> None:
        assert self.connection is not None
        self.hub.detach(self.connection)
        self.connection = None

    @precondition(lambda self: self.connection is None)
    @rule()
    def grace_expires(self) -> None:
        self.store.run(self.service.expire_hand(HAND))
        for model in self.model.values():
            if not model.state.terminal:
                model.state = TaskState.LOST

    @precondition(lambda self: self.connection is None)
    @rule(
        claims=st.lists(
            st.tuples(tasks_strategy, attempt_shift, st.sampled_from(list(HeldState))),
            max_size=4,
            unique_by=lambda claim: claim[0],
        )
    )
    def reconnect(self, claims: list[tuple[int, int, HeldState]]) -> None:
        held = []
        for index, shift, state in claims if self.ids else []:
            task_id, model = self._pick(index)
            if any(h.task_id == task_id for h in held):
                continue
            held.append(HeldTask(task_id, model.attempt + shift, state))
        self.connection = self._connect()
        verdicts = self.store.run(self.service.hand_attached(self.connection, held))
        assert [v.task_id for v in verdicts] == [h.task_id for h in held]
        for claim, verdict in zip(held, verdicts, strict=True):
            model = self.model[claim.task_id]
            if model.state.terminal or claim.attempt != model.attempt:
                assert verdict.action is ReconcileAction.DROP
                continue
            model.state = TaskState.ACCEPTED  # an unrecorded accept is recorded now
            want = (
                ReconcileAction.RESEND_RESULT
                if claim.state is HeldState.FINISHED
                else ReconcileAction.KEEP_RUNNING
            )
            assert verdict.action is want
        listed = {h.task_id for h in held}
        for task_id, model in self.model.items():
            if task_id in listed or model.state.terminal:
                continue
            if model.state is TaskState.OFFERED:
                model.attempt += 1
            else:
                model.state = TaskState.LOST

    @precondition(lambda self: self.ids)
    @rule(index=tasks_strategy, outcome=st.sampled_from(["ok", "failed"]))
    def result_committed_but_caller_saw_an_error(self, index: int, outcome: str) -> None:
        task_id, model = self._pick(index)
        result = HandResult(ok=outcome == "ok", error="" if outcome == "ok" else "boom")
        want = expected(model, HAND, model.attempt, (TaskState.ACCEPTED,))
        _fault["armed"] = True
        try:
            report = self.store.run(
                self.registry.finish(task_id, model.attempt, result, hand_name=HAND)
            )
        except ConnectionError:
            # The caller cannot tell whether it committed: it retries the same report.
            report = None
        finally:
            _fault["armed"] = False
        if want is AckStatus.OK:
            assert report is None, "the commit fault should have reached the caller"
            model.state = result.state
        if report is None:
            report = self.store.run(
                self.registry.finish(task_id, model.attempt, result, hand_name=HAND)
            )
            if want is AckStatus.OK:
                want = AckStatus.ALREADY_TERMINAL
        assert report.status is want
        if want is AckStatus.ALREADY_TERMINAL:
            assert report.task is not None and report.task.state is model.state

    # -- invariants -----------------------------------------------------------------------

    @invariant()
    def registry_matches_the_model_and_has_one_terminal_at_most(self) -> None:
        if not getattr(self, "ids", None):
            return

        def load(session: Session) -> tuple[dict[str, Task], list[TaskTransition]]:
            rows = session.scalars(select(Task).where(Task.id.in_(self.ids)))
            steps = session.scalars(
                select(TaskTransition)
                .where(TaskTransition.task_id.in_(self.ids))
                .order_by(TaskTransition.id)
            )
            return {t.id: t for t in rows}, list(steps)

        tasks, steps = self.store.run(self.store.database.read(load))
        for task_id, model in self.model.items():
            task = tasks[task_id]
            assert (task.state, task.attempt) == (model.state.value, model.attempt), task_id
            mine = [s for s in steps if s.task_id == task_id]
            terminals = [s for s in mine if s.terminal]
            assert len(terminals) <= 1, f"{task_id} has {len(terminals)} terminals"
            if model.state.terminal:
                assert terminals and terminals[0].to_state == task.state
                assert mine[-1] is terminals[0], "a transition followed the terminal"
            else:
                assert not terminals
            assert mine[-1].to_state == task.state and mine[-1].attempt == task.attempt


@pytest.fixture
def model_store(store_url: str, monkeypatch: pytest.MonkeyPatch):
    # On either writer: the fault is armed only around one write, and reaches its caller.
    for writer in (GroupWriter, PoolWriter):
        monkeypatch.setattr(writer, "_commit", _failing_after(writer._commit))
    store = Store(store_url)
    try:
        yield store
    finally:
        store.close()


def test_registry_keeps_one_terminal_under_random_interleavings(model_store: Store) -> None:
    RegistryMachine.store = model_store
    run_state_machine_as_test(
        RegistryMachine,
        settings=settings(
            max_examples=30,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
