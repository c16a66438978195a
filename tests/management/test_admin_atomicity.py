"""A mutation and its audit row commit together: when the audit insert fails, neither stays.

The failure is real: a trigger in the database refuses the audit insert after the mutation's
own writes went through in the same transaction.
"""

from __future__ import annotations

import sqlite3

import pytest
from admin_store import audit_inserts_fail, seed_conversations
from helpers.admin_cli import Admin

from mind.store.migrate import upgrade

pytestmark = pytest.mark.sqlite_store(reason="injects the audit failure with a SQLite trigger")


def rows(admin: Admin, query: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(admin.data_dir / "tobe.db") as db:
        return db.execute(query).fetchall()


def test_failed_audit_leaves_no_created_credential(admin: Admin) -> None:
    upgrade(admin.store_url)
    with audit_inserts_fail(admin.data_dir):
        result = admin.run(
            "credentials", "create", "--kind", "client", "--principal", "p", ok=False
        )
    assert "nothing was changed" in result.stderr
    assert rows(admin, "SELECT id FROM credentials") == []
    assert rows(admin, "SELECT id FROM management_audit") == []


def test_failed_audit_leaves_the_credential_unrevoked_and_no_event(admin: Admin) -> None:
    credential_id = admin.json("credentials", "create", "--kind", "hand", "--principal", "h")[
        "credential"
    ]["id"]
    with audit_inserts_fail(admin.data_dir):
        admin.run("credentials", "revoke", credential_id, ok=False)
        admin.run("credentials", "rotate", credential_id, ok=False)
    assert rows(admin, "SELECT id, revoked_at FROM credentials") == [(credential_id, None)]
    assert rows(admin, "SELECT id FROM outbox") == []
    assert [e["action"] for e in admin.json("audit")] == ["credential.create"]


def test_failed_audit_leaves_the_conversation_in_place(admin: Admin) -> None:
    upgrade(admin.store_url)
    seed_conversations(admin.store_url)
    with audit_inserts_fail(admin.data_dir):
        admin.run("conversations", "delete", "g_team", "--yes", ok=False)
    shown = admin.json("conversations", "show", "g_team")
    assert (shown["messages"], shown["runs"], shown["tool_calls"]) == (3, 1, 1)
    assert rows(admin, "SELECT count(*) FROM outbox WHERE conversation_key = 'g_team'") == [(2,)]
