"""A conversation's runs read from the store, and waiting until they have all ended."""

from __future__ import annotations

from sqlalchemy import select

from helpers.eventually import eventually_async
from mind.store import models
from mind.store.database import Database


async def runs_of(database: Database, key: str) -> list[models.Run]:
    """The runs of conversation `key`, oldest first."""
    return await database.read(
        lambda session: list(
            session.scalars(
                select(models.Run)
                .where(models.Run.conversation_key == key)
                .order_by(models.Run.started_at)
            )
        )
    )


async def settled_runs(database: Database, key: str, count: int) -> list[models.Run]:
    """The `count` runs of `key` once none of them is running (fails after 10 s)."""
    return await eventually_async(
        lambda: runs_of(database, key),
        10,
        until=lambda found: len(found) == count and all(r.state != "running" for r in found),
        what=f"{count} settled runs of {key}",
    )
