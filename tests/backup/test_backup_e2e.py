"""`tobe backup` of a Mind that is writing a conversation, restored and served by a new Mind;
`tobe backup` and a refused `tobe restore` under `tobe up`.

A restored store is consistent when it is the state of one commit of the Mind: SQLite finds it
sound, every message acknowledged before the backup began is in it, the person's messages are
a prefix of those sent (none lost in between, none twice), and every run it recorded as
completed has its reply. A run it recorded as running is ended by the new Mind at its start,
as after a crash; then the conversation settles, and answers a new message.
"""

from __future__ import annotations

import sqlite3
import tarfile
import threading
from pathlib import Path

import pexpect
import pytest
from backup_cli import cli_env, tobe, tobe_here, tree
from helpers.eventually import eventually
from helpers.mind_gateway import SCRIPT, Gateway
from helpers.mind_process import MindProcess, mind_env, running_mind
from helpers.up_process import chat_once, spawn, up_env

from mind.management import provision
from tobe.config import Settings
from tobe.runtime.addresses import published
from tobe.v1 import common_pb2

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.sqlite_store(reason="backs up and restores the SQLite store file"),
]

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
    """The data directory's files, but what the running services write themselves: logs not
    at all, databases only by name."""
    return {
        path: (mode, "" if ".db" in Path(path).name else digest)
        for path, (mode, digest) in tree(data_dir).items()
        if not path.startswith("logs")
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


def test_under_tobe_up_the_backup_holds_every_service_s_state_and_restore_is_refused(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    env = up_env(data_dir, listen=False)
    up = spawn(["up", "--port-base", "0", "--no-web"], env)
    try:
        up.expect("ToBe is up.")
        chat_once(env, "hello")
        archive = tmp_path / "backup.tar.gz"
        result = tobe(env, "backup", str(archive))
        assert result.returncode == 0, result.stderr
        running = published(data_dir)
        assert {"mind", "face", "awareness"} <= set(running)
        before = _files(data_dir)

        refused = tobe(env, "restore", "--force", str(archive))

        assert refused.returncode == 1
        listing = ", ".join(f"{name} (pid {entry.pid})" for name, entry in sorted(running.items()))
        assert refused.stderr == (
            f"Error: ToBe is running on {data_dir}: {listing}, per {data_dir / 'runtime.json'}; "
            "stop it (Ctrl-C in `tobe up`) and run tobe restore again\n"
        )
        assert _files(data_dir) == before
        up.kill(2)
        up.expect(pexpect.EOF, timeout=60)
    finally:
        up.close(force=True)

    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    tokens = {f"data/credentials/{name}.token" for name in ("awareness", "client", "face", "hand")}
    assert tokens | {"store.db", "data/awareness/journal.db", "data/workspace"} <= names
    runtime = [n for n in names if n.startswith(("data/logs", "data/runtime"))]
    assert runtime + [n for n in names if n.endswith(("-wal", "-shm", ".sock", ".lock"))] == []

    restored = tmp_path / "restored"
    result = tobe_here(cli_env(restored, tmp_path / "none.toml"), "restore", str(archive))
    assert result.returncode == 0, result.stderr
    assert tree(restored / "credentials") == tree(data_dir / "credentials")
    journal = sqlite3.connect(restored / "awareness" / "journal.db")
    assert journal.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    journal.close()
    store = sqlite3.connect(restored / "tobe.db")
    texts = [row[0] for row in store.execute("SELECT text FROM messages WHERE role = 'user'")]
    store.close()
    assert texts == ["hello"]
