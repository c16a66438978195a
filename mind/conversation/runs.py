"""Run rows: start, terminal, and the terminals of tool calls a run leaves behind."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from mind.events.payloads import projection_view, run_view
from mind.store import models
from mind.store.database import WriteTx


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
) -> models.Run:
    run = models.Run(
        id=new_run_id(),
        conversation_key=key,
        state="running",
        trigger=trigger,
        detail_mode=mode,
        permissions=permissions or {},
        started_at=datetime.now(UTC),
    )
    tx.session.add(run)
    tx.session.flush()
    tx.event("run_changed", key, audience, run_view(run))
    return run


def finish(
    tx: WriteTx,
    run_id: str,
    *,
    state: str,
    reason: str,
    audience: list[str],
    steps: int | None = None,
    usage: dict[str, Any] | None = None,
    keep_open: Collection[str] = (),
) -> models.Run | None:
    """Record the run's terminal; running tool calls of it end `cancelled` with `reason`,
    except those in `keep_open` (calls waiting for an approval, continued once decided).

    Returns None (and writes nothing) when the run already has a terminal.
    """
    run = tx.session.get(models.Run, run_id)
    if run is None or run.state != "running":
        return None
    now = datetime.now(UTC)
    running = list(
        tx.session.scalars(
            select(models.ToolProjection).where(
                models.ToolProjection.run_id == run_id, models.ToolProjection.status == "running"
            )
        )
    )
    for projection in running:
        if projection.tool_call_id in keep_open:
            continue
        projection.status = "cancelled"
        projection.result_summary = f"cancelled: {reason}"
        projection.finished_at = now
        tx.session.flush()
        tx.event(
            "tool_changed",
            run.conversation_key,
            audience,
            projection_view(projection, projection.admitted_mode),
        )
    run.state, run.reason, run.finished_at = state, reason, now
    if steps is not None:
        run.steps = steps
    if usage is not None:
        run.usage = usage
    tx.session.flush()
    tx.event("run_changed", run.conversation_key, audience, run_view(run))
    return run


def running(tx: WriteTx) -> list[models.Run]:
    return list(tx.session.scalars(select(models.Run).where(models.Run.state == "running")))
