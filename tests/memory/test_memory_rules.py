"""The memory rules and quotas against a real store (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio

import pytest

from mind.memory.rules import MAX_TEXT_BYTES, MAX_TOTAL_BYTES, MemoryRefused
from mind.memory.store import Memory
from mind.store.models import OutboxEvent

# The conversation the `memory` fixture creates (owner alice, member bob).
KEY = "g_team"


async def test_entries_are_listed_sorted_by_key_and_a_write_overwrites(memory: Memory) -> None:
    await memory.write(KEY, "zebra", "stripes", run_id="run_1")
    await memory.write(KEY, "Apple", "red", run_id="run_1")
    await memory.write(KEY, "apple", "green", run_id="run_1")
    await memory.write(KEY, "apple", "yellow now", run_id="run_2")

    listing = await memory.list(KEY)

    assert [(e.key, e.text) for e in listing.entries] == [
        ("Apple", "red"),
        ("apple", "yellow now"),
        ("zebra", "stripes"),
    ]
    assert listing.total_bytes == len("red") + len("yellow now") + len("stripes")


async def test_each_change_commits_a_memory_changed_event_for_owner_and_members(
    memory: Memory, database_events: list[OutboxEvent]
) -> None:
    database_events.clear()
    await memory.write(KEY, "diet", "no peanuts, ümlaut", run_id="run_1")
    assert await memory.delete(KEY, "diet", run_id="") is True

    changes = [(e.type, e.conversation_key, e.audience, e.payload) for e in database_events]
    assert changes == [
        (
            "memory_changed",
            KEY,
            ["alice", "bob"],
            {"key": "diet", "deleted": False, "size_bytes": 19, "run_id": "run_1"},
        ),
        (
            "memory_changed",
            KEY,
            ["alice", "bob"],
            {"key": "diet", "deleted": True, "size_bytes": 0, "run_id": ""},
        ),
    ]


async def test_deleting_a_missing_key_succeeds_and_announces_nothing(
    memory: Memory, database_events: list[OutboxEvent]
) -> None:
    database_events.clear()

    assert await memory.delete(KEY, "never-written", run_id="run_1") is False
    assert database_events == []


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("", "must not be empty"),
        ("k" * 65, "is 65 characters long; at most 64 are allowed"),
        ("two words", "contains whitespace"),
        ("tab\there", "contains whitespace"),
        ("line\nbreak", "contains whitespace"),
        ("no\u00a0break", "contains whitespace"),
        ("a/b", "contains '/'"),
    ],
)
async def test_a_key_breaking_a_rule_is_refused_by_write_and_delete_with_that_rule(
    memory: Memory, database_events: list[OutboxEvent], key: str, reason: str
) -> None:
    database_events.clear()
    with pytest.raises(MemoryRefused, match=reason):
        await memory.write(KEY, key, "text", run_id="run_1")
    with pytest.raises(MemoryRefused, match=reason):
        await memory.delete(KEY, key, run_id="run_1")
    assert (await memory.list(KEY)).entries == ()
    assert database_events == []


async def test_a_key_of_64_characters_is_accepted(memory: Memory) -> None:
    await memory.write(KEY, "k" * 64, "text", run_id="run_1")
    assert [e.key for e in (await memory.list(KEY)).entries] == ["k" * 64]


async def test_the_text_limit_counts_utf8_bytes_not_characters(memory: Memory) -> None:
    await memory.write(KEY, "full", "x" * MAX_TEXT_BYTES, run_id="run_1")
    euros = "€" * 5462  # 5462 characters, 16386 bytes

    with pytest.raises(
        MemoryRefused, match="is 16386 bytes \\(UTF-8\\); an entry holds at most 16384"
    ):
        await memory.write(KEY, "euros", euros, run_id="run_1")
    assert [e.key for e in (await memory.list(KEY)).entries] == ["full"]


async def test_the_65th_entry_is_refused_while_overwriting_one_of_64_is_not(
    memory: Memory,
) -> None:
    for index in range(64):
        await memory.write(KEY, f"k{index:02}", "x", run_id="run_1")

    with pytest.raises(MemoryRefused, match="already has 64 entries, the most allowed \\(64\\)"):
        await memory.write(KEY, "k64", "x", run_id="run_1")
    await memory.write(KEY, "k07", "overwritten", run_id="run_1")

    listing = await memory.list(KEY)
    assert len(listing.entries) == 64
    assert "k64" not in {e.key for e in listing.entries}


async def test_the_total_limit_counts_an_overwritten_entry_once(memory: Memory) -> None:
    for index in range(16):  # 16 × 16384 = 262144 bytes: exactly the quota
        await memory.write(KEY, f"big{index:02}", "x" * MAX_TEXT_BYTES, run_id="run_1")
    assert (await memory.list(KEY)).total_bytes == MAX_TOTAL_BYTES

    with pytest.raises(
        MemoryRefused,
        match="would be 262145 bytes \\(UTF-8\\): 262144 bytes in the other entries plus 1 "
        "for 'one-more'; a conversation holds at most 262144 bytes",
    ):
        await memory.write(KEY, "one-more", "x", run_id="run_1")
    await memory.write(KEY, "big03", "y" * MAX_TEXT_BYTES, run_id="run_1")

    listing = await memory.list(KEY)
    assert listing.total_bytes == MAX_TOTAL_BYTES
    assert len(listing.entries) == 16


async def test_concurrent_writes_never_take_a_conversation_past_its_quotas(
    memory: Memory,
) -> None:
    """Each write checks the quotas in its own unit after locking the conversation, so writes
    racing each other cannot all pass the check on the same old totals."""
    for index in range(60):
        await memory.write(KEY, f"old{index:02}", "x", run_id="run_1")

    async def write(index: int) -> bool:
        try:
            await memory.write(KEY, f"new{index:02}", "x" * 1000, run_id="run_2")
        except MemoryRefused:
            return False
        return True

    written = await asyncio.gather(*(write(index) for index in range(20)))

    assert sum(written) == 4
    assert len((await memory.list(KEY)).entries) == 64
