"""Operator view of conversations: list, inspect, and delete with everything they own."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Select, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from management.errors import FailedPrecondition, NotFound
from management.records import ConversationDetail, ConversationInfo, Deletion
from mind.store.models import (
    Approval,
    ApprovalAudit,
    ApprovalGrant,
    Conversation,
    ConversationMember,
    Input,
    Message,
    OutboxEvent,
    RemoteRun,
    Run,
    SeenObservation,
    Session,
    SessionGroup,
    Summary,
    Task,
    TaskTransition,
    ToolProjection,
)

DEFAULT_LIMIT = 100

# Tables keyed directly by `conversation_key`, children before parents, so the removal never
# leans on ON DELETE CASCADE and every count is exact.
_OWNED_BY_KEY = (
    ToolProjection,
    ApprovalGrant,
    Approval,
    ApprovalAudit,
    Summary,
    Message,
    Input,
    Run,
    Session,
    SessionGroup,
    ConversationMember,
    SeenObservation,
    OutboxEvent,
)


async def _infos(session: AsyncSession, rows: Sequence[Conversation]) -> list[ConversationInfo]:
    keys = [row.key for row in rows]
    if not keys:
        return []
    members: dict[str, list[str]] = {key: [] for key in keys}
    for key, principal in await session.execute(
        select(ConversationMember.conversation_key, ConversationMember.principal)
        .where(ConversationMember.conversation_key.in_(keys))
        .order_by(ConversationMember.principal)
    ):
        members[key].append(principal)
    last_events = dict(
        (
            await session.execute(
                select(OutboxEvent.conversation_key, func.max(OutboxEvent.id))
                .where(OutboxEvent.conversation_key.in_(keys))
                .group_by(OutboxEvent.conversation_key)
            )
        ).all()
    )
    return [
        ConversationInfo(
            key=row.key,
            title=row.title or "",
            owner=row.owner,
            members=tuple(members[row.key]),
            created_at=row.created_at,
            last_event_id=last_events.get(row.key) or 0,
        )
        for row in rows
    ]


async def list_conversations(
    session: AsyncSession, *, owner: str = "", limit: int = 0
) -> list[ConversationInfo]:
    """Every principal's conversations (or one owner's), newest first."""
    query = select(Conversation)
    if owner:
        query = query.where(Conversation.owner == owner)
    query = query.order_by(Conversation.created_at.desc(), Conversation.key).limit(
        limit or DEFAULT_LIMIT
    )
    return await _infos(session, list(await session.scalars(query)))


async def _count(session: AsyncSession, query: Select[tuple[int]]) -> int:
    return int(await session.scalar(query) or 0)


async def _require(session: AsyncSession, key: str) -> Conversation:
    row = await session.get(Conversation, key)
    if row is None:
        raise NotFound(
            f"no conversation with key {key!r}; `tobe admin conversations list` shows the keys"
        )
    return row


async def inspect_conversation(session: AsyncSession, key: str) -> ConversationDetail:
    row = await _require(session, key)
    (info,) = await _infos(session, [row])

    def count(model: type) -> Select[tuple[int]]:
        return select(func.count()).select_from(model).where(model.conversation_key == key)

    return ConversationDetail(
        conversation=info,
        messages=await _count(session, count(Message)),
        runs=await _count(session, count(Run)),
        tool_calls=await _count(session, count(ToolProjection)),
        approvals=await _count(session, count(Approval)),
    )


async def delete_conversation(session: AsyncSession, key: str) -> Deletion:
    """Remove the conversation and its rows in the caller's transaction; counts per table.

    Refused while a run is running: the Mind's actor is still writing to it.
    """
    await _require(session, key)
    running = await _count(
        session,
        select(func.count())
        .select_from(Run)
        .where(Run.conversation_key == key, Run.state == "running"),
    )
    if running:
        raise FailedPrecondition(
            f"conversation {key} has a running run; cancel it (or wait for it to end) first"
        )
    remote_runs = select(RemoteRun.id).where(RemoteRun.conversation_key == key)
    tasks = select(Task.id).where(Task.remote_run_id.in_(remote_runs))
    removed: dict[str, int] = {}

    async def remove(table: str, statement: object) -> None:
        result = await session.execute(statement)  # type: ignore[call-overload]
        if result.rowcount:
            removed[table] = result.rowcount

    await remove(
        TaskTransition.__tablename__,
        delete(TaskTransition).where(TaskTransition.task_id.in_(tasks)),
    )
    await remove(Task.__tablename__, delete(Task).where(Task.remote_run_id.in_(remote_runs)))
    await remove(
        RemoteRun.__tablename__, delete(RemoteRun).where(RemoteRun.conversation_key == key)
    )
    for model in _OWNED_BY_KEY:
        await remove(model.__tablename__, delete(model).where(model.conversation_key == key))
    await remove(Conversation.__tablename__, delete(Conversation).where(Conversation.key == key))
    return Deletion(key=key, removed=removed)
