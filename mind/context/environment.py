"""The environment summary a compaction stores beside its summary.

A summary says what was said; this says what was going on that the messages alone do not
show: which Hand the conversation's tools run on, which approvals wait for a person, which Hand
tasks are still open, and which observations wait to be delivered.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.conversation import sources
from mind.conversation.sources import ObservationSource
from mind.sealing.forms import redacted_text
from mind.store import models

# An environment line longer than this is cut: it describes, it does not carry content.
_LINE_CHARS = 200
# Items listed per kind; the rest are counted.
_ITEMS = 10
_OPEN_TASKS = ("offered", "accepted")


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _LINE_CHARS else text[: _LINE_CHARS - 1] + "…"


def _listed(title: str, items: list[str]) -> list[str]:
    if not items:
        return []
    shown = [f"- {_line(item)}" for item in items[:_ITEMS]]
    if len(items) > _ITEMS:
        shown.append(f"- and {len(items) - _ITEMS} more")
    return [f"{title} ({len(items)}):", *shown]


def _adapters(source: ObservationSource) -> str:
    return ", ".join(source.adapters) or "awareness"


def environment_summary(session: Session, key: str) -> str:
    """The environment of conversation `key` now, as lines of text ("" when nothing)."""
    conversation = session.get(models.Conversation, key)
    lines: list[str] = []
    if conversation is not None and conversation.active_hand:
        lines.append(f"Active Hand: {conversation.active_hand}")
    approvals = session.scalars(
        select(models.Approval)
        .where(models.Approval.conversation_key == key, models.Approval.decision.is_(None))
        .order_by(models.Approval.requested_at)
    ).all()
    lines += _listed(
        "Approvals waiting for a decision",
        [f"{a.tool}: {redacted_text(a.decision_text) or a.arguments_summary}" for a in approvals],
    )
    tasks = session.execute(
        select(models.Task.tool, models.Task.hand_name, models.Task.state)
        .join(models.RemoteRun, models.RemoteRun.id == models.Task.remote_run_id)
        .where(models.RemoteRun.conversation_key == key, models.Task.state.in_(_OPEN_TASKS))
        .order_by(models.Task.created_at)
    ).all()
    lines += _listed(
        "Hand tasks still open", [f"{tool} on {hand} ({state})" for tool, hand, state in tasks]
    )
    waiting = session.scalars(
        select(models.Input)
        .where(models.Input.conversation_key == key, models.Input.state == "queued")
        .order_by(models.Input.id)
    ).all()
    observations = [
        (source, row.text)
        for row in waiting
        if isinstance(source := sources.from_json(row.source), ObservationSource)
    ]
    lines += _listed(
        "Observations not yet delivered",
        [f"{_adapters(source)}: {text}" for source, text in observations],
    )
    return "\n".join(lines)
