"""The Awareness router shows each delivered observation, with the conversation it reached, to
the scheduler's conditions before it records the batch as seen, so a crash in between replays
the batch into them."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from mind.awareness.notes import ObservationNote, Routed
from mind.awareness.router import ObservationRouter
from mind.store import models
from mind.store.database import Database
from tobe.v1 import awareness_pb2 as pb


class Sink:
    async def deliver(self, note: ObservationNote) -> str:
        return "p_routed"


class Conditions:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.calls: list[tuple[list[tuple[str, str]], list[str]]] = []

    async def observed(self, routed: Sequence[Routed]) -> None:
        seen = await self.database.read(
            lambda s: list(s.scalars(select(models.SeenObservation.observation_id)))
        )
        self.calls.append(([(r.conversation_key, r.observation.id) for r in routed], seen))


async def test_the_router_shows_conditions_the_batch_before_recording_it_as_seen(
    database: Database,
) -> None:
    conditions = Conditions(database)
    router = ObservationRouter(
        None,  # type: ignore[arg-type]  # routing a batch never calls Awareness
        database,
        Sink(),
        default_conversation="p_default",
        conditions=conditions,
    )
    batch = pb.SubscribeObservationsResponse(
        publish_seq=7,
        observations=[pb.Observation(id="o1"), pb.Observation(id="o2", conversation_key="g_x")],
    )
    await router.route(batch)
    assert conditions.calls == [([("p_routed", "o1"), ("p_routed", "o2")], [])]
    await router.route(batch)  # a replay: already seen, nothing is shown again
    assert len(conditions.calls) == 1
    assert await router.cursor() == 7
