"""The Matrix sync cursor: a batch's token is kept only once all its items are handled."""

from __future__ import annotations

from helpers.memory_state import MemoryState

from face.channels.matrix.cursor import HANDLED, SINCE, SyncCursor


def test_a_batch_without_items_is_stored_at_once() -> None:
    state = MemoryState()
    cursor = SyncCursor(state)
    assert cursor.fresh
    cursor.fetched("t1", [])
    assert (state.get(SINCE), cursor.next_since, cursor.fresh) == ("t1", "t1", False)


def test_the_token_waits_for_every_item_of_its_batch() -> None:
    state = MemoryState()
    cursor = SyncCursor(state)
    cursor.fetched("t1", [])
    cursor.fetched("t2", ["$a", "$b"])
    assert cursor.next_since == "t2"
    cursor.handled("$a")
    assert state.get(SINCE) == "t1"
    cursor.handled("$b")
    assert state.get(SINCE) == "t2"


def test_handling_an_item_covers_every_item_yielded_before_it() -> None:
    state = MemoryState()
    cursor = SyncCursor(state)
    cursor.fetched("t1", ["$a"])
    cursor.fetched("t2", [])
    cursor.fetched("t3", ["$b", "$c"])
    cursor.handled("$c")
    assert state.get(SINCE) == "t3"


def test_an_empty_batch_after_unhandled_items_waits_for_them() -> None:
    state = MemoryState()
    cursor = SyncCursor(state)
    cursor.fetched("t1", ["$a"])
    cursor.fetched("t2", [])
    assert state.get(SINCE) is None
    cursor.handled("$a")
    assert state.get(SINCE) == "t2"


def test_items_handled_in_a_partly_handled_batch_are_skipped_after_a_restart() -> None:
    state = MemoryState()
    cursor = SyncCursor(state)
    cursor.fetched("t1", [])
    cursor.fetched("t2", ["$a", "$b"])
    cursor.handled("$a")
    restarted = SyncCursor(state)
    assert restarted.next_since == "t1"
    assert restarted.was_handled("$a") and not restarted.was_handled("$b")
    restarted.fetched("t2", ["$b"])
    restarted.handled("$b")
    assert (state.get(SINCE), state.get(HANDLED)) == ("t2", "[]")
    assert not SyncCursor(state).was_handled("$a")


def test_an_unknown_item_moves_nothing() -> None:
    state = MemoryState()
    cursor = SyncCursor(state)
    cursor.fetched("t1", ["$a"])
    cursor.handled("$elsewhere")
    assert state.get(SINCE) is None
