"""Owners and operators list, pause, resume and delete scheduled actions, against real Mind and
Face processes: `tobe chat` (`/schedules`, `/pause`), Face's `change_schedule` (owner only),
and `tobe admin schedules` online and offline, audited.

The actions are seeded with `records.create_schedule` straight into the store before the Mind
starts (nothing else has it open then)."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pexpect
import pytest
from click.testing import CliRunner
from helpers import store_backend
from helpers.face_client import FaceClient
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, issue_token, mind_env, store_url

from mind.events.action_views import PlanStepView, TriggerKind, TriggerView
from mind.scheduler.records import create_schedule
from mind.store import models
from mind.store.database import Database
from mind.store.migrate import upgrade
from mind.store.write_tx import WriteTx
from tobe.cli import main
from tobe.v1 import common_pb2, face_pb2

pytestmark = pytest.mark.e2e
KEY = "g_sched"
PROMPT = "you› "
NOW = datetime.now(UTC)
# Paris: the owner's zone; 2030-01-15 09:00 Paris is 08:00 UTC.
AT = datetime(2030, 1, 15, 8, 0, tzinfo=UTC)


def _trigger(title: str) -> TriggerView:
    if title == "cron":
        return TriggerView(TriggerKind.CRON, "Europe/Paris", cron="0 9 * * 1-5")
    if title == "at":
        return TriggerView(TriggerKind.AT, "Europe/Paris", at=AT)
    return TriggerView(TriggerKind.INTERVAL, "Europe/Paris", every_seconds=7200)


def _seed(url: str, titles: list[str]) -> dict[str, str]:
    """`g_sched` (owner alice, member bob) with one action per title; their ids by title."""

    async def seed() -> dict[str, str]:
        database = Database.open(url)
        try:

            def conversation(tx: WriteTx) -> None:
                tx.session.add(models.Conversation(key=KEY, owner="alice", title="plans"))
                tx.session.flush()
                tx.session.add(models.ConversationMember(conversation_key=KEY, principal="bob"))

            await database.write(conversation)
            ids = {}
            for title in titles:
                view = await database.write(
                    lambda tx, title=title: create_schedule(
                        tx,
                        conversation_key=KEY,
                        owner="alice",
                        audience=["alice", "bob"],
                        title=title,
                        goal=f"the {title} goal",
                        plan=(PlanStepView(1, "send_message", "say it"),),
                        trigger=_trigger(title.split("-")[0]),
                        source="seed",
                        now=NOW,
                    )
                )
                ids[title] = view.id
            return ids
        finally:
            await database.close()

    return asyncio.run(seed())


class Stack:
    def __init__(self, mind: MindProcess, ids: dict[str, str]) -> None:
        self.mind = mind
        self.ids = ids


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    # Short, so the Management socket's path stays below the Unix limit.
    root = Path(tempfile.mkdtemp(prefix="tsch-"))
    data_dir = root / "data"
    data_dir.mkdir()
    url = store_url(data_dir)
    upgrade(url)
    ids = _seed(url, ["interval-chat", "cron", "at", "interval-online", "interval-offline"])
    gateway = issue_token(url, kind="service", principal="face", scopes=["gateway"])
    tokens = {
        name: issue_token(url, kind="client", principal=name, scopes=["chat"])
        for name in ("alice", "bob")
    }
    mind = MindProcess(data_dir, mind_env(data_dir, None), gateway, tokens)
    try:
        mind.start()
        yield Stack(mind, ids)
    finally:
        mind.kill()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def face(stack: Stack) -> Iterator[FaceProcess]:
    with running_face(stack.mind) as process:
        yield process


class Admin:
    """`tobe admin` in this process against the Mind's data directory (online while the Mind
    runs, offline under the state lock otherwise)."""

    def __init__(self, data_dir: Path) -> None:
        self._env = {
            "TOBE_DATA_DIR": str(data_dir),
            "TOBE_CONFIG": str(data_dir / "absent.toml"),
            **store_backend.environment(data_dir),
        }

    def run(self, *args: str, ok: bool = True) -> str:
        result = CliRunner().invoke(main, ["admin", *args], env=self._env)
        assert (result.exit_code == 0) == ok, (result.output, result.exception)
        return result.output

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json"))


def test_chat_lists_the_schedules_in_the_owners_zone_and_pauses_one(
    stack: Stack, face: FaceProcess
) -> None:
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", face.address, "--conversation", KEY],
        env={**face.env, "TOBE_CHAT_TOKEN": stack.mind.client_tokens["alice"], "TERM": "xterm"},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    chat.logfile_read = io.StringIO()
    target = stack.ids["interval-chat"]
    try:
        chat.expect(PROMPT)
        chat.sendline("/help")
        chat.expect("/unschedule <id>")
        chat.expect(PROMPT)
        chat.sendline("/schedules")
        chat.expect(f"{stack.ids['at']}  at · at 2030-01-15 09:00 Europe/Paris")
        chat.expect(PROMPT)
        chat.sendline(f"/pause {target}")
        chat.expect(f"schedule {target} \\(interval-chat\\): paused")
        chat.expect(PROMPT)
        chat.sendline("/schedules")
        chat.expect(f"{target}  interval-chat · every 2 h · paused")
        chat.expect(PROMPT)
        chat.sendline("/pause sch_nope")
        chat.expect("no scheduled action 'sch_nope'")
        chat.sendline("/quit")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)
    log = chat.logfile_read.getvalue()
    assert f"{stack.ids['cron']}  cron · on cron '0 9 * * 1-5' (Europe/Paris) · next " in log
    # The reply and the event of the pause say the same: one line.
    assert log.count(f"schedule {target} (interval-chat): paused") == 1


async def test_through_face_only_the_owner_changes_a_schedule_and_members_hear_of_it(
    stack: Stack, face: FaceProcess
) -> None:
    target = stack.ids["cron"]
    alice = await FaceClient.connect(face.address, stack.mind.client_tokens["alice"])
    bob = await FaceClient.connect(face.address, stack.mind.client_tokens["bob"])
    try:
        await bob.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        refused = await bob.command(
            change_schedule=face_pb2.ChangeScheduleCommand(
                schedule_id=target, change=common_pb2.SCHEDULE_CHANGE_PAUSE
            )
        )
        paused = await alice.command(
            change_schedule=face_pb2.ChangeScheduleCommand(
                schedule_id=target, change=common_pb2.SCHEDULE_CHANGE_PAUSE
            )
        )
        unknown = await alice.command(
            change_schedule=face_pb2.ChangeScheduleCommand(
                schedule_id="sch_unknown", change=common_pb2.SCHEDULE_CHANGE_PAUSE
            )
        )
        again = await alice.command(
            change_schedule=face_pb2.ChangeScheduleCommand(
                schedule_id=target, change=common_pb2.SCHEDULE_CHANGE_PAUSE
            )
        )
        heard = await bob.wait_event(
            lambda e: (
                e.HasField("schedule_changed")
                and e.schedule_changed.id == target
                and e.schedule_changed.state == common_pb2.SCHEDULE_STATE_PAUSED
            )
        )
        resumed = await alice.command(
            change_schedule=face_pb2.ChangeScheduleCommand(
                schedule_id=target, change=common_pb2.SCHEDULE_CHANGE_RESUME
            )
        )
    finally:
        await alice.close()
        await bob.close()
    assert refused.error.code == grpc.StatusCode.PERMISSION_DENIED.value[0]
    assert paused.change_schedule.scheduled.state == common_pb2.SCHEDULE_STATE_PAUSED
    assert not paused.change_schedule.scheduled.HasField("next_fire_at")
    assert unknown.error.code == grpc.StatusCode.NOT_FOUND.value[0]
    assert again.error.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    assert heard.conversation_key == KEY
    # Resumed: due again at the next weekday 09:00 in Paris.
    scheduled = resumed.change_schedule.scheduled
    assert scheduled.state == common_pb2.SCHEDULE_STATE_ACTIVE
    next_fire = scheduled.next_fire_at.ToDatetime(tzinfo=UTC)
    assert next_fire > datetime.now(UTC) and next_fire.minute == 0


def test_the_operator_lists_pauses_and_resumes_online_with_audit_rows(stack: Stack) -> None:
    admin = Admin(stack.mind.data_dir)
    target = stack.ids["interval-online"]
    listed = {a["id"]: a for a in admin.json("schedules", "list", "--conversation", KEY)}
    paused = admin.json("schedules", "pause", target)
    resumed = admin.json("schedules", "resume", target)
    table = admin.run("schedules", "list")
    audited = admin.json("audit", "--action", "schedule.", "--target", target)

    assert listed[stack.ids["at"]]["next_local"] == "2030-01-15 09:00 Europe/Paris"
    assert listed[target]["trigger"] == "every 2 h" and listed[target]["state"] == "active"
    assert paused["state"] == "paused" and paused["next_fire_at"] is None
    assert resumed["state"] == "active" and resumed["next_fire_at"]
    assert target in table and "every 2 h" in table
    assert sorted(e["action"] for e in audited) == ["schedule.pause", "schedule.resume"]
    assert all(e["details"]["conversation_key"] == KEY for e in audited)
    assert "online" in admin.run("schedules", "list", "-v")
    assert "no scheduled action" in admin.run("schedules", "pause", "sch_nope", ok=False)


def test_the_operator_deletes_offline_and_the_restarted_mind_shows_it_deleted(
    stack: Stack,
) -> None:
    target = stack.ids["interval-offline"]
    stack.mind.terminate()
    admin = Admin(stack.mind.data_dir)
    try:
        assert "offline" in admin.run("status")
        deleted = admin.json("schedules", "delete", target)
        refused = admin.run("schedules", "resume", target, ok=False)
        (audited,) = admin.json("audit", "--action", "schedule.delete", "--target", target)
        active = [a["id"] for a in admin.json("schedules", "list")]
        everything = {a["id"]: a["state"] for a in admin.json("schedules", "list", "--all")}
    finally:
        stack.mind.start()
    assert deleted["state"] == "deleted"
    assert "cannot resume" in refused and "it is deleted" in refused
    assert audited["details"] == {"conversation_key": KEY, "state": "deleted"}
    assert target not in active and everything[target] == "deleted"
    online = {
        a["id"]: a["state"] for a in Admin(stack.mind.data_dir).json("schedules", "list", "--all")
    }
    assert online[target] == "deleted"
