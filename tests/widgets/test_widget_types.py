"""Widget types in the store: checked before storing, versioned on every put, and a type in
use keeps its modules and stays unless forced (on every backend)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select
from trip_type import KEY, NOTE, PAGE, STOP, TRIP, document

from mind.errors import InvalidInput, NotFound, WrongState
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.widgets.type_rules import MAX_PAGE_BYTES, check_page, check_schema_document
from mind.widgets.types import (
    current_type,
    delete_type,
    list_types,
    put_type,
    type_version,
)


def _refusal(schema_text: str) -> str:
    with pytest.raises(InvalidInput) as refused:
        check_schema_document(schema_text)
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_a_module_without_a_description_is_refused_by_name() -> None:
    message = _refusal(document(stops={"schema": {"type": "object"}}))
    assert message == "module 'stops' has no description: give one sentence for the model"


def test_a_schema_that_is_not_json_schema_is_refused_with_where() -> None:
    bad = {"description": "Stops.", "schema": {"type": "object", "properties": {"a": 3}}}
    message = _refusal(document(stops=bad))
    assert message.startswith("module 'stops''s schema is not valid JSON Schema at properties/a")


def test_documents_of_the_wrong_shape_are_refused() -> None:
    assert "is not JSON" in _refusal("{modules")
    assert "must be {" in _refusal(json.dumps({"stops": STOP}))
    assert "at least one module" in _refusal(json.dumps({"modules": {}}))
    assert "module name 'Stops'" in _refusal(document(Stops=STOP))
    assert "has no schema" in _refusal(document(stops={"description": "Stops."}))


def test_a_page_must_be_bounded_utf8() -> None:
    assert check_page("<p>été</p>".encode()) == "<p>été</p>"
    with pytest.raises(InvalidInput, match="not UTF-8"):
        check_page(b"<p>\xff</p>")
    with pytest.raises(InvalidInput, match="at most"):
        check_page(b"x" * (MAX_PAGE_BYTES + 1))
    with pytest.raises(InvalidInput, match="empty"):
        check_page(b"  ")


async def _add_widget(database: Database) -> None:
    def unit(tx: WriteTx) -> None:
        tx.session.add(
            models.Widget(
                id="w_1", conversation_key=KEY, type_name="trip", type_version=1, title="Rome"
            )
        )
        tx.session.flush()
        tx.session.add(
            models.WidgetRecord(
                widget_id="w_1", module="stops", record_id="r1", data={"place": "Rome"}, revision=1
            )
        )

    await database.write(unit)


async def test_each_put_is_a_new_version_and_old_ones_stay_readable(trip_store: Database) -> None:
    second = await trip_store.write(
        lambda tx: put_type(tx, "trip", document(stops=STOP), PAGE, force=False)
    )

    current = await trip_store.read(lambda s: current_type(s, "trip"))
    first = await trip_store.read(lambda s: type_version(s, "trip", 1))
    assert (second.widget_type.version, second.removed_modules) == (2, ("notes",))
    assert (current.version, list(current.modules)) == (2, ["stops"])
    assert list(first.modules) == ["stops", "notes"]
    assert first.modules["notes"].description == NOTE["description"]
    assert [(v.name, v.version) for v in await trip_store.read(list_types)] == [("trip", 2)]


async def test_a_type_in_use_gains_modules_but_loses_one_only_when_forced(
    trip_store: Database,
) -> None:
    await _add_widget(trip_store)
    extra = {"description": "A budget line.", "schema": {"type": "number"}}

    gained = await trip_store.write(
        lambda tx: put_type(
            tx, "trip", document(stops=STOP, notes=NOTE, budget=extra), PAGE, force=False
        )
    )
    with pytest.raises(WrongState, match="used by 1 widget.*drops module.*notes.*--force"):
        await trip_store.write(
            lambda tx: put_type(tx, "trip", document(stops=STOP), PAGE, force=False)
        )
    unchanged = await trip_store.read(lambda s: current_type(s, "trip"))
    forced = await trip_store.write(
        lambda tx: put_type(tx, "trip", document(stops=STOP), PAGE, force=True)
    )

    assert gained.widget_type.version == 2 and gained.widget_type.widgets == 1
    assert unchanged.version == 2
    assert (forced.widget_type.version, forced.removed_modules) == (3, ("notes", "budget"))


async def test_deleting_a_type_in_use_is_refused_unless_forced_which_takes_its_widgets(
    trip_store: Database,
) -> None:
    await _add_widget(trip_store)

    with pytest.raises(WrongState, match="used by 1 widget.*--force"):
        await trip_store.write(lambda tx: delete_type(tx, "trip", force=False))
    still = await trip_store.read(lambda s: current_type(s, "trip"))
    removed = await trip_store.write(lambda tx: delete_type(tx, "trip", force=True))

    assert still.widgets == 1 and removed == 1
    with pytest.raises(NotFound, match="no widget type 'trip'"):
        await trip_store.read(lambda s: current_type(s, "trip"))

    def counts(session: object) -> tuple[int, int]:
        return tuple(  # type: ignore[return-value]
            session.scalar(select(func.count()).select_from(model))  # type: ignore[attr-defined]
            for model in (models.Widget, models.WidgetRecord)
        )

    assert await trip_store.read(counts) == (0, 0)


async def test_a_refused_put_stores_nothing(trip_store: Database) -> None:
    with pytest.raises(InvalidInput, match="type name 'Trip!'"):
        await trip_store.write(lambda tx: put_type(tx, "Trip!", TRIP, PAGE, force=False))
    with pytest.raises(InvalidInput, match="not UTF-8"):
        await trip_store.write(lambda tx: put_type(tx, "trip", TRIP, b"\xff", force=False))

    assert [(v.name, v.version) for v in await trip_store.read(list_types)] == [("trip", 1)]


async def test_deleting_an_unknown_type_is_not_found(trip_store: Database) -> None:
    with pytest.raises(NotFound, match="no widget type 'plan'"):
        await trip_store.write(lambda tx: delete_type(tx, "plan", force=True))
