"""Reading a child run's view (`mind.events.child_views`) from the store: the child
conversation's tool projections and assistant messages, which stay after the child ends, so a
snapshot or history page rebuilds the parent's nested card as the live events left it."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mind.conversation import delegations
from mind.events.child_views import ChildCallView, ChildView
from mind.events.views import ToolStatus
from mind.store import models

# The newest calls a card lists; older ones are only counted.
SHOWN_CALLS = 8
# Summaries and text are shortened: the card is a glance, the child's conversation the record.
SUMMARY_CHARS = 160
TEXT_CHARS = 400


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _calls(session: Session, child_key: str) -> tuple[tuple[ChildCallView, ...], int]:
    where = models.ToolProjection.conversation_key == child_key
    total = session.scalar(select(func.count()).select_from(models.ToolProjection).where(where))
    rows = list(
        session.scalars(
            select(models.ToolProjection)
            .where(where)
            .order_by(models.ToolProjection.admitted_at.desc(), models.ToolProjection.tool_call_id)
            .limit(SHOWN_CALLS)
        )
    )
    rows.reverse()
    calls = tuple(
        ChildCallView(
            tool_call_id=row.tool_call_id,
            tool=row.tool,
            status=ToolStatus(row.status),
            arguments_summary=_short(row.arguments_summary, SUMMARY_CHARS),
            result_summary=_short(row.result_summary, SUMMARY_CHARS),
        )
        for row in rows
    )
    return calls, int(total or 0)


def _latest_text(session: Session, child_key: str) -> str:
    text = session.scalar(
        select(models.Message.text)
        .where(
            models.Message.conversation_key == child_key,
            models.Message.role == "assistant",
            models.Message.text != "",
        )
        .order_by(models.Message.id.desc())
        .limit(1)
    )
    return _short(text or "", TEXT_CHARS)


def child_view(session: Session, tool_call_id: str) -> ChildView | None:
    """The view of the child of `tool_call_id`; None when the call started no child."""
    row = delegations.of_call(session, tool_call_id)
    if row is None:
        return None
    calls, total = _calls(session, row.child_key)
    return ChildView(
        tool_call_id=tool_call_id,
        conversation_key=row.child_key,
        calls=calls,
        calls_total=total,
        latest_text=_latest_text(session, row.child_key),
    )


def child_views(session: Session, tool_call_ids: Iterable[str]) -> tuple[ChildView, ...]:
    """The views of the children of those of `tool_call_ids` that started one, in order."""
    found = (child_view(session, call) for call in tool_call_ids)
    return tuple(view for view in found if view is not None)
