"""Operator view of conversations: list, inspect, and delete with everything they own."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import Select, delete, func, select
from sqlalchemy.orm import Session as OrmSession

from mind.conversation import delegations
from mind.errors import NotFound, WrongState
from mind.events.payloads import conversation_view
from mind.events.views import ConversationView
from mind.management.records import ConversationDetail, Deletion
from mind.store.models import (
    Approval,
    ApprovalAudit,
    ApprovalGrant,
    Conversation,
    ConversationMember,
    Delegation,
    Input,
    MemoryEntry,
    Message,
    OutboxEvent,
    RemoteRun,
    Run,
    SeenObservation,
    Summary,
    Task,
    TaskTransition,
    ToolProjection,
    Widget,
    WidgetRecord,
)

DEFAULT_LIMIT = 100

# Tables keyed directly by `conversation_key`, children before parents, so the removal never
# leans on ON DELETE CASCADE and every count is exact.
_OWNED_BY_KEY = (
    ToolProjection,
    Widget,
    ApprovalGrant,
    Approval,
    ApprovalAudit,
    Summary,
    MemoryEntry,
    Message,
    Input,
    Run,
    ConversationMember,
    SeenObservation,
    OutboxEvent,
)


def _views(session: OrmSession, rows: Sequence[Conversation]) -> list[ConversationView]:
    keys = [row.key for row in rows]
    if not keys:
        return []
    members: dict[str, list[str]] = {key: [] for key in keys}
    for key, principal in session.execute(
        select(ConversationMember.conversation_key, ConversationMember.principal)
        .where(ConversationMember.conversation_key.in_(keys))
        .order_by(ConversationMember.principal)
    ):
        members[key].append(principal)
    last_events = dict(
        (
            session.execute(
                select(OutboxEvent.conversation_key, func.max(OutboxEvent.id))
                .where(OutboxEvent.conversation_key.in_(keys))
                .group_by(OutboxEvent.conversation_key)
            )
        ).all()
    )
    return [conversation_view(row, members[row.key], last_events.get(row.key) or 0) for row in rows]


def list_conversations(
    session: OrmSession, *, owner: str = "", limit: int = 0
) -> list[ConversationView]:
    """Every principal's conversations (or one owner's), newest first."""
    query = select(Conversation)
    if owner:
        query = query.where(Conversation.owner == owner)
    query = query.order_by(Conversation.created_at.desc(), Conversation.key).limit(
        limit or DEFAULT_LIMIT
    )
    return _views(session, list(session.scalars(query)))


def _count(session: OrmSession, query: Select[int]) -> int:
    return int(session.scalar(query) or 0)


def require(session: OrmSession, key: str) -> Conversation:
    row = session.get(Conversation, key)
    if row is None:
        raise NotFound(
            f"no conversation with key {key!r}; `tobe admin conversations list` shows the keys"
        )
    return row


def inspect_conversation(session: OrmSession, key: str) -> ConversationDetail:
    row = require(session, key)
    (view,) = _views(session, [row])

    def count(model: type[Message | Run | ToolProjection | Approval]) -> Select[int]:
        return select(func.count()).select_from(model).where(model.conversation_key == key)

    return ConversationDetail(
        conversation=view,
        messages=_count(session, count(Message)),
        runs=_count(session, count(Run)),
        tool_calls=_count(session, count(ToolProjection)),
        approvals=_count(session, count(Approval)),
    )


def delete_conversation(session: OrmSession, key: str) -> Deletion:
    """Remove the conversation and its rows in the caller's transaction, with the child
    conversations its `delegate` calls started (and theirs); counts per table.

    Refused while a run of any of them is running: the Mind's actor is still writing to it.
    """
    require(session, key)
    keys = [key, *delegations.children_of(session, key)]
    running = _count(
        session,
        select(func.count())
        .select_from(Run)
        .where(Run.conversation_key.in_(keys), Run.state == "running"),
    )
    if running:
        raise WrongState(
            f"conversation {key} (or a child run it started) has a running run; cancel it "
            "(or wait for it to end) first"
        )
    removed: dict[str, int] = {}

    def remove(table: str, statement: object) -> None:
        result = session.execute(statement)  # type: ignore[call-overload]
        if result.rowcount:
            removed[table] = removed.get(table, 0) + result.rowcount

    for each in reversed(keys):
        _remove_one(each, remove)
    remove(
        Delegation.__tablename__,
        delete(Delegation).where(Delegation.parent_key.in_(keys)),
    )
    return Deletion(key=key, removed=removed)


def _remove_one(key: str, remove: Callable[[str, object], None]) -> None:
    """Remove one conversation's rows, children before parents."""
    remote_runs = select(RemoteRun.id).where(RemoteRun.conversation_key == key)
    tasks = select(Task.id).where(Task.remote_run_id.in_(remote_runs))
    remove(
        TaskTransition.__tablename__,
        delete(TaskTransition).where(TaskTransition.task_id.in_(tasks)),
    )
    remove(Task.__tablename__, delete(Task).where(Task.remote_run_id.in_(remote_runs)))
    remove(RemoteRun.__tablename__, delete(RemoteRun).where(RemoteRun.conversation_key == key))
    widgets = select(Widget.id).where(Widget.conversation_key == key)
    remove(
        WidgetRecord.__tablename__,
        delete(WidgetRecord).where(WidgetRecord.widget_id.in_(widgets)),
    )
    for model in _OWNED_BY_KEY:
        remove(model.__tablename__, delete(model).where(model.conversation_key == key))
    remove(Conversation.__tablename__, delete(Conversation).where(Conversation.key == key))
