"""Every `tobe admin` command without a running Mind: in-process under the state lock."""

from __future__ import annotations

import json

from admin_store import TEAM_ROWS, seed_conversations
from helpers.admin_cli import Admin
from helpers.store_backend import connect, rows

from mind.store.migrate import upgrade


def test_verbose_says_offline_mode_was_used(admin: Admin) -> None:
    result = admin.run("--verbose", "status")
    assert "mode: offline" in result.stderr
    assert "not running (offline mode)" in result.stdout


def test_status_reports_the_store_offline(admin: Admin) -> None:
    status = admin.json("status")
    assert status["mode"] == "offline"
    assert status["data_dir"] == str(admin.data_dir)
    assert status["database_url"] == admin.store_url
    assert status["database_size_bytes"] > 0
    assert status["schema_revision"]
    assert status["services"] == [] and status["hands"] == []


def test_created_credential_is_listed_shown_and_audited(admin: Admin) -> None:
    created = admin.json(
        "credentials",
        "create",
        "--kind",
        "hand",
        "--principal",
        "laptop",
        "--scope",
        "serve-all",
        "--label",
        "desk",
        "--expires",
        "30d",
    )
    credential, secret = created["credential"], created["secret"]
    assert secret.startswith(f"tobe_{credential['prefix']}_")
    assert credential["kind"] == "hand" and credential["scopes"] == ["serve-all"]
    assert credential["state"] == "active" and credential["expires_at"]
    listed = admin.json("credentials", "list")
    assert [c["id"] for c in listed] == [credential["id"]]
    assert admin.json("credentials", "show", credential["id"]) == listed[0]
    (entry,) = admin.json("audit")
    assert entry["action"] == "credential.create"
    assert entry["target"] == credential["id"]
    assert entry["details"]["principal"] == "laptop"


def test_revoke_marks_revoked_and_hides_it_from_the_default_list(admin: Admin) -> None:
    credential = admin.json("credentials", "create", "--kind", "client", "--principal", "bob")[
        "credential"
    ]
    revoked = admin.json("credentials", "revoke", credential["id"])
    assert revoked["credential"]["state"] == "revoked"
    assert revoked["disconnected"] == 0
    assert admin.json("credentials", "list") == []
    assert [c["id"] for c in admin.json("credentials", "list", "--all")] == [credential["id"]]


def test_revoking_twice_fails_with_a_clear_message(admin: Admin) -> None:
    credential_id = admin.json("credentials", "create", "--kind", "client", "--principal", "b")[
        "credential"
    ]["id"]
    admin.run("credentials", "revoke", credential_id)
    result = admin.run("credentials", "revoke", credential_id, ok=False)
    assert "already revoked" in result.stderr


def test_revocation_writes_a_durable_credential_revoked_event(admin: Admin) -> None:
    credential_id = admin.json("credentials", "create", "--kind", "client", "--principal", "b")[
        "credential"
    ]["id"]
    admin.run("credentials", "revoke", credential_id)
    events = rows(admin.store_url, "SELECT type, conversation_key, payload FROM outbox")
    assert [(kind, key, json.loads(payload)) for kind, key, payload in events] == [
        ("credential_revoked", "", {"credential_id": credential_id, "principal": "b"})
    ]


def test_rotate_issues_a_new_secret_and_revokes_the_old_one(admin: Admin) -> None:
    old = admin.json(
        "credentials", "create", "--kind", "service", "--principal", "face", "--scope", "gateway"
    )
    rotated = admin.json("credentials", "rotate", old["credential"]["id"])
    assert rotated["revoked_id"] == old["credential"]["id"]
    assert rotated["secret"] != old["secret"]
    new = rotated["credential"]
    assert (new["kind"], new["principal"], new["scopes"]) == ("service", "face", ["gateway"])
    states = {c["id"]: c["state"] for c in admin.json("credentials", "list", "--all")}
    assert states == {old["credential"]["id"]: "revoked", new["id"]: "active"}
    assert [e["action"] for e in admin.json("audit")] == ["credential.rotate", "credential.create"]


def test_list_filters_by_principal_and_kind(admin: Admin) -> None:
    for kind, principal in (("client", "alice"), ("hand", "alice"), ("client", "bob")):
        admin.run("credentials", "create", "--kind", kind, "--principal", principal)
    assert {c["kind"] for c in admin.json("credentials", "list", "--principal", "alice")} == {
        "client",
        "hand",
    }
    assert {c["principal"] for c in admin.json("credentials", "list", "--kind", "client")} == {
        "alice",
        "bob",
    }


def test_bad_input_exits_non_zero_and_changes_nothing(admin: Admin) -> None:
    result = admin.run(
        "credentials", "create", "--kind", "client", "--principal", "has space", ok=False
    )
    assert "invalid principal" in result.stderr
    result = admin.run(
        "credentials",
        "create",
        "--kind",
        "client",
        "--principal",
        "p",
        "--expires",
        "2020-01-01T00:00Z",
        ok=False,
    )
    assert "in the past" in result.stderr
    result = admin.run(
        "credentials",
        "create",
        "--kind",
        "client",
        "--principal",
        "p",
        "--expires",
        "soon",
        ok=False,
    )
    assert "neither a time" in result.stderr
    assert "no credential with id" in admin.run("credentials", "show", "nope", ok=False).stderr
    assert admin.json("credentials", "list", "--all") == []
    assert admin.json("audit") == []


def test_audit_filters_by_action_prefix_target_and_time(admin: Admin) -> None:
    first = admin.json("credentials", "create", "--kind", "client", "--principal", "a")
    admin.run("credentials", "revoke", first["credential"]["id"])
    admin.run("credentials", "create", "--kind", "client", "--principal", "b")
    assert len(admin.json("audit", "--action", "credential.")) == 3
    assert len(admin.json("audit", "--action", "credential.revoke")) == 1
    targeted = admin.json("audit", "--target", first["credential"]["id"])
    assert [e["action"] for e in targeted] == ["credential.revoke", "credential.create"]
    assert len(admin.json("audit", "--limit", "1")) == 1
    assert admin.json("audit", "--since", "2999-01-01T00:00Z") == []
    assert len(admin.json("audit", "--since", "1h")) == 3


def test_conversations_list_show_and_delete(admin: Admin) -> None:
    upgrade(admin.store_url)
    seed_conversations(admin.store_url)
    listed = admin.json("conversations", "list")
    assert [c["key"] for c in listed] == ["p_bob", "g_team"]
    team = listed[1]
    assert (team["owner"], team["title"], team["members"]) == ("alice", "Team", ["bob"])
    assert team["last_event_id"] > 0
    assert [c["key"] for c in admin.json("conversations", "list", "--owner", "alice")] == ["g_team"]
    shown = admin.json("conversations", "show", "g_team")
    assert (shown["messages"], shown["runs"], shown["tool_calls"], shown["approvals"]) == (
        3,
        1,
        1,
        1,
    )
    deleted = admin.json("conversations", "delete", "g_team", "--yes")
    assert deleted == {"key": "g_team", "removed": TEAM_ROWS}
    assert [c["key"] for c in admin.json("conversations", "list")] == ["p_bob"]
    assert admin.json("conversations", "show", "p_bob")["messages"] == 1
    (entry,) = admin.json("audit", "--action", "conversation.delete")
    assert entry["target"] == "g_team" and entry["details"]["removed"] == TEAM_ROWS
    with connect(admin.store_url) as db:
        for table in TEAM_ROWS:
            column = "key" if table == "conversations" else "conversation_key"
            if table in ("tasks", "task_transitions"):
                continue
            count = db.execute(
                f"SELECT count(*) FROM {table} WHERE {column} = 'g_team'"
            ).fetchall()[0][0]
            assert count == 0, table
        assert db.execute("SELECT count(*) FROM tasks").fetchall()[0][0] == 0
        assert db.execute("SELECT count(*) FROM task_transitions").fetchall()[0][0] == 0


def test_unknown_conversation_and_missing_confirmation_are_refused(admin: Admin) -> None:
    assert (
        "no conversation with key"
        in admin.run("conversations", "show", "p_nobody", ok=False).stderr
    )
    upgrade(admin.store_url)
    seed_conversations(admin.store_url)
    result = admin.run("conversations", "delete", "g_team", ok=False)
    assert "--yes" in result.output
    assert admin.json("conversations", "show", "g_team")["messages"] == 3


def test_deleting_a_conversation_with_a_running_run_is_refused(admin: Admin) -> None:
    upgrade(admin.store_url)
    seed_conversations(admin.store_url)
    with connect(admin.store_url) as db:
        db.execute(
            'INSERT INTO runs (id, conversation_key, state, "trigger", detail_mode, permissions,'
            " reason, steps, usage, started_at) VALUES ('run_live', 'p_bob', 'running', 'user',"
            " 'summary', '{}', '', 0, '{}', '2026-09-10 14:00:30')"
        )
    result = admin.run("conversations", "delete", "p_bob", "--yes", ok=False)
    assert "running run" in result.stderr
    assert admin.json("conversations", "show", "p_bob")["runs"] == 1


def test_compacting_offline_is_refused_naming_the_mind_it_needs(admin: Admin) -> None:
    upgrade(admin.store_url)
    seed_conversations(admin.store_url)
    result = admin.run("conversations", "compact", "g_team", ok=False)
    assert (
        "Error: compacting needs the running Mind, which calls the model: start it (`tobe up`) "
        "and run this again"
    ) in result.stderr
    assert admin.json("conversations", "show", "g_team")["messages"] == 3
    assert admin.json("audit") == []
