"""Read views of conversations: listing, snapshot and history pages, rendered per mode."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Select, false, func, or_, select
from sqlalchemy.orm import Session

from mind.conversation import delegations, sources
from mind.conversation.access import Viewer, can_see
from mind.conversation.child_views import child_views
from mind.errors import NotFound
from mind.events.action_views import PendingActionView, ScheduledActionView
from mind.events.child_views import ChildView
from mind.events.payloads import (
    approval_view,
    conversation_view,
    message_view,
    projection_view,
    queued_view,
    run_view,
)
from mind.events.views import (
    ApprovalView,
    ConversationView,
    MessageView,
    QueuedView,
    RunView,
    ToolView,
)
from mind.sealing.forms import open_message, open_projection
from mind.sealing.keyring import KeyRing
from mind.store import models
from mind.store.outbox import head_event_id
from mind.tools.base import DetailMode


@dataclass(frozen=True)
class Snapshot:
    conversation: ConversationView
    messages: tuple[MessageView, ...]
    tools: tuple[ToolView, ...]
    active_run: RunView | None
    pending_approvals: tuple[ApprovalView, ...]
    queued: tuple[QueuedView, ...]
    last_event_id: int
    # Scheduled actions that may still fire (active or paused).
    scheduled_actions: tuple[ScheduledActionView, ...] = ()
    # Actions waiting for the owner's confirmation (`mind.actions.records.waiting`).
    pending_actions: tuple[PendingActionView, ...] = ()
    # The child runs of the `delegate` calls among `tools`.
    children: tuple[ChildView, ...] = ()


@dataclass(frozen=True)
class HistoryPage:
    messages: tuple[MessageView, ...]
    tools: tuple[ToolView, ...]
    next_after_message_id: int = 0
    # The child runs of the `delegate` calls among `tools`.
    children: tuple[ChildView, ...] = ()


# The tool whose calls have a child run (`mind.agent.delegation.DELEGATE`, a floor above).
DELEGATE = "delegate"

NEWEST_FIRST = (models.Conversation.created_at.desc(), models.Conversation.key.desc())


def members_of(session: Session, key: str) -> list[str]:
    rows = session.scalars(
        select(models.ConversationMember.principal)
        .where(models.ConversationMember.conversation_key == key)
        .order_by(models.ConversationMember.principal)
    )
    return list(rows)


def access(session: Session, key: str) -> tuple[str, list[str]]:
    """The owner and members of a conversation, or NotFound."""
    conversation = session.get(models.Conversation, key)
    if conversation is None:
        raise NotFound(f"no conversation {key!r}")
    return conversation.owner, members_of(session, key)


def visible(session: Session, viewer: Viewer, key: str) -> tuple[models.Conversation, list[str]]:
    """The conversation and its members, or NotFound (also when it is someone else's)."""
    conversation = session.get(models.Conversation, key)
    members = members_of(session, key) if conversation else []
    if conversation is None or not can_see(viewer, conversation.owner, members):
        raise NotFound(f"no conversation {key!r}")
    return conversation, members


def _last_event_ids(session: Session, keys: list[str]) -> dict[str, int]:
    if not keys:
        return {}
    rows = session.execute(
        select(models.OutboxEvent.conversation_key, func.max(models.OutboxEvent.id))
        .where(models.OutboxEvent.conversation_key.in_(keys))
        .group_by(models.OutboxEvent.conversation_key)
    )
    return {key: last for key, last in rows}


def visible_keys(viewer: Viewer) -> Select[str]:
    """The keys of the conversations the viewer sees (owner, member, or every one for admin)."""
    query = select(models.Conversation.key)
    if viewer.is_admin:
        return query
    member_of = select(models.ConversationMember.conversation_key).where(
        models.ConversationMember.principal == viewer.principal
    )
    return query.where(
        or_(
            models.Conversation.owner == viewer.principal,
            models.Conversation.key.in_(member_of),
        )
    )


def views_of(session: Session, rows: Sequence[models.Conversation]) -> list[ConversationView]:
    """The views of `rows`, in their order, with members and latest event ids."""
    last = _last_event_ids(session, [row.key for row in rows])
    return [
        conversation_view(row, members_of(session, row.key), last.get(row.key, 0)) for row in rows
    ]


def list_visible(
    session: Session,
    viewer: Viewer,
    limit: int,
    kinds: Sequence[str] = (),
    include_archived: bool = False,
) -> list[ConversationView]:
    """The conversations the viewer sees, newest first; only `kinds` unless that is empty;
    archived ones only with `include_archived`; never a child run's (`delegate`), which its
    parent's tool card leads to."""
    query = select(models.Conversation).where(
        models.Conversation.key.in_(visible_keys(viewer)),
        ~delegations.is_child(models.Conversation.key),
    )
    if kinds:
        query = query.where(models.Conversation.kind.in_(kinds))
    if not include_archived:
        query = query.where(models.Conversation.archived.is_(false()))
    rows = list(session.scalars(query.order_by(*NEWEST_FIRST).limit(limit)))
    return views_of(session, rows)


def _call_ids(messages: list[models.Message]) -> list[str]:
    ids: list[str] = []
    for message in messages:
        payload = message.payload or {}
        ids.extend(call["id"] for call in payload.get("tool_calls", []))
        if message.role == "tool" and payload.get("tool_call_id"):
            ids.append(payload["tool_call_id"])
    return list(dict.fromkeys(ids))


def _projections(session: Session, call_ids: list[str]) -> list[models.ToolProjection]:
    if not call_ids:
        return []
    rows = session.scalars(
        select(models.ToolProjection)
        .where(models.ToolProjection.tool_call_id.in_(call_ids))
        .order_by(models.ToolProjection.admitted_at, models.ToolProjection.tool_call_id)
    )
    return list(rows)


def _children(session: Session, rows: list[models.ToolProjection]) -> tuple[ChildView, ...]:
    return child_views(session, (row.tool_call_id for row in rows if row.tool == DELEGATE))


def _messages(
    rows: list[models.Message], mode: DetailMode, keyring: KeyRing | None
) -> tuple[MessageView, ...]:
    """Rendered for `mode`; sealed values opened while their key exists (without a ring
    they stay in their redacted form)."""
    if keyring is not None:
        return tuple(message_view(open_message(row, keyring), mode) for row in rows)
    return tuple(message_view(row, mode) for row in rows)


def _tools(
    rows: list[models.ToolProjection], mode: DetailMode, keyring: KeyRing | None
) -> tuple[ToolView, ...]:
    if keyring is not None:
        return tuple(projection_view(open_projection(row, keyring), mode) for row in rows)
    return tuple(projection_view(row, mode) for row in rows)


def snapshot(
    session: Session,
    viewer: Viewer,
    key: str,
    message_limit: int,
    mode: DetailMode,
    keyring: KeyRing | None = None,
    *,
    schedules: Callable[[Session, str], Iterable[ScheduledActionView]],
) -> Snapshot:
    """Read inside one transaction, so `last_event_id` matches exactly what is shown.
    `schedules` reads the conversation's scheduled actions in the same session: the scheduler
    is a floor above, so its caller hands its reader in."""
    conversation, members = visible(session, viewer, key)
    last_event_id = head_event_id(session)
    recent = list(
        session.scalars(
            select(models.Message)
            .where(models.Message.conversation_key == key)
            .order_by(models.Message.id.desc())
            .limit(message_limit)
        )
    )
    recent.reverse()
    active = session.scalar(
        select(models.Run).where(models.Run.conversation_key == key, models.Run.state == "running")
    )
    # Its children's requests too: a person decides them where they watch the parent.
    asking = [key, *delegations.children_of(session, key)]
    approvals = list(
        session.scalars(
            select(models.Approval)
            .where(models.Approval.conversation_key.in_(asking), models.Approval.decision.is_(None))
            .order_by(models.Approval.requested_at)
        )
    )
    waiting = list(
        session.scalars(
            select(models.Input)
            .where(models.Input.conversation_key == key, models.Input.state == "queued")
            .order_by(models.Input.id)
        )
    )
    last = _last_event_ids(session, [key])
    projections = _projections(session, _call_ids(recent))
    return Snapshot(
        conversation=conversation_view(conversation, members, last.get(key, 0)),
        messages=_messages(recent, mode, keyring),
        tools=_tools(projections, mode, keyring),
        active_run=run_view(active) if active else None,
        pending_approvals=tuple(
            approval_view(a, "", delegations.shown_in(session, a.conversation_key)[1])
            for a in approvals
        ),
        # Posts waiting for their turn are not shown: they appear as the messages they become.
        queued=tuple(
            queued_view(i, active.id if active and i.steer else "")
            for i in waiting
            if not isinstance(sources.from_json(i.source), sources.PostSource)
        ),
        last_event_id=last_event_id,
        scheduled_actions=tuple(schedules(session, key)),
        children=_children(session, projections),
    )


def history(
    session: Session,
    viewer: Viewer,
    key: str,
    after_message_id: int,
    limit: int,
    mode: DetailMode,
    keyring: KeyRing | None = None,
) -> HistoryPage:
    visible(session, viewer, key)
    rows = list(
        session.scalars(
            select(models.Message)
            .where(models.Message.conversation_key == key, models.Message.id > after_message_id)
            .order_by(models.Message.id)
            .limit(limit)
        )
    )
    projections = _projections(session, _call_ids(rows))
    return HistoryPage(
        messages=_messages(rows, mode, keyring),
        tools=_tools(projections, mode, keyring),
        next_after_message_id=rows[-1].id if len(rows) == limit else 0,
        children=_children(session, projections),
    )
