"""Several Minds on one store each route every Awareness batch: a note for a conversation
another Mind owns is left to that Mind, and the shared cursor moves past a batch only once
each of its observations is seen (unit tests of `mind.awareness.router` with two routers on
one database)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select

from mind.awareness import router as router_module
from mind.awareness.notes import ObservationNote
from mind.awareness.router import ObservationRouter
from mind.cluster.errors import OwnedElsewhere
from mind.store import models
from mind.store.database import Database
from tobe.v1 import awareness_pb2 as pb

BATCH = pb.SubscribeObservationsResponse(
    publish_seq=7,
    observations=[
        pb.Observation(id="o1", conversation_key="p_a"),
        pb.Observation(id="o2", conversation_key="p_b"),
    ],
)


class Sink:
    """Delivers the notes of the conversations its Mind owns; `owns` may change (a takeover)."""

    def __init__(self, owns: set[str]) -> None:
        self.owns = owns
        self.delivered: list[str] = []

    async def deliver(self, note: ObservationNote) -> str:
        if note.conversation_key not in self.owns:
            raise OwnedElsewhere(note.conversation_key, "other", "127.0.0.1:1")
        self.delivered.append(note.conversation_key)
        return note.conversation_key


def _router(database: Database, sink: Sink) -> ObservationRouter:
    return ObservationRouter(
        None,  # type: ignore[arg-type]  # routing a batch never calls Awareness
        database,
        sink,
        default_conversation="p_default",
    )


async def _seen(database: Database) -> dict[str, str]:
    found = await database.read(
        lambda s: s.execute(
            select(models.SeenObservation.observation_id, models.SeenObservation.conversation_key)
        ).all()
    )
    return dict(found)


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(router_module, "ELSEWHERE_POLL", 0.02)


async def test_two_minds_each_deliver_the_notes_of_their_own_conversations_once(
    database: Database,
) -> None:
    sink_a, sink_b = Sink({"p_a"}), Sink({"p_b"})
    await asyncio.wait_for(
        asyncio.gather(
            _router(database, sink_a).route(BATCH), _router(database, sink_b).route(BATCH)
        ),
        10,
    )
    assert sink_a.delivered == ["p_a"] and sink_b.delivered == ["p_b"]
    assert await _seen(database) == {"o1": "p_a", "o2": "p_b"}
    assert await _router(database, sink_a).cursor() == 7


async def test_the_cursor_waits_for_a_note_owned_elsewhere_until_its_conversation_is_taken_over(
    database: Database,
) -> None:
    sink = Sink({"p_a"})
    router = _router(database, sink)
    routing = asyncio.create_task(router.route(BATCH))
    await asyncio.sleep(0.2)
    # Its own note is delivered and seen; the other's waits, and the cursor stays before it.
    assert not routing.done()
    assert await _seen(database) == {"o1": "p_a"}
    assert await router.cursor() == 0
    sink.owns.add("p_b")  # the other Mind died and this one took the conversation over
    await asyncio.wait_for(routing, 10)
    assert sink.delivered == ["p_a", "p_b"]
    assert await _seen(database) == {"o1": "p_a", "o2": "p_b"}
    assert await router.cursor() == 7
