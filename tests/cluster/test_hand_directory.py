"""The directory of attached Hands on a real PostgreSQL server: two `HandDirectory`s in one
process stand for two Minds, each with its membership (node row and LISTEN connection)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import pytest
from helpers.eventually import eventually_async
from helpers.postgres import fresh_postgres_database, postgres_server_url
from sqlalchemy import update

from mind.cluster.membership import Membership
from mind.remote.directory import HANDS_CHANNEL, HandDirectory, tool_rows, tools_of
from mind.remote.hub import HandConnection
from mind.remote.model import ToolDecl
from mind.remote.signals import SignalKind, TaskSignal, clipped
from mind.store import models
from mind.store.database import Database
from mind.store.migrate import upgrade
from mind.tools.base import Effect

pytestmark = pytest.mark.postgres
LEASE = 30.0  # long: only notifications make a directory reload in these tests

PEEK = ToolDecl("peek", "Look.", {"type": "object"}, Effect.READ_ONLY)
MARK = ToolDecl(
    "mark",
    "Mark.",
    {"type": "object", "properties": {"label": {"type": "string"}}},
    Effect.EXTERNAL_SIDE_EFFECT,
    background=True,
    decision_template="mark {label}",
    sensitive=True,
    dataset="marks",
)


def hand(instance: str = "i-1", tools: tuple[ToolDecl, ...] = (PEEK,)) -> HandConnection:
    return HandConnection(
        name="laptop",
        principal="laptop",
        credential_id="c_1",
        version="1",
        tools={t.name: t for t in tools},
        instance_id=instance,
        serves=frozenset({"alice"}),
    )


@pytest.fixture
async def minds() -> AsyncIterator[Callable[[str], HandDirectory]]:
    """Makes a started Mind's directory (its node row written, its LISTEN running)."""
    made: list[tuple[HandDirectory, Membership]] = []
    with fresh_postgres_database(postgres_server_url()) as url:
        upgrade(url)

        async def start(node_id: str) -> HandDirectory:
            directory = HandDirectory(Database.open(url), node_id, LEASE)
            membership = Membership(
                url, node_id, on_outbox=lambda: None, heard={HANDS_CHANNEL: directory.heard}
            )
            await membership.join()
            await directory.start()
            made.append((directory, membership))
            return directory

        try:
            yield start  # type: ignore[misc]
        finally:
            for directory, membership in made:
                await directory.close()
                await membership.leave()
                await directory.database.close()


async def _seen(directory: HandDirectory, what: str, check: Callable[[], bool]) -> None:
    """Wait until `check` holds for `directory` (it reloads when it hears the other Minds)."""
    await eventually_async(check, what=what)


async def test_a_hand_attached_to_one_mind_is_offered_by_the_other_with_its_tools(
    minds: Callable,
) -> None:
    a, b = await minds("mind-a"), await minds("mind-b")
    connection = hand(tools=(PEEK, MARK))
    await a.attached(connection)
    await _seen(b, "the Hand in b's directory", lambda: b.get("laptop") is not None)
    seen = b.get("laptop")
    assert seen is not None
    assert (seen.node_id, seen.hand_id, seen.instance_id) == ("mind-a", connection.hand_id, "i-1")
    assert seen.tools == {"peek": PEEK, "mark": MARK}
    assert seen.may_serve(["alice"]) and not seen.may_serve(["bob"])
    assert a.get("laptop") is None  # its own Hands are in its hub

    connection.replace_tools({"peek": PEEK})
    await a.tools_changed(connection)
    await _seen(b, "the new tool set", lambda: set(b.hands()[0].tools) == {"peek"})


async def test_a_detach_removes_only_its_own_stream_and_the_latest_attach_holds_the_name(
    minds: Callable,
) -> None:
    a, b, c = await minds("mind-a"), await minds("mind-b"), await minds("mind-c")
    old, new = hand("i-old"), hand("i-new")
    await a.attached(old)
    await b.attached(new)  # the Hand moved to mind b
    await a.detached(old)  # mind a notices its old stream ended
    await _seen(c, "the Hand on mind b", lambda: [h.node_id for h in c.hands()] == ["mind-b"])
    await b.detached(new)
    await _seen(c, "no Hand", lambda: c.hands() == [])


async def test_the_hands_of_a_mind_not_seen_within_three_leases_stop_counting(
    minds: Callable,
) -> None:
    a, b = await minds("mind-a"), await minds("mind-b")
    await a.attached(hand())
    await _seen(b, "the Hand", lambda: b.get("laptop") is not None)
    # Mind a was killed: it renews `seen_at` no more.
    stale = models.utcnow() - timedelta(seconds=3 * LEASE + 1)
    statement = update(models.MindNode).where(models.MindNode.node_id == "mind-a")
    await b.database.write(lambda tx: tx.session.execute(statement.values(seen_at=stale)))
    await b.reload()
    assert b.get("laptop") is None


async def test_a_mind_starting_removes_the_rows_its_last_run_left(minds: Callable) -> None:
    b = await minds("mind-b")
    left = await minds("mind-a")
    await left.attached(hand())
    await _seen(b, "the Hand", lambda: b.get("laptop") is not None)
    # Mind a was killed with its Hand attached, and starts again under the same node id.
    assert left._task is not None
    left._task.cancel()
    restarted = HandDirectory(left.database, "mind-a", LEASE)
    await restarted.start()
    try:
        await _seen(b, "no Hand", lambda: b.get("laptop") is None)
    finally:
        await restarted.close()


def test_tool_declarations_and_task_signals_survive_their_encoding() -> None:
    tools = {"peek": PEEK, "mark": MARK}
    assert tools_of(tool_rows(tools)) == tools
    signal = TaskSignal("mind-a", SignalKind.PROGRESS, "t_1", "laptop", "", "half", 0.5)
    assert TaskSignal.decode(signal.encode()) == signal
    long = "é" * 5000  # two bytes each
    assert len(clipped(long).encode()) <= 4000 and clipped(long) == "é" * 2000
