"""The recall index after a crash, through a real Mind on each store: the Mind is killed
(SIGKILL) while turns are still flowing and the indexer's cursor is behind the outbox; after
the restart every message is indexed exactly once and found by the search."""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.eventually import eventually
from helpers.mind_gateway import Gateway
from helpers.mind_process import MindProcess, running_mind
from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import Engine

from mind.recall.indexer import CURSOR
from mind.store import models
from tobe.v1 import mind_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.pg_e2e]
CONVERSATIONS = 12
TURNS = 5
ATTEMPTS = 20
SCRIPT = {"runs": [{"match": ".*", "steps": [{"text": "Noted."}]}]}


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")  # JSON is YAML
    with running_mind(tmp_path, script=script) as process:
        yield process


@pytest.fixture
def store(mind: MindProcess) -> Iterator[Engine]:
    engine = create_engine(mind.url)
    try:
        yield engine
    finally:
        engine.dispose()


def _behind(engine: Engine) -> tuple[int, int]:
    """(the indexer's cursor, the outbox's head)."""
    with engine.connect() as connection:
        cursor = connection.scalar(select(models.Cursor.value).where(models.Cursor.name == CURSOR))
        head = connection.scalar(select(func.max(models.OutboxEvent.id)))
    return cursor or 0, head or 0


def _index_counts(engine: Engine) -> tuple[dict[str, int], set[str]]:
    """How often each message is indexed, and the user and assistant messages stored."""
    with engine.connect() as connection:
        indexed = dict(
            connection.execute(
                select(models.RecallEntry.ref, func.count())
                .where(models.RecallEntry.source == "message")
                .group_by(models.RecallEntry.ref)
            ).all()
        )
        stored = connection.scalars(
            select(models.Message.id).where(models.Message.role.in_(("user", "assistant")))
        )
        return indexed, {str(message_id) for message_id in stored}


def _settled(engine: Engine) -> bool:
    """Whether every queued input was taken and no run is running (the one a kill left
    running ends interrupted at the start; the inputs queued behind it run then)."""
    with engine.connect() as connection:
        queued = connection.scalar(select(func.count()).where(models.Input.state == "queued"))
        running = connection.scalar(select(func.count()).where(models.Run.state == "running"))
    return queued == 0 and running == 0


def test_after_a_kill_while_the_indexer_is_behind_every_message_is_indexed_once(
    mind: MindProcess, store: Engine
) -> None:
    gateway = Gateway.connect(mind)
    keys = [gateway.create(f"p_{uuid.uuid4().hex[:12]}") for _ in range(CONVERSATIONS)]
    turns = 0
    for _attempt in range(ATTEMPTS):
        for n, key in enumerate(keys):
            gateway.send(key, f"turn {turns} word{n}x{turns}", uuid.uuid4().hex)
        turns += 1
        # Frozen, the Mind's state is what the kill leaves: kill it only when the indexer is
        # behind (every send was acknowledged, so durable; runs may still be going).
        assert mind.process is not None
        os.kill(mind.process.pid, signal.SIGSTOP)
        cursor, head = _behind(store)
        if turns >= TURNS and cursor < head:
            mind.kill()
            break
        os.kill(mind.process.pid, signal.SIGCONT)
    else:
        raise AssertionError(f"the indexer caught up after each of {ATTEMPTS} rounds of sends")
    gateway.close()

    mind.start()
    gateway = Gateway.connect(mind)
    try:
        eventually(lambda: _settled(store), what="every queued turn run", timeout=60)

        def complete() -> tuple[dict[str, int], set[str]]:
            return _index_counts(store)

        indexed, stored = eventually(
            complete,
            until=lambda found: set(found[0]) == found[1],
            what="every user and assistant message indexed",
            timeout=60,
        )
        assert set(indexed.values()) == {1}
        for n in (0, CONVERSATIONS - 1):
            request = mind_pb2.SearchConversationsRequest(
                on_behalf_of=gateway.who("alice"), query=f"word{n}x{turns - 1}"
            )
            found = gateway.stub.SearchConversations(request, metadata=gateway.md, timeout=10)
            assert [m.conversation.key for m in found.matches] == [keys[n]]
    finally:
        gateway.close()
