"""The model's widget tools on a real store: offered only while a type exists and to a profile
that lists them, described by the types' modules and fields, refusals reduced to the generic
failure text, and a replayed creation that makes nothing twice."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from trip_type import KEY, PAGE, TRIP

from mind.core.tool_registry import ToolRegistry
from mind.events.widget_views import WidgetCardView
from mind.profiles.model import Profile
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.base import Tool, ToolContext
from mind.widgets.tools import WIDGET_TOOLS, WidgetToolSource
from mind.widgets.types import put_type
from mind.widgets.widgets import Widgets

INVALID = "request failed (400); read the current state before trying again"
STALE = "request failed (409); read the current state before trying again"
MISSING = "request failed (404); read the current state before trying again"


async def _started(database: Database) -> WidgetToolSource:
    """A tool source as the running Mind has it: started on a migrated store."""
    source = WidgetToolSource(database)
    await source.start()
    return source


@pytest.fixture
async def tools(trip_store: Database) -> dict[str, Tool]:
    return {tool.name: tool for tool in (await _started(trip_store)).tools_for(KEY)}


async def _call(
    tool: Tool, context: ToolContext, **arguments: Any
) -> tuple[bool, dict[str, Any] | str]:
    outcome = await tool.run(arguments, context)
    return (True, json.loads(outcome.output)) if outcome.ok else (False, outcome.error)


async def test_the_model_creates_writes_reads_and_deletes_records(
    tools: dict[str, Tool], tool_context: Callable[[str], ToolContext]
) -> None:
    context = tool_context(KEY)
    ok, made = await _call(tools["widget_create"], context, type="trip", title="Rome in May")
    assert ok and isinstance(made, dict)
    widget_id = made["widget_id"]

    wrote = await _call(
        tools["widget_write"],
        context,
        widget_id=widget_id,
        module="stops",
        record_id="r1",
        data={"place": "Rome", "nights": 3},
        expected_revision=0,
    )
    await _call(
        tools["widget_write"],
        context,
        widget_id=widget_id,
        module="notes",
        record_id="n1",
        data="Book the Vatican",
    )
    deleted = await _call(
        tools["widget_delete"], context, widget_id=widget_id, module="notes", record_id="n1"
    )
    ok, read = await _call(tools["widget_read"], context, widget_id=widget_id)

    stop = {"module": "stops", "record_id": "r1", "data": {"place": "Rome", "nights": 3}}
    assert wrote == (True, {"widget_id": widget_id, **stop, "revision": 1})
    assert deleted == (True, {"deleted": True})
    assert ok and isinstance(read, dict)
    assert (read["title"], read["type"], read["revision"]) == ("Rome in May", "trip", 4)
    assert read["records"] == [{**stop, "revision": 1}]


async def test_a_refused_operation_tells_only_the_generic_failure_and_changes_nothing(
    tools: dict[str, Tool], trip_store: Database, tool_context: Callable[[str], ToolContext]
) -> None:
    context = tool_context(KEY)
    _, made = await _call(tools["widget_create"], context, type="trip", title="Rome")
    assert isinstance(made, dict)
    write = tools["widget_write"]
    base = {"widget_id": made["widget_id"], "module": "stops", "record_id": "r1"}
    await _call(write, context, **base, data={"place": "Rome"})

    by_schema = await _call(write, context, **base, data={"place": 7})
    stale = await _call(write, context, **base, data={"place": "Milan"}, expected_revision=0)
    unknown_module = await _call(write, context, **{**base, "module": "hotels"}, data={})
    elsewhere = await _call(
        tools["widget_read"], tool_context("p_other"), widget_id=made["widget_id"]
    )
    no_type = await _call(
        tools["widget_create"], replace(context, tool_call_id="call_2"), type="boat", title="Sail"
    )

    assert (by_schema, stale, unknown_module) == (
        (False, INVALID),
        (False, STALE),
        (False, INVALID),
    )
    assert (elsewhere, no_type) == ((False, MISSING), (False, MISSING))
    read = await Widgets(trip_store).read(KEY, made["widget_id"])
    assert [(r.data, r.revision) for r in read.records] == [({"place": "Rome"}, 1)]


async def test_a_replayed_creation_returns_the_widget_made_by_the_same_tool_call(
    tools: dict[str, Tool], trip_store: Database, tool_context: Callable[[str], ToolContext]
) -> None:
    context = tool_context(KEY)
    first = await _call(tools["widget_create"], context, type="trip", title="Rome")
    replayed = await _call(tools["widget_create"], context, type="trip", title="Rome")

    assert first == replayed
    assert len(await Widgets(trip_store).list(KEY)) == 1


def test_the_descriptions_list_every_types_modules_and_fields(tools: dict[str, Tool]) -> None:
    description = tools["widget_write"].description

    assert "- trip: " in description
    assert "stops (One stop of the trip, in visiting order. Records: fields place, nights?)" in (
        description
    )
    assert "notes (A note about the trip. Records: a string)" in description


async def test_the_tools_are_offered_once_a_type_exists_and_only_to_profiles_listing_them(
    database: Database,
) -> None:
    source = await _started(database)
    registry = ToolRegistry()
    registry.add_platform_source(source, WIDGET_TOOLS)
    listing = Profile(name="planner", platform_tools=("widget_create", "widget_read"))
    other = Profile(name="plain", platform_tools=("current_time",))
    before = set(registry.tools_for(KEY, listing))

    def unit(tx: WriteTx) -> None:
        tx.session.add(models.Conversation(key=KEY, owner="alice"))
        tx.session.flush()
        put_type(tx, "trip", TRIP, PAGE, force=False)

    await database.write(unit)
    unnoticed = set(registry.tools_for(KEY, listing))
    source.types_changed()

    assert before == unnoticed == set()
    assert set(registry.tools_for(KEY, listing)) == {"widget_create", "widget_read"}
    assert set(registry.tools_for(KEY, other)) == set()
    assert set(registry.tools_for(KEY)) == set(WIDGET_TOOLS) - {"widget_send"}


async def test_sending_sets_the_presentation_and_posts_the_card_once_per_tool_call(
    trip_store: Database, tool_context: Callable[[str], ToolContext]
) -> None:
    posted: list[tuple[str, str, str, WidgetCardView]] = []

    async def post(key: str, text: str, idempotency_key: str, card: WidgetCardView) -> None:
        posted.append((key, text, idempotency_key, card))

    source = await _started(trip_store)
    source.post = post
    tools = {tool.name: tool for tool in source.tools_for(KEY)}
    context = tool_context(KEY)
    _, made = await _call(tools["widget_create"], context, type="trip", title="Rome")
    assert isinstance(made, dict)

    sent = await _call(
        tools["widget_send"], context, widget_id=made["widget_id"], summary="Three nights"
    )
    refused = await _call(tools["widget_send"], context, widget_id="w_none", summary="x")

    card = WidgetCardView(made["widget_id"], "trip", "Rome", "Three nights", "", 2)
    assert sent == (True, {"sent": made["widget_id"], "revision": 2})
    assert refused == (False, MISSING)
    assert posted == [
        (KEY, f"[widget {card.id}: trip 'Rome'] Three nights", "widget-send:call_1", card)
    ]


async def test_no_tool_is_offered_before_the_mind_has_started_on_its_store(
    trip_store: Database,
) -> None:
    """Building the Mind reads nothing: the store may not be migrated yet."""
    source = WidgetToolSource(trip_store)
    assert source.tools_for(KEY) == []
    await source.start()
    assert source.tools_for(KEY)


async def test_the_note_names_the_conversations_widgets_newest_last_with_records_counted(
    trip_store: Database,
) -> None:
    source = await _started(trip_store)
    assert await source.note_for(KEY) == ""
    widgets = Widgets(trip_store)
    first = await widgets.create(KEY, "trip", "Rome   in May", idempotency_key=None)
    second = await widgets.create(KEY, "trip", "Oslo", idempotency_key=None)
    await widgets.write(KEY, first.id, "stops", "r1", {"place": "Rome"}, expected_revision=None)
    await widgets.write(KEY, first.id, "stops", "r2", {"place": "Pisa"}, expected_revision=None)

    note = await source.note_for(KEY)

    assert note.splitlines() == [
        "Widgets in this conversation (2; read one before changing it):",
        f"- {first.id}: trip 'Rome in May', revision 3 (stops 2)",
        f"- {second.id}: trip 'Oslo', revision 1 (no records)",
    ]
    assert await source.note_for("p_other") == ""
