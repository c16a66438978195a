"""Migration 0003: digests that will still be compared follow RFC 8785, and tasks keep their
binding, so an approval requested before an upgrade still matches its call afterwards."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from mind.store import migrate
from mind.store.engine import create_migration_engine
from tobe.runtime.digest import arguments_digest

NOW = datetime(2026, 12, 1, tzinfo=UTC)
# Arguments whose old digest (Python's json.dumps) and RFC 8785 digest differ.
ARGUMENTS = {"count": 2.0, "big": 1e16, "tiny": 1e-05}
HUGE = {"ids": [2**53]}


def old_digest(arguments: Any) -> str:
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _table(name: str, *columns: str, json_columns: tuple[str, ...] = ()) -> sa.TableClause:
    return sa.table(
        name,
        *(sa.column(c) for c in columns),
        *(sa.column(c, sa.JSON) for c in json_columns),
    )


def _seed(url: str) -> None:
    call_ids = ["call_pending", "call_decided", "call_open", "call_done", "call_grant", "call_huge"]
    calls = [{"id": call_id, "name": "laptop__act", "arguments": ARGUMENTS} for call_id in call_ids]
    calls[-1]["arguments"] = HUGE
    approval = dict.fromkeys(("run_id", "tool", "effect", "hand_id", "arguments_summary"), "x")
    approval.update(effect="external_side_effect", reason="", decision_reason="")
    approval.update(requested_at=NOW, expires_at=NOW)
    task = {"hand_name": "laptop", "tool": "act", "attempt": 1, "cancel_reason": ""}
    task.update(output="", error="", created_at=NOW, updated_at=NOW, remote_run_id="rr_1")

    def approval_row(id_: str, call: str, decision: str | None, args: Any) -> dict[str, Any]:
        return {
            **approval,
            "id": id_,
            "conversation_key": "p_old",
            "tool_call_id": call,
            "arguments_digest": old_digest(args),
            "decision": decision,
            "decided_by": "alice" if decision else None,
        }

    def task_row(id_: str, call: str, state: str, args: Any, digest: str) -> dict[str, Any]:
        return {
            **task,
            "id": id_,
            "tool_call_id": call,
            "state": state,
            "arguments": args,
            "arguments_digest": digest,
        }

    engine = create_migration_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(
                _table("conversations", "key", "owner", "title", "created_at", "active_hand")
                .insert()
                .values(key="p_old", owner="alice", title="", created_at=NOW, active_hand="")
            )
            connection.execute(
                _table(
                    "messages",
                    "conversation_key",
                    "role",
                    "text",
                    "created_at",
                    json_columns=("payload",),
                )
                .insert()
                .values(
                    conversation_key="p_old",
                    role="assistant",
                    text="",
                    created_at=NOW,
                    payload={"tool_calls": calls},
                )
            )
            approvals = _table("approvals", *approval_row("a", "c", None, {}).keys())
            connection.execute(
                approvals.insert(),
                [
                    approval_row("ap_pending", "call_pending", None, ARGUMENTS),
                    approval_row("ap_decided", "call_decided", "approve_once", ARGUMENTS),
                    approval_row("ap_open", "call_open", "approve_once", ARGUMENTS),
                    approval_row("ap_huge", "call_huge", None, HUGE),
                ],
            )
            connection.execute(
                _table(
                    "approval_audit",
                    "approval_id",
                    "conversation_key",
                    "tool_call_id",
                    "tool",
                    "source",
                    "verdict",
                    "principal",
                    "summary",
                    "created_at",
                )
                .insert()
                .values(
                    approval_id="ap_granting",
                    conversation_key="p_old",
                    tool_call_id="call_grant",
                    tool="laptop__act",
                    source="grant",
                    verdict="allow",
                    principal="alice",
                    summary="",
                    created_at=NOW,
                )
            )
            connection.execute(
                _table(
                    "remote_runs",
                    "id",
                    "conversation_key",
                    "run_id",
                    "hand_name",
                    "background",
                    "detail_mode",
                    "created_at",
                )
                .insert()
                .values(
                    id="rr_1",
                    conversation_key="p_old",
                    run_id="run_1",
                    hand_name="laptop",
                    background=False,
                    detail_mode="summary",
                    created_at=NOW,
                )
            )
            old = old_digest(ARGUMENTS)
            tasks = _table(
                "tasks",
                *(k for k in task_row("t", "c", "s", {}, "") if k != "arguments"),
                json_columns=("arguments",),
            )
            connection.execute(
                tasks.insert(),
                [
                    task_row("t_open", "call_open", "accepted", ARGUMENTS, old),
                    task_row("t_grant", "call_grant", "offered", ARGUMENTS, old),
                    task_row("t_done", "call_done", "succeeded", ARGUMENTS, old),
                    task_row("t_plain", "call_plain", "offered", {"n": 1}, ""),
                ],
            )
    finally:
        engine.dispose()


def _rows(url: str, statement: str) -> list[tuple[Any, ...]]:
    engine = create_migration_engine(url)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(sa.text(statement))]
    finally:
        engine.dispose()


def test_pending_approvals_and_open_tasks_get_rfc8785_digests_and_tasks_their_source(
    empty_store_url: str,
) -> None:
    url = empty_store_url
    migrate.upgrade(url, "0002")
    _seed(url)
    old, new = old_digest(ARGUMENTS), arguments_digest(ARGUMENTS)
    assert old != new

    migrate.upgrade(url)
    assert _rows(url, "SELECT id, arguments_digest FROM approvals ORDER BY id") == [
        ("ap_decided", old),  # decided once: never rewritten
        ("ap_huge", old_digest(HUGE)),  # no RFC 8785 form: a Hand refuses it (fail closed)
        ("ap_open", old),
        ("ap_pending", new),
    ]
    tasks = "SELECT id, arguments_digest, approval_source, approval_id, approval_detail FROM tasks"
    assert _rows(url, tasks + " ORDER BY id") == [
        ("t_done", old, "grant", "", "conversation grant"),  # terminal: never offered again
        ("t_grant", new, "grant", "ap_granting", "conversation grant"),
        ("t_open", new, "person", "ap_open", "alice"),
        ("t_plain", "", "", "", ""),
    ]

    migrate.downgrade(url, "0002")
    assert _rows(url, "SELECT id, arguments_digest FROM approvals WHERE id = 'ap_pending'") == [
        ("ap_pending", old)
    ]
    assert _rows(url, "SELECT id, arguments_digest FROM tasks ORDER BY id")[1:3] == [
        ("t_grant", old),
        ("t_open", old),
    ]
