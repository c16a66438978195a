"""Straight into a test store: two conversations for the conversation commands, and an injected
failure of the audit insert for the atomicity tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy.orm import Session as OrmSession

from mind.store import models
from mind.store.engine import create_migration_engine

T0 = datetime(2026, 9, 10, 14, 0, 30, tzinfo=UTC)

# Rows `seed_conversations` writes for the group conversation, per table.
TEAM_ROWS = {
    "approval_audit": 1,
    "approval_grants": 1,
    "approvals": 1,
    "conversation_members": 1,
    "conversations": 1,
    "inputs": 1,
    "messages": 3,
    "outbox": 2,
    "remote_runs": 1,
    "runs": 1,
    "seen_observations": 1,
    "summaries": 1,
    "task_transitions": 2,
    "tasks": 1,
    "tool_projections": 1,
}


def seed_conversations(url: str) -> None:
    """`g_team` (owner alice, member bob, a bit of everything) and `p_bob` (one message)."""
    engine = create_migration_engine(url)
    try:
        with OrmSession(engine) as session, session.begin():
            _team(session)
            _bob(session)
    finally:
        engine.dispose()


def _team(session: OrmSession) -> None:
    key = "g_team"
    session.add(models.Conversation(key=key, owner="alice", title="Team", created_at=T0))
    session.flush()
    session.add(models.ConversationMember(conversation_key=key, principal="bob"))
    session.add(models.Run(id="run_team_1", conversation_key=key, state="completed", started_at=T0))
    for index, role in enumerate(("user", "assistant", "tool")):
        session.add(
            models.Message(
                conversation_key=key,
                run_id="run_team_1",
                role=role,
                text=f"message {index}",
                created_at=T0 + timedelta(seconds=index),
            )
        )
    session.add(
        models.Input(
            conversation_key=key,
            idempotency_key="idem-1",
            principal="alice",
            text="hello",
            state="delivered",
        )
    )
    session.add(
        models.ToolProjection(
            tool_call_id="call_team_1",
            conversation_key=key,
            run_id="run_team_1",
            tool="local__ls",
            admitted_mode="summary",
            status="succeeded",
        )
    )
    session.add(
        models.Approval(
            id="appr_team_1",
            conversation_key=key,
            run_id="run_team_1",
            tool_call_id="call_team_1",
            tool="local__ls",
            effect="read_only",
            arguments_digest="0" * 64,
            expires_at=T0 + timedelta(minutes=5),
        )
    )
    session.add(
        models.ApprovalGrant(
            conversation_key=key, tool="local__ls", hand_id="local", approval_id="appr_team_1"
        )
    )
    session.add(
        models.ApprovalAudit(
            approval_id="appr_team_1",
            conversation_key=key,
            tool_call_id="call_team_1",
            tool="local__ls",
            source="policy",
            verdict="allow",
        )
    )
    session.add(
        models.RemoteRun(
            id="rr_team_1", conversation_key=key, run_id="run_team_1", hand_name="local"
        )
    )
    session.flush()
    session.add(
        models.Task(
            id="task_team_1",
            remote_run_id="rr_team_1",
            tool_call_id="call_team_1",
            hand_name="local",
            tool="ls",
            state="succeeded",
        )
    )
    session.flush()
    session.add(models.TaskTransition(task_id="task_team_1", attempt=1, to_state="offered"))
    session.add(
        models.TaskTransition(
            task_id="task_team_1",
            attempt=1,
            from_state="offered",
            to_state="succeeded",
            terminal=True,
        )
    )
    session.add(
        models.Summary(
            conversation_key=key,
            through_message_id=1,
            generation=1,
            text="summary",
        )
    )
    session.add(models.SeenObservation(observation_id="obs_1", conversation_key=key, publish_seq=1))
    for index in range(2):
        session.add(
            models.OutboxEvent(
                conversation_key=key,
                type="message_appended",
                audience=["alice", "bob"],
                payload={"text": f"message {index}"},
            )
        )


def _bob(session: OrmSession) -> None:
    key = "p_bob"
    session.add(models.Conversation(key=key, owner="bob", created_at=T0 + timedelta(hours=1)))
    session.flush()
    session.add(models.Message(conversation_key=key, role="user", text="hi"))


@contextmanager
def audit_inserts_fail(data_dir: Path) -> Iterator[None]:
    """A trigger refuses every audit insert, after the mutation's own writes went through."""
    with sqlite3.connect(data_dir / "tobe.db") as db:
        db.execute(
            "CREATE TRIGGER inject_audit_failure BEFORE INSERT ON management_audit "
            "BEGIN SELECT RAISE(ABORT, 'injected audit failure'); END"
        )
    try:
        yield
    finally:
        with sqlite3.connect(data_dir / "tobe.db") as db:
            db.execute("DROP TRIGGER inject_audit_failure")
