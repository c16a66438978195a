"""A conversation's widgets on every backend: records checked against their module's schema,
revisions that a stale write cannot pass, the presentation, and deletion with the conversation."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from trip_type import KEY, image_in

from mind.errors import InvalidInput, NotFound, WrongState
from mind.management.conversations import delete_conversation
from mind.store import models
from mind.store.database import Database
from mind.widgets.widgets import Widgets


@pytest.fixture
def widgets(trip_store: Database) -> Widgets:
    return Widgets(trip_store)


async def test_a_widget_holds_records_per_module_each_with_its_revision(widgets: Widgets) -> None:
    made = await widgets.create(KEY, "trip", "Rome in May", idempotency_key=None)

    first = await widgets.write(
        KEY, made.id, "stops", "r1", {"place": "Rome", "nights": 3}, expected_revision=0
    )
    again = await widgets.write(
        KEY, made.id, "stops", "r1", {"place": "Rome", "nights": 4}, expected_revision=1
    )
    await widgets.write(KEY, made.id, "notes", "n1", "Book the Vatican", expected_revision=None)
    read = await widgets.read(KEY, made.id)

    assert (made.type_name, made.type_version, made.title, made.revision) == (
        "trip",
        1,
        "Rome in May",
        1,
    )
    assert (first.revision, again.revision) == (1, 2)
    assert [(r.module, r.record_id, r.data, r.revision) for r in read.records] == [
        ("notes", "n1", "Book the Vatican", 1),
        ("stops", "r1", {"place": "Rome", "nights": 4}, 2),
    ]
    assert read.revision == 4


async def test_data_the_schema_refuses_and_a_stale_revision_change_nothing(
    widgets: Widgets,
) -> None:
    made = await widgets.create(KEY, "trip", "Rome", idempotency_key=None)
    await widgets.write(KEY, made.id, "stops", "r1", {"place": "Rome"}, expected_revision=0)

    with pytest.raises(InvalidInput, match="does not match module 'stops' of 'trip' at /nights"):
        await widgets.write(
            KEY, made.id, "stops", "r1", {"place": "Rome", "nights": -1}, expected_revision=1
        )
    with pytest.raises(InvalidInput, match="has no module 'hotels'"):
        await widgets.write(KEY, made.id, "hotels", "h1", {}, expected_revision=None)
    with pytest.raises(WrongState, match="is at revision 1, not 0"):
        await widgets.write(KEY, made.id, "stops", "r1", {"place": "Pisa"}, expected_revision=0)
    with pytest.raises(WrongState, match="is at revision 1, not 5"):
        await widgets.delete_record(KEY, made.id, "stops", "r1", expected_revision=5)

    read = await widgets.read(KEY, made.id)
    assert [(r.data, r.revision) for r in read.records] == [({"place": "Rome"}, 1)]
    assert read.revision == 2


async def test_deleting_a_record_and_setting_the_presentation(
    widgets: Widgets, trip_store: Database
) -> None:
    made = await widgets.create(KEY, "trip", "Rome", idempotency_key=None)
    await widgets.write(KEY, made.id, "stops", "r1", {"place": "Rome"}, expected_revision=0)

    await image_in(trip_store, KEY, "d" * 64)
    existed = await widgets.delete_record(KEY, made.id, "stops", "r1", expected_revision=1)
    missing = await widgets.delete_record(KEY, made.id, "stops", "r1", expected_revision=None)
    shown = await widgets.set_presentation(KEY, made.id, summary="Three days", cover="d" * 64)
    with pytest.raises(InvalidInput, match="at most 500 characters, got 501"):
        await widgets.set_presentation(KEY, made.id, summary="x" * 501, cover=None)
    with pytest.raises(InvalidInput, match="no image 'e+' in this conversation for the cover"):
        await widgets.set_presentation(KEY, made.id, summary=None, cover="e" * 64)
    uncovered = await widgets.set_presentation(KEY, made.id, summary=None, cover="")

    assert (existed, missing) == (True, False)
    assert (shown.summary, shown.cover, shown.records) == ("Three days", "d" * 64, ())
    assert (uncovered.summary, uncovered.cover) == ("Three days", "")


async def test_a_replayed_creation_finds_the_widget_it_made(widgets: Widgets) -> None:
    first = await widgets.create(KEY, "trip", "Rome", idempotency_key="widget-create:call_1")
    replayed = await widgets.create(KEY, "trip", "Rome", idempotency_key="widget-create:call_1")
    other = await widgets.create(KEY, "trip", "Rome", idempotency_key="widget-create:call_2")

    assert replayed.id == first.id != other.id
    assert [w.id for w in await widgets.list(KEY)] == [first.id, other.id]


async def test_unknown_types_widgets_and_other_conversations_are_not_found(
    widgets: Widgets,
) -> None:
    made = await widgets.create(KEY, "trip", "Rome", idempotency_key=None)
    with pytest.raises(NotFound, match="no widget type 'plan'"):
        await widgets.create(KEY, "plan", "Plan", idempotency_key=None)
    with pytest.raises(NotFound, match="no widget"):
        await widgets.read("p_other", made.id)
    with pytest.raises(InvalidInput, match="title"):
        await widgets.create(KEY, "trip", " ", idempotency_key=None)


async def test_deleting_the_conversation_deletes_its_widgets(
    widgets: Widgets, trip_store: Database
) -> None:
    made = await widgets.create(KEY, "trip", "Rome", idempotency_key=None)
    await widgets.write(KEY, made.id, "stops", "r1", {"place": "Rome"}, expected_revision=0)

    deletion = await trip_store.write(lambda tx: delete_conversation(tx.session, KEY))

    def counts(session: object) -> list[int]:
        return [
            session.scalar(select(func.count()).select_from(model))  # type: ignore[attr-defined]
            for model in (models.Widget, models.WidgetRecord)
        ]

    assert deletion.removed["widgets"] == 1 and deletion.removed["widget_records"] == 1
    assert await trip_store.read(counts) == [0, 0]
