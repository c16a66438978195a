"""A parent whose conversation this Mind no longer owns (its lease went to another Mind on a
shared store) stops without cancelling its children: the child runs on to its end, which the
new owner's continuation of the call takes. A whole Mind built in-process with the Scripted
model; the lease loss is the pool's `lost`, as the lease keeper calls it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select

from mind.conversation import delegations
from mind.conversation.access import Viewer
from mind.scripted.provider import ScriptedProvider
from mind.server import MindApp, build
from mind.store import models
from mind.store.migrate import upgrade
from mind.tools.base import DetailMode
from tobe.config import load_settings

PARENT = "p_parent"
SCRIPT = {
    "runs": [
        {
            "match": "^delegate slow$",
            "steps": [
                {"tool_calls": [{"name": "delegate", "arguments": {"task": "slow child"}}]},
                {"text": "Parent done."},
            ],
        },
        {"match": "^slow child$", "steps": [{"delay": 2, "text": "Child answer."}]},
    ]
}


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[MindApp]:
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    upgrade(f"sqlite:///{tmp_path / 'tobe.db'}")
    built = build(load_settings(data_dir=tmp_path), ScriptedProvider.from_file(script))
    await built.manager.actors.recover()
    for hook in built.on_start:
        await hook()
    try:
        yield built
    finally:
        await built.close(None)


async def _until(
    app: MindApp, check: Callable[[models.Delegation], bool], what: str
) -> models.Delegation:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        row = await app.database.read(lambda s: s.scalar(select(models.Delegation)))
        if row is not None and check(row):
            return row
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_parent_that_loses_its_lease_leaves_its_child_running(app: MindApp) -> None:
    viewer = Viewer(principal="alice")
    await app.manager.conversations.create(viewer, PARENT, "", [])
    await app.manager.messages.send(
        viewer, PARENT, "delegate slow", "k1", False, DetailMode.TRANSPARENT
    )

    row = await _until(app, lambda r: r.state == delegations.RUNNING, "the child to start")
    await app.manager.actors.lost(PARENT)

    parent_runs = await app.database.read(
        lambda s: list(
            s.scalars(select(models.Run.state).where(models.Run.conversation_key == PARENT))
        )
    )
    assert parent_runs == ["interrupted"]
    ended = await _until(app, lambda r: r.state != delegations.RUNNING, "the child to end")
    assert (ended.state, ended.result) == (delegations.SUCCEEDED, "Child answer.")
    assert ended.child_key == row.child_key
