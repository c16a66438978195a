"""Approvals end to end: a real Mind process, a real Hand (SDK) and a gateway client."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from approval_e2e import (
    SCRIPT,
    SECRET_PIN,
    Client,
    HandThread,
    approvals_in,
    finished_runs,
    pending_approval,
    run_ended,
)
from helpers.face_process import running_face
from helpers.mind_process import MindProcess, issue_token, running_mind
from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.approvals.broker import ApprovalBroker
from mind.store.database import Database
from mind.store.models import Approval, ApprovalAudit
from mind.tools.authorizer import Decision
from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e

APPROVE_ONCE = common_pb2.APPROVAL_DECISION_APPROVE_ONCE
DENY = common_pb2.APPROVAL_DECISION_DENY


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory, module_store: str) -> Iterator[MindProcess]:
    """One Mind for the module; the crash tests kill and restart it on the same address."""
    root = tmp_path_factory.mktemp("approvals")
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(root, script=script) as process:
        yield process


@pytest.fixture(scope="module")
def hand(mind: MindProcess) -> Iterator[HandThread]:
    # The Hand serves both people whose conversations these tests drive.
    token = issue_token(
        mind.url, kind="hand", principal="laptop", scopes=["serve:alice", "serve:carol"]
    )
    worker = HandThread(mind.address, token)
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()


@pytest.fixture
def client(mind: MindProcess, hand: HandThread) -> Iterator[Client]:
    hand.executions.clear()
    gateway = Client(mind.address, mind.gateway_metadata)
    try:
        yield gateway
    finally:
        gateway.close()


def stored(url: str) -> tuple[list[Approval], list[ApprovalAudit]]:
    def query(session: Session) -> tuple[list[Approval], list[ApprovalAudit]]:
        return list(session.scalars(select(Approval))), list(session.scalars(select(ApprovalAudit)))

    async def read() -> tuple[list[Approval], list[ApprovalAudit]]:
        database = Database.open(url)
        try:
            return await database.read(query)
        finally:
            await database.close()

    return asyncio.run(read())


def tool_results(client: Client, key: str) -> list[str]:
    return [m.text for m in client.history(key).messages if m.role == common_pb2.MESSAGE_ROLE_TOOL]


def test_write_pauses_until_approved_then_runs_exactly_once(
    mind: MindProcess, hand: HandThread, client: Client
) -> None:
    client.create("p_approve")
    client.send("p_approve", "save-approve please")
    events = client.wait_for(pending_approval("p_approve"))
    [request] = approvals_in(events, "p_approve")
    assert request.tool == "laptop__save_note"
    assert request.effect == common_pb2.EFFECT_CLASS_WORKSPACE_WRITE
    assert hand.executions == []

    # Two deciders at the same moment: exactly one decision wins.
    outcomes: list[object] = []

    def decide(decision: int) -> None:
        try:
            outcomes.append(client.decide(request.id, decision))
        except grpc.RpcError as exc:
            outcomes.append(exc.code())

    threads = [threading.Thread(target=decide, args=(d,)) for d in (APPROVE_ONCE, APPROVE_ONCE)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(map(str, outcomes)).count(str(grpc.StatusCode.FAILED_PRECONDITION)) == 1
    [approval] = [o for o in outcomes if isinstance(o, common_pb2.Approval)]
    assert approval.decision == APPROVE_ONCE

    events = client.wait_for(run_ended("p_approve"))
    assert [r.state for r in finished_runs(events, "p_approve")] == [common_pb2.RUN_STATE_COMPLETED]
    assert hand.executions == [{"name": "a.txt", "text": "hello"}]
    assert tool_results(client, "p_approve") == ["saved a.txt"]
    with pytest.raises(grpc.RpcError) as later:
        client.decide(request.id, DENY)
    assert later.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_deny_returns_the_reason_to_the_model(
    mind: MindProcess, hand: HandThread, client: Client
) -> None:
    client.create("p_deny")
    client.send("p_deny", "save-deny please")
    [request] = approvals_in(client.wait_for(pending_approval("p_deny")), "p_deny")
    client.decide(request.id, DENY, reason="not today")
    events = client.wait_for(run_ended("p_deny"))
    # The script's second step expects the reason in the tool result: completed proves it.
    assert [r.state for r in finished_runs(events, "p_deny")] == [common_pb2.RUN_STATE_COMPLETED]
    assert hand.executions == []
    [result] = tool_results(client, "p_deny")
    assert "denied by alice: not today" in result


def test_deciding_needs_the_approve_scope_and_visibility(
    mind: MindProcess, hand: HandThread, client: Client
) -> None:
    client.create("p_scope")
    client.send("p_scope", "save-approve scoped")
    [request] = approvals_in(client.wait_for(pending_approval("p_scope")), "p_scope")
    with pytest.raises(grpc.RpcError) as no_scope:
        client.decide(request.id, APPROVE_ONCE, scopes=("chat",))
    assert no_scope.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.RpcError) as stranger:
        client.decide(request.id, APPROVE_ONCE, principal="bob")
    assert stranger.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as unspecified:
        client.decide(request.id, common_pb2.APPROVAL_DECISION_UNSPECIFIED)
    assert unspecified.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [a.id for a in client.snapshot("p_scope").pending_approvals] == [request.id]


def test_an_undefined_decision_is_invalid_argument_and_changes_nothing(
    mind: MindProcess, hand: HandThread, client: Client
) -> None:
    client.create("p_undefined")
    client.send("p_undefined", "save-approve undefined")
    [request] = approvals_in(client.wait_for(pending_approval("p_undefined")), "p_undefined")

    def recorded() -> list[tuple[str | None, str | None, int]]:
        approvals, audit = stored(mind.url)
        rows = [a for a in approvals if a.id == request.id]
        audited = len([a for a in audit if a.approval_id == request.id])
        return [(row.decision, row.decided_by, audited) for row in rows]

    before = recorded()
    for undefined in (5, 99):
        with pytest.raises(grpc.RpcError) as refused:
            client.decide(request.id, undefined)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert refused.value.details().startswith(
            f"decision: {undefined} is not a valid tobe.v1.ApprovalDecision; expected one of "
            "APPROVAL_DECISION_APPROVE_ONCE"
        )
    assert recorded() == before == [(None, None, before[0][2])]
    assert [a.id for a in client.snapshot("p_undefined").pending_approvals] == [request.id]
    assert hand.executions == []
    # Still pending and decidable: the refused calls decided nothing.
    assert client.decide(request.id, APPROVE_ONCE).decision == APPROVE_ONCE
    client.wait_for(run_ended("p_undefined"))
    assert hand.executions == [{"name": "a.txt", "text": "hello"}]


def test_sensitive_argument_stays_out_of_audit_and_logs(
    mind: MindProcess, hand: HandThread, client: Client
) -> None:
    client.create("p_secret")
    client.send("p_secret", "save-approve secretly", mode=common_pb2.DETAIL_MODE_TRANSPARENT)
    [request] = approvals_in(client.wait_for(pending_approval("p_secret")), "p_secret")
    client.decide(request.id, APPROVE_ONCE)
    client.wait_for(run_ended("p_secret"))
    approvals, audit = stored(mind.url)
    assert {row.source for row in audit} >= {"policy", "user"}
    for text in [
        *(row.summary for row in audit),
        *(row.arguments_summary for row in approvals),
        *(row.decision_reason for row in approvals),
        *(row.decision_text for row in approvals),
        request.arguments_summary,
        request.decision_text,
        *mind.output,
    ]:
        assert SECRET_PIN not in text
    assert hand.executions == [{"name": "a.txt", "text": "hello"}]


def test_chat_repl_shows_the_request_and_takes_y_inline(
    mind: MindProcess, hand: HandThread, tmp_path: Path
) -> None:
    hand.executions.clear()
    token = issue_token(mind.url, kind="client", principal="carol", scopes=["chat", "approve"])
    with running_face(mind) as face:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
        env.update(TOBE_CONFIG=str(tmp_path / "absent.toml"), TOBE_CHAT_TOKEN=token, COLUMNS="200")
        chat = subprocess.Popen(
            [sys.executable, "-m", "tobe", "chat", "--address", face.address],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: list[str] = []
        seen = threading.Condition()

        def read() -> None:
            assert chat.stdout is not None
            for line in iter(chat.stdout.readline, ""):
                with seen:
                    lines.append(line)
                    seen.notify_all()
            with seen:
                lines.append("<eof>")
                seen.notify_all()

        def wait_for(needle: str) -> None:
            with seen:
                assert seen.wait_for(
                    lambda: any(needle in line for line in lines) or "<eof>" in lines, 60
                ), f"no {needle!r} in {lines}"
                assert any(needle in line for line in lines), f"no {needle!r} in {lines}"

        threading.Thread(target=read, daemon=True).start()
        try:
            assert chat.stdin is not None
            wait_for("connected as carol")
            chat.stdin.write("save-approve from the repl\n")
            chat.stdin.flush()
            # The decision text (no template: name and arguments, the sensitive pin masked).
            wait_for('laptop__save_note {"name":"a.txt","text":"hello","pin":"[REDACTED]"}')
            chat.stdin.write("y\n")
            chat.stdin.flush()
            wait_for("saved it")
            chat.stdin.write("/quit\n")
            chat.stdin.flush()
            assert chat.wait(30) == 0
        finally:
            if chat.poll() is None:
                chat.kill()
                chat.wait(10)
    assert hand.executions == [{"name": "a.txt", "text": "hello"}]
    assert any("approved once" in line for line in lines)


def _crash(mind: MindProcess) -> None:
    mind.restart(same_address=True)


def _graceful_stop(mind: MindProcess) -> None:
    assert mind.terminate() == 0
    mind.start(mind.address)


@pytest.mark.parametrize("stop", [_crash, _graceful_stop], ids=["kill-9", "sigterm"])
def test_a_request_pending_across_a_restart_is_decided_after_it_and_the_run_continues(
    mind: MindProcess, hand: HandThread, client: Client, stop
) -> None:
    key = f"p_{stop.__name__.strip('_')}"
    client.create(key)
    client.send(key, "save-approve across a restart")
    [request] = approvals_in(client.wait_for(pending_approval(key)), key)
    stop(mind)
    assert [a.id for a in client.snapshot(key).pending_approvals] == [request.id]
    hand.restart()
    client.decide(request.id, APPROVE_ONCE)
    events = client.wait_for(run_ended(key, trigger="approval"))
    states = [(r.trigger, r.state) for r in finished_runs(events, key)]
    assert states == [
        ("user", common_pb2.RUN_STATE_INTERRUPTED),
        ("approval", common_pb2.RUN_STATE_COMPLETED),
    ]
    assert hand.executions == [{"name": "a.txt", "text": "hello"}]
    assert tool_results(client, key) == ["saved a.txt"]


@pytest.mark.pg_e2e
def test_decision_committed_just_before_the_kill_is_honoured_after_restart(
    mind: MindProcess, hand: HandThread, client: Client
) -> None:
    client.create("p_late")
    client.send("p_late", "save-approve committed late")
    [request] = approvals_in(client.wait_for(pending_approval("p_late")), "p_late")
    mind.kill()

    async def commit_decision() -> None:
        # The decision reached the store, the Mind died before the run acted on it.
        database = Database.open(mind.url)
        try:
            broker = ApprovalBroker(database, expiry=600)
            await broker.decide(request.id, Decision.APPROVE_ONCE, principal="alice")
        finally:
            await database.close()

    asyncio.run(commit_decision())
    mind.start(mind.address)
    hand.restart()
    events = client.wait_for(run_ended("p_late", trigger="approval"))
    assert [r.state for r in finished_runs(events, "p_late")][-1] == (
        common_pb2.RUN_STATE_COMPLETED
    )
    assert hand.executions == [{"name": "a.txt", "text": "hello"}]
    assert tool_results(client, "p_late") == ["saved a.txt"]
