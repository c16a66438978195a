"""Conversation leases on a real PostgreSQL server: two `SharedLeases` in one process stand
for two Minds, each with a clock of its own, so a paused or cut-off Mind is a clock that does
not move."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from helpers.postgres import fresh_postgres_database, postgres_server_url
from sqlalchemy import select

from mind.cluster.errors import LeaseLost, OwnedElsewhere
from mind.cluster.leases import SharedLeases
from mind.store import models
from mind.store.database import Database
from mind.store.migrate import upgrade
from mind.store.write_tx import WriteTx

pytestmark = pytest.mark.postgres
SECONDS = 1.0


class FrozenClock:
    """A monotonic clock that moves only when told: a Mind that was paused."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def url() -> AsyncIterator[str]:
    with fresh_postgres_database(postgres_server_url()) as made:
        upgrade(made)
        yield made


async def _mind(url: str, node_id: str, clock: FrozenClock | None = None) -> SharedLeases:
    database = Database.open(url)
    leases = SharedLeases(database, node_id, SECONDS, **({"monotonic": clock} if clock else {}))
    database.share(node_id, leases.fence)
    return leases


def _post(key: str, text: str):
    def unit(tx: WriteTx) -> int:
        return tx.event("note", key, ["alice"], {"text": text})

    return unit


def _notes(leases: SharedLeases, key: str) -> list[str]:
    def query(session):
        rows = session.scalars(
            select(models.OutboxEvent).where(models.OutboxEvent.conversation_key == key)
        )
        return [row.payload["text"] for row in rows]

    return leases.database.read_now(query)


async def test_a_conversation_has_one_owner_and_the_other_mind_is_told_where_it_is(
    url: str,
) -> None:
    a, b = await _mind(url, "mind-a"), await _mind(url, "mind-b")
    try:
        await a.database.write(
            lambda tx: tx.session.add(models.MindNode(node_id="mind-a", address="a.lan:7410"))
        )
        await a.acquire("p_one")
        with pytest.raises(OwnedElsewhere) as refused:
            await b.acquire("p_one")
        assert (refused.value.node_id, refused.value.address) == ("mind-a", "a.lan:7410")
        await a.database.write(_post("p_one", "from a"))
        # The other Mind cannot write the conversation: its write is refused, nothing lands.
        with pytest.raises(LeaseLost):
            await b.database.write(_post("p_one", "from b"))
        assert _notes(a, "p_one") == ["from a"]
    finally:
        await a.database.close()
        await b.database.close()


async def test_a_paused_owner_whose_lease_was_taken_over_cannot_write_when_it_wakes(
    url: str,
) -> None:
    paused = FrozenClock()
    a, b = await _mind(url, "mind-a", paused), await _mind(url, "mind-b")
    try:
        await a.acquire("p_two")
        await a.database.write(_post("p_two", "before"))
        # Mind a is paused: its clock stands still, so by its own reckoning it still holds the
        # lease; on the database's clock the lease runs out and mind b takes it over.
        await asyncio.sleep(SECONDS + 0.2)
        await b.acquire("p_two")
        assert a.holds("p_two")  # a does not know yet
        with pytest.raises(LeaseLost):
            await a.database.write(_post("p_two", "stale"))
        await b.database.write(_post("p_two", "after"))
        assert _notes(a, "p_two") == ["before", "after"]
        epochs = await a.database.read(
            lambda s: s.get(models.ConversationLease, "p_two").epoch  # type: ignore[union-attr]
        )
        assert epochs == 2
        # Its next renewal finds the lease gone and lets the conversation go.
        lost: list[str] = []

        async def on_lost(key: str) -> None:
            lost.append(key)

        a.on_lost = on_lost
        await a.renew()
        await asyncio.sleep(0)
        assert not a.holds("p_two") and lost == ["p_two"]
    finally:
        await a.database.close()
        await b.database.close()


async def test_a_mind_gives_up_a_lease_at_its_own_deadline_before_the_database_expires_it(
    url: str,
) -> None:
    clock = FrozenClock()
    a = await _mind(url, "mind-a", clock)
    try:
        await a.acquire("p_three")
        clock.now += SECONDS - a.margin  # no renewal got through (a partition)
        assert not a.holds("p_three")
        # Refused on its own clock, without asking the database that it cannot reach.
        with pytest.raises(LeaseLost):
            await a.database.write(_post("p_three", "late"))
        expires = await a.database.read(
            lambda s: s.get(models.ConversationLease, "p_three").expires_at  # type: ignore[union-attr]
        )
        assert expires > datetime.now(UTC)  # the database would still have let it write
    finally:
        await a.database.close()


async def test_renewal_keeps_a_lease_past_its_first_term_and_release_frees_it_at_once(
    url: str,
) -> None:
    a, b = await _mind(url, "mind-a"), await _mind(url, "mind-b")
    try:
        await a.acquire("p_four")
        for _ in range(4):
            await asyncio.sleep(SECONDS / 3)
            await a.renew()
        assert a.holds("p_four")
        with pytest.raises(OwnedElsewhere):
            await b.acquire("p_four")
        await a.release("p_four")
        await b.acquire("p_four")
        await b.database.write(_post("p_four", "b owns it"))
        lease = await b.database.read(lambda s: s.get(models.ConversationLease, "p_four"))
        assert (lease.node_id, lease.epoch) == ("mind-b", 2)  # type: ignore[union-attr]
    finally:
        await a.database.close()
        await b.database.close()
