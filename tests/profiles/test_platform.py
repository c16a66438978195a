"""The platform profile code gets, on a real store: widgets, messages, memory and clock bound
to one conversation; refusals carrying only a status code; a fired signal refusing every call
and rolling back a write in flight; the signal itself."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from mind.agent.platform import PROFILE_POSTER, ConversationScope, PlatformScopes, RunTools
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.profiles.scope import CancelSignal, PlatformCancelled, PlatformRequestError, any_of
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.authorizer import AllowAll
from mind.widgets import widgets as domain
from mind.widgets.types import put_type
from tests.widgets.trip_type import KEY, PAGE, TRIP

NOW = datetime(2026, 9, 10, 14, 0, tzinfo=UTC)


class FixedClock:
    def now(self) -> datetime:
        return NOW


class Posts:
    """What the platform put on the conversation's queue (`Messages.post`'s place)."""

    def __init__(self) -> None:
        self.posted: list[dict[str, Any]] = []

    async def __call__(
        self,
        key: str,
        text: str,
        idempotency_key: str,
        *,
        posted_by: str,
        widget: dict[str, Any] | None = None,
    ) -> None:
        self.posted.append(
            {"key": key, "text": text, "idem": idempotency_key, "by": posted_by, "widget": widget}
        )


@pytest.fixture
async def trip_store(database: Database) -> Database:
    def unit(tx: WriteTx) -> None:
        tx.session.add(models.Conversation(key=KEY, owner="alice"))
        tx.session.flush()
        put_type(tx, "trip", TRIP, PAGE, force=False)

    await database.write(unit)
    return database


@pytest.fixture
def posts() -> Posts:
    return Posts()


@pytest.fixture
def scope(trip_store: Database, posts: Posts) -> ConversationScope:
    zones = {"alice": "Europe/Rome"}
    no_runs = RunTools(lambda _key, _run: None, ToolRegistry([]), ToolRuntime(AllowAll()))
    return PlatformScopes(
        trip_store, posts, FixedClock(), lambda who: zones.get(who, ""), no_runs
    ).open(KEY, "alice")


async def _code(call: Any) -> str:
    with pytest.raises(PlatformRequestError) as raised:
        await call
    return raised.value.code


async def test_profile_code_makes_fills_renames_and_reads_a_widget(
    scope: ConversationScope,
) -> None:
    widgets = scope.platform.widgets
    made = await widgets.create("trip", "Rome", idempotency_key="trip:1")
    again = await widgets.create("trip", "Rome", idempotency_key="trip:1")
    first = await widgets.write(made, "stops", "r1", {"place": "Rome", "nights": 3}, 0)
    await widgets.write(made, "notes", "n1", "Book the Vatican")
    await widgets.rename(made, "Rome in May")
    await widgets.set_presentation(made, "Three nights in Rome")
    deleted = await widgets.delete_record(made, "notes", "n1")

    assert again == made and first == 1 and deleted
    (listed,) = await widgets.list()
    assert (listed.id, listed.title, listed.summary) == (
        made,
        "Rome in May",
        "Three nights in Rome",
    )
    (stop,) = await widgets.read_module(made, "stops")
    assert (stop.record_id, stop.data, stop.revision) == ("r1", {"place": "Rome", "nights": 3}, 1)
    assert await widgets.read_module(made, "notes") == ()


async def test_a_refusal_carries_only_its_status_code(scope: ConversationScope) -> None:
    widgets = scope.platform.widgets
    made = await widgets.create("trip", "Rome")
    await widgets.write(made, "stops", "r1", {"place": "Rome"})

    by_schema = await _code(widgets.write(made, "stops", "r2", {"place": 7}))
    stale = await _code(widgets.write(made, "stops", "r1", {"place": "Milan"}, 0))
    missing = await _code(widgets.read("w_nothing"))
    no_type = await _code(widgets.create("boat", "Sail"))

    assert (by_schema, stale, missing, no_type) == (
        "INVALID_ARGUMENT",
        "FAILED_PRECONDITION",
        "NOT_FOUND",
        "NOT_FOUND",
    )
    with pytest.raises(PlatformRequestError) as raised:
        await widgets.write(made, "stops", "r2", {"place": 7})
    assert str(raised.value) == "platform request failed (INVALID_ARGUMENT)"
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    (widget,) = await widgets.list()
    assert [r.data for r in widget.records] == [{"place": "Rome"}]


async def test_sending_puts_the_card_and_a_message_on_the_queue_once_keyed(
    scope: ConversationScope, posts: Posts
) -> None:
    widgets = scope.platform.widgets
    made = await widgets.create("trip", "Rome")
    await widgets.set_presentation(made, "Three nights")
    await widgets.send(made, idempotency_key="trip-send:1")
    await scope.platform.messages.send("Have a good trip!", idempotency_key="note:1")

    card, text = posts.posted
    assert (card["key"], card["idem"], card["by"]) == (KEY, "trip-send:1", "widget")
    assert card["widget"]["id"] == made and card["widget"]["summary"] == "Three nights"
    assert (text["text"], text["idem"], text["by"], text["widget"]) == (
        "Have a good trip!",
        "note:1",
        PROFILE_POSTER,
        None,
    )


async def test_a_send_without_an_idempotency_key_or_of_an_unknown_kind_is_refused(
    scope: ConversationScope, posts: Posts
) -> None:
    made = await scope.platform.widgets.create("trip", "Rome")
    messages = scope.platform.messages

    assert await _code(scope.platform.widgets.send(made)) == "INVALID_ARGUMENT"
    assert await _code(messages.send("hi")) == "INVALID_ARGUMENT"
    assert await _code(messages.send("hi", "widget", idempotency_key="k")) == "INVALID_ARGUMENT"
    assert posts.posted == []


async def test_a_client_with_a_signal_refuses_once_either_signal_fired_and_changes_nothing(
    scope: ConversationScope, posts: Posts
) -> None:
    call_signal = CancelSignal()
    widgets = scope.platform.widgets
    guarded = widgets.with_signal(call_signal)
    made = await guarded.create("trip", "Rome")

    call_signal.cancel("the tool call was aborted")
    with pytest.raises(PlatformCancelled):
        await guarded.write(made, "stops", "r1", {"place": "Rome"})
    # The conversation's own client is not bound to the call's signal.
    assert await widgets.write(made, "stops", "r1", {"place": "Rome"}) == 1

    scope.close("cancelled")
    fresh = widgets.with_signal(CancelSignal())
    for call in (
        widgets.write(made, "stops", "r2", {"place": "Pisa"}),
        fresh.create("trip", "Milan"),
        widgets.send(made, idempotency_key="late"),
        scope.platform.messages.send("late", idempotency_key="late"),
        scope.platform.memory.write("trip", "late"),
    ):
        assert await _code(call) == "CANCELLED"
    assert posts.posted == []
    assert scope.signal.reason == "cancelled"


async def test_a_write_whose_signal_fires_before_its_commit_is_rolled_back(
    scope: ConversationScope, trip_store: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    signal = CancelSignal()
    widgets = scope.platform.widgets.with_signal(signal)
    real = domain.create_widget

    def create_then_cancel(*args: Any, **kwargs: Any) -> Any:
        made = real(*args, **kwargs)
        signal.cancel("aborted while writing")
        return made

    monkeypatch.setattr(domain, "create_widget", create_then_cancel)
    assert await _code(widgets.create("trip", "Rome")) == "CANCELLED"
    assert await trip_store.read(lambda session: domain.list_widgets(session, KEY)) == []


async def test_memory_and_clock_are_the_conversations(scope: ConversationScope) -> None:
    memory = scope.platform.memory
    await memory.write("diet", "no fish")
    await memory.write("city", "Rome")

    assert [entry.key for entry in await memory.list()] == ["city", "diet"]
    assert await memory.read("diet") == "no fish" and await memory.read("none") is None
    assert await memory.delete("diet") and not await memory.delete("diet")
    assert await _code(memory.write("two words", "x")) == "INVALID_ARGUMENT"
    clock = scope.platform.clock
    assert (clock.now(), clock.time_zone) == (NOW, "Europe/Rome")


async def test_a_signal_fires_once_calling_back_and_waking_its_waiters(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, second = CancelSignal(), CancelSignal()
    joined = any_of(first, second)
    heard: list[str] = []

    def broken(reason: str) -> None:
        raise RuntimeError("profile bug")

    joined.add_callback(broken)
    joined.add_callback(heard.append)
    with caplog.at_level(logging.ERROR):
        second.cancel("deleted")
        first.cancel("evicted")
    joined.add_callback(heard.append)

    assert (joined.cancelled, joined.reason, await joined.wait()) == (True, "deleted", "deleted")
    assert heard == ["deleted", "deleted"]
    assert "a cancellation callback raised" in caplog.text
    assert not CancelSignal().cancelled
