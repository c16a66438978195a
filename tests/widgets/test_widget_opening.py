"""A widget as its conversation's people open it (Mind.GetWidget's group), and the
`widget_changed` event each change commits: who may open which widget, and what a client
learns that a widget changed (never its contents)."""

from __future__ import annotations

import json

import pytest
from trip_type import KEY, image_in

from mind.agent.images import ConversationImages
from mind.agent.widgets import ConversationWidgets
from mind.conversation.access import Viewer
from mind.errors import InvalidInput, NotFound
from mind.store import models
from mind.store.database import Database
from mind.store.models import OutboxEvent
from mind.store.write_tx import WriteTx
from mind.widgets.widgets import Widgets
from mind.wire.convert_widgets import opened_widget_to_proto

ALICE = Viewer("alice")


async def _other_conversation(database: Database) -> None:
    def unit(tx: WriteTx) -> None:
        tx.session.add(models.Conversation(key="p_other", owner="alice"))

    await database.write(unit)


async def test_the_owner_opens_a_widget_with_its_records_by_module_and_its_page(
    trip_store: Database,
) -> None:
    widgets = Widgets(trip_store)
    made = await widgets.create(KEY, "trip", "Rome in May", idempotency_key=None)
    await widgets.write(KEY, made.id, "stops", "r2", {"place": "Milan"}, expected_revision=0)
    await widgets.write(
        KEY, made.id, "stops", "r1", {"place": "Rome", "nights": 3}, expected_revision=0
    )
    await widgets.set_presentation(KEY, made.id, summary="Three nights", cover=None)

    reply = opened_widget_to_proto(await ConversationWidgets(trip_store).open(ALICE, KEY, made.id))

    widget = reply.widget
    assert (widget.id, widget.conversation_key, widget.type, widget.type_version) == (
        made.id,
        KEY,
        "trip",
        1,
    )
    assert (widget.title, widget.summary, widget.revision) == ("Rome in May", "Three nights", 4)
    assert [module.name for module in widget.modules] == ["stops", "notes"]
    stops = widget.modules[0]
    assert stops.description == "One stop of the trip, in visiting order."
    assert [(r.record_id, json.loads(r.data_json), r.revision) for r in stops.records] == [
        ("r1", {"place": "Rome", "nights": 3}, 1),
        ("r2", {"place": "Milan"}, 1),
    ]
    assert list(widget.modules[1].records) == []
    assert reply.page.startswith("<!doctype html>") and reply.page_version == 1


async def test_no_one_opens_a_widget_through_another_conversation_or_one_they_cannot_see(
    trip_store: Database,
) -> None:
    await _other_conversation(trip_store)
    made = await Widgets(trip_store).create(KEY, "trip", "Rome", idempotency_key=None)
    opening = ConversationWidgets(trip_store)

    with pytest.raises(NotFound):
        await opening.open(ALICE, "p_other", made.id)
    with pytest.raises(NotFound):
        await opening.open(Viewer("mallory"), KEY, made.id)
    with pytest.raises(NotFound):
        await opening.open(ALICE, KEY, "w_unknown")
    assert (await opening.open(ALICE, KEY, made.id)).widget.id == made.id


async def test_each_change_to_a_widget_commits_a_widget_changed_event_without_its_contents(
    trip_store: Database, database_events: list[OutboxEvent]
) -> None:
    widgets = Widgets(trip_store)
    made = await widgets.create(KEY, "trip", "Rome", idempotency_key=None)
    database_events.clear()

    await widgets.write(KEY, made.id, "stops", "r1", {"place": "Rome"}, expected_revision=0)
    await widgets.set_presentation(KEY, made.id, summary="Rome", cover=None)
    assert await widgets.delete_record(KEY, made.id, "stops", "r1", expected_revision=1)
    assert not await widgets.delete_record(KEY, made.id, "stops", "r1", expected_revision=None)

    changes = [(e.type, e.conversation_key, e.audience) for e in database_events]
    assert changes == [("widget_changed", KEY, ["alice"])] * 3
    assert [e.payload["revision"] for e in database_events] == [2, 3, 4]
    assert {key for e in database_events for key in e.payload} == {
        "widget_id",
        "revision",
        "updated_at",
    }


async def test_a_cover_is_an_image_of_the_widgets_conversation_and_readable_only_there(
    trip_store: Database,
) -> None:
    ours, theirs = "c" * 64, "d" * 64
    await _other_conversation(trip_store)
    await image_in(trip_store, KEY, ours)
    await image_in(trip_store, "p_other", theirs)
    widgets = Widgets(trip_store)
    made = await widgets.create(KEY, "trip", "Rome", idempotency_key=None)

    # An image of another conversation would become readable here: refused.
    with pytest.raises(InvalidInput, match="no image 'd+' in this conversation"):
        await widgets.set_presentation(KEY, made.id, summary="", cover=theirs)
    covered = await widgets.set_presentation(KEY, made.id, summary="", cover=ours)

    images = ConversationImages(trip_store)
    assert covered.cover == ours
    assert await images.read(ALICE, KEY, ours) == ("image/png", b"x")
    with pytest.raises(NotFound):
        await images.read(ALICE, "p_other", ours)
