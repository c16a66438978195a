"""What a summary records about the conversation's environment, read from a real store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mind.context.environment import environment_summary
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx

KEY = "p_env"


async def test_the_environment_names_the_hand_waiting_approvals_open_tasks_and_observations(
    database: Database,
) -> None:
    now = datetime.now(UTC)

    def unit(tx: WriteTx) -> None:
        session = tx.session
        session.add(models.Conversation(key=KEY, owner="alice", active_hand="laptop"))
        session.flush()
        session.add_all(
            [
                models.Approval(
                    id="ap_1",
                    conversation_key=KEY,
                    run_id="run_1",
                    tool_call_id="call_1",
                    tool="run_command",
                    effect="external_side_effect",
                    arguments_digest="0" * 64,
                    decision_text="run `make deploy` in ~/site",
                    expires_at=now + timedelta(minutes=5),
                ),
                models.Approval(
                    id="ap_2",
                    conversation_key=KEY,
                    run_id="run_1",
                    tool_call_id="call_2",
                    tool="write_file",
                    effect="workspace_write",
                    arguments_digest="0" * 64,
                    decision_text="decided already",
                    expires_at=now,
                    decision="deny",
                ),
                models.RemoteRun(id="rr_1", conversation_key=KEY, hand_name="laptop"),
            ]
        )
        session.flush()
        session.add_all(
            [
                models.Task(
                    id="t_1",
                    remote_run_id="rr_1",
                    tool_call_id="call_3",
                    hand_name="laptop",
                    tool="backup",
                    state="accepted",
                ),
                models.Task(
                    id="t_2",
                    remote_run_id="rr_1",
                    tool_call_id="call_4",
                    hand_name="laptop",
                    tool="list_files",
                    state="succeeded",
                ),
                models.Input(
                    conversation_key=KEY,
                    idempotency_key="obs-1",
                    principal="alice",
                    text="a new mail from Bob",
                    source={"kind": "observation", "adapters": ["mail"]},
                ),
                models.Input(
                    conversation_key=KEY,
                    idempotency_key="said-1",
                    principal="alice",
                    text="a queued follow-up",
                ),
            ]
        )

    await database.write(unit)
    text = await database.read(lambda session: environment_summary(session, KEY))

    assert text.splitlines() == [
        "Active Hand: laptop",
        "Approvals waiting for a decision (1):",
        "- run_command: run `make deploy` in ~/site",
        "Hand tasks still open (1):",
        "- backup on laptop (accepted)",
        "Observations not yet delivered (1):",
        "- mail: a new mail from Bob",
    ]


async def test_a_quiet_conversation_has_no_environment(database: Database) -> None:
    await database.write(lambda tx: tx.session.add(models.Conversation(key=KEY, owner="alice")))
    assert await database.read(lambda session: environment_summary(session, KEY)) == ""
