"""`tobe backup` of a Mind that is writing a conversation, restored and served by a new Mind;
`tobe restore` refused beside a running Mind.

A restored store is consistent when it is the state of one commit of the Mind: SQLite finds it
sound, every message acknowledged before the backup began is in it, the person's messages are
a prefix of those sent (none lost in between, none twice), and every run it recorded as
completed has its reply. A run it recorded as running is ended by the new Mind at its start,
as after a crash; then the conversation settles, and answers a new message.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import grpc
import pytest
from backup_cli import cli_env, tobe, tobe_here, tree
from helpers.eventually import eventually
from helpers.mind_gateway import SCRIPT, Gateway
from helpers.mind_process import MindProcess, mind_env, running_mind

from mind.management import provision
from tobe.config import Settings
from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e

KEY = "p_backup"
SENDS_BEFORE_BACKUP = 5


class Sender:
    """Sends m0, m1, … to the conversation, one after the other, until stopped."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.acknowledged = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stopped.is_set():
            n = self.acknowledged
            self.gateway.send(KEY, f"m{n}", f"idem-{n}")
            self.acknowledged = n + 1

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(30)


def _store_is_one_commit(database: Path) -> None:
    store = sqlite3.connect(database)
    try:
        assert store.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert store.execute("PRAGMA foreign_key_check").fetchall() == []
        unanswered = store.execute(
            "SELECT id FROM runs WHERE state = 'completed' AND id NOT IN "
            "(SELECT run_id FROM messages WHERE role = 'assistant' AND text = 'echo')"
        ).fetchall()
        assert unanswered == []
    finally:
        store.close()


def _files(data_dir: Path) -> dict[str, tuple[int, str]]:
    """The data directory's files; the store's only by name, since the Mind may write it."""
    return {
        path: (mode, "" if path.startswith("tobe.db") else digest)
        for path, (mode, digest) in tree(data_dir).items()
    }


def _user_texts(gateway: Gateway) -> list[str]:
    messages = gateway.history(KEY).messages
    return [m.text for m in messages if m.role == common_pb2.MESSAGE_ROLE_USER]


def _settled(gateway: Gateway) -> bool:
    snapshot = gateway.snapshot(KEY)
    return not snapshot.HasField("active_run") and not snapshot.queued


def test_a_backup_taken_while_a_conversation_is_written_restores_a_store_a_new_mind_serves(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    provision(Settings(data_dir=tmp_path / "data", database_url=""))
    with running_mind(tmp_path, script=script) as mind:
        gateway = Gateway.connect(mind)
        gateway.create(KEY)
        sender = Sender(gateway)
        sender.thread.start()
        try:
            eventually(
                lambda: sender.acknowledged,
                until=lambda n: n >= SENDS_BEFORE_BACKUP,
                what="messages acknowledged",
            )
            acknowledged_before = sender.acknowledged
            archive = tmp_path / "backup.tar.gz"
            result = tobe(cli_env(mind.data_dir, tmp_path / "none.toml"), "backup", str(archive))
            assert result.returncode == 0, result.stderr
            assert sender.thread.is_alive(), "the sender stopped while the backup ran"
        finally:
            sender.stop()
            gateway.close()
        sent = sender.acknowledged
        gateway_token = mind.gateway_token

    restored = tmp_path / "restored"
    restoring = tobe_here(cli_env(restored, tmp_path / "none.toml"), "restore", str(archive))
    assert restoring.returncode == 0, restoring.stderr
    _store_is_one_commit(restored / "tobe.db")
    original_files = tree(tmp_path / "data" / "credentials")
    assert tree(restored / "credentials") == original_files

    # The credential the gateway used is in the restored store: the new Mind accepts it.
    new_mind = MindProcess(restored, mind_env(restored, script), gateway_token, {})
    try:
        new_mind.start()
        gateway = Gateway.connect(new_mind)
        try:
            eventually(lambda: _settled(gateway), what="the restored conversation settled")
            texts = _user_texts(gateway)
            count = len(texts)
            assert acknowledged_before <= count <= sent
            assert texts == [f"m{n}" for n in range(count)]
            assert count < sent, "the backup saw every message: it ran after the sender"

            gateway.send(KEY, "after the restore", "idem-after")
            eventually(
                lambda: [m.text for m in gateway.history(KEY).messages][-2:],
                until=lambda last: last == ["after the restore", "echo"],
                what="the reply to a message sent after the restore",
            )
        finally:
            gateway.close()
    finally:
        new_mind.kill()


def test_restore_refuses_while_the_mind_runs_and_changes_nothing(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(tmp_path, script=script) as mind:
        env = cli_env(mind.data_dir, tmp_path / "none.toml")
        archive = tmp_path / "backup.tar.gz"
        assert tobe_here(env, "backup", str(archive)).returncode == 0
        before = _files(mind.data_dir)

        result = tobe(env, "restore", "--force", str(archive))

        assert result.returncode == 1
        assert result.stderr == (
            f"Error: ToBe is running on {mind.data_dir}: mind (pid {mind.process.pid}), per "
            f"{mind.data_dir / 'runtime.json'}; stop it (Ctrl-C in `tobe up`) and run tobe "
            "restore again\n"
        )
        assert _files(mind.data_dir) == before
        gateway = Gateway.connect(mind)
        try:
            gateway.create("p_still_served")
        except grpc.RpcError as error:
            pytest.fail(f"the Mind stopped serving: {error}")
        finally:
            gateway.close()
