"""Run rows: start, terminal, and the terminals of tool calls a run leaves behind."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from mind.conversation import delegations
from mind.events.payloads import projection_view, run_view
from mind.events.views import RunState
from mind.sealing import turns as sealed_turns
from mind.store import models
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode

_RUN = select(models.Run.__table__).where(models.Run.id == bindparam("run_id"))
_RUNNING_CALLS = select(models.ToolProjection.__table__).where(
    models.ToolProjection.run_id == bindparam("run_id"),
    models.ToolProjection.status == "running",
)
_OPEN_CALLS = select(models.ToolProjection.__table__).where(
    models.ToolProjection.conversation_key == bindparam("key"),
    models.ToolProjection.status == "running",
)
_CANCEL_CALL = (
    update(models.ToolProjection)
    .where(
        models.ToolProjection.tool_call_id == bindparam("tool_call_id"),
        models.ToolProjection.status == "running",
    )
    .values(status="cancelled", result_summary=bindparam("summary"), finished_at=bindparam("now"))
)
_END_RUN = (
    update(models.Run)
    .where(models.Run.id == bindparam("run_id"))
    .values(
        state=bindparam("state"),
        reason=bindparam("reason"),
        finished_at=bindparam("finished_at"),
        steps=bindparam("steps"),
        usage=bindparam("usage"),
    )
)


# What a scheduled action's firing starts (`mind.agent.proactive`): a run whose
# messages later runs never see.
PROACTIVE_TRIGGER = "schedule"
# What an observation starts: `observation:<trust>`, kept by the runs that continue it.
OBSERVATION_TRIGGER = "observation:"


def observation_trigger(trust: str) -> str:
    return f"{OBSERVATION_TRIGGER}{trust}"


def trust_of(trigger: str) -> str:
    """The trust of the observation that triggered a run with this trigger ("unspecified" when
    it names none); "" for a run no observation triggered."""
    if not is_observation(trigger):
        return ""
    return trigger.removeprefix(OBSERVATION_TRIGGER) or "unspecified"


def is_observation(trigger: str) -> bool:
    return trigger.startswith(OBSERVATION_TRIGGER)


def new_run_id() -> str:
    return f"run_{uuid.uuid4().hex}"


def start(
    tx: WriteTx,
    *,
    key: str,
    trigger: str,
    mode: str,
    audience: list[str],
    permissions: dict[str, Any] | None = None,
    origin: str = "",
) -> models.Run:
    run = models.Run(
        id=new_run_id(),
        conversation_key=key,
        state=RunState.RUNNING.value,
        trigger=trigger,
        detail_mode=mode,
        permissions=permissions or {},
        origin=origin,
        started_at=datetime.now(UTC),
    )
    tx.insert(run)
    tx.event("run_changed", key, audience, run_view(run).to_payload())
    return run


def finish(
    tx: WriteTx,
    run_id: str,
    *,
    state: RunState,
    reason: str,
    audience: list[str],
    steps: int | None = None,
    usage: dict[str, Any] | None = None,
    keep_open: Collection[str] = (),
) -> Any | None:
    """Record the run's terminal; running tool calls of it end `cancelled` with `reason`,
    except those in `keep_open` (calls waiting for an approval, continued once decided).
    A child's run ends its delegation in the same unit (`mind.conversation.delegations`).
    Returns the run as it ended (a row of `runs`; `redaction` set when a sealed run's key was
    deleted, see `mind.sealing.turns.end`).

    A sealed run keeps no call open: its arguments are unreadable once its key is gone, so a
    continuation could not run them.

    Returns None (and writes nothing) when the run already has a terminal.
    """
    run = tx.first(_RUN, run_id=run_id)
    if run is None or run.state != RunState.RUNNING:
        return None
    now = datetime.now(UTC)
    if run.sealed:
        keep_open = ()
    kept = False
    for projection in tx.rows(_RUNNING_CALLS, run_id=run_id):
        if projection.tool_call_id in keep_open:
            kept = True
            continue
        _cancel_call(tx, projection, f"cancelled: {reason}", now, audience)
    run = run._replace(
        state=state.value,
        reason=reason,
        finished_at=now,
        steps=run.steps if steps is None else steps,
        usage=run.usage if usage is None else usage,
    )
    tx.execute(
        _END_RUN,
        run_id=run_id,
        state=state.value,
        reason=reason,
        finished_at=now,
        steps=run.steps,
        usage=run.usage,
    )
    tx.event("run_changed", run.conversation_key, audience, run_view(run).to_payload())
    delegations.run_ended(tx, run.conversation_key, state, reason, kept)
    queried = sealed_turns.end(tx, run)
    if queried is not None:
        run = run._replace(redaction=[q.to_json() for q in queried])
    return run


def _cancel_call(
    tx: WriteTx, projection: Any, summary: str, now: datetime, audience: list[str]
) -> None:
    """End a running call `cancelled` (a terminal committed since it was read stands)."""
    if not tx.execute(_CANCEL_CALL, tool_call_id=projection.tool_call_id, summary=summary, now=now):
        return
    ended = projection._replace(status="cancelled", result_summary=summary, finished_at=now)
    tx.event(
        "tool_changed",
        projection.conversation_key,
        audience,
        projection_view(ended, DetailMode(ended.admitted_mode)).to_payload(),
    )


def cancel_open_calls(tx: WriteTx, key: str, reason: str, audience: list[str]) -> None:
    """End `cancelled` every call of conversation `key` a stop or crash left open (none of
    its runs runs): nothing continues them later (`mind.conversation.continuation`)."""
    now = datetime.now(UTC)
    for projection in tx.rows(_OPEN_CALLS, key=key):
        _cancel_call(tx, projection, f"cancelled: {reason}", now, audience)


def running(tx: WriteTx, key: str) -> list[models.Run]:
    """Conversation `key`'s run left running (by a crash: at most one)."""
    return list(
        tx.session.scalars(
            select(models.Run).where(
                models.Run.conversation_key == key, models.Run.state == RunState.RUNNING.value
            )
        )
    )


def conversations_running(session: Session) -> list[str]:
    """Conversations with a run in the running state."""
    query = select(models.Run.conversation_key).where(models.Run.state == RunState.RUNNING.value)
    return list(session.scalars(query.distinct()))
