"""Quotes and forwarded chat records: checked before anything is stored, kept with the message
when it is delivered, and shown to the model as seed 004 §3.3.5 says (a quote line first; a
forwarded record's items as `speaker: text`, each item's images right after its text)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from mind.conversation.history import ForwardedEntry, HistoryMessage, QuotedMessage
from mind.conversation.images import ImageUpload
from mind.conversation.quotes import (
    MAX_FORWARDED_ITEMS,
    ForwardUpload,
    check_forwarded,
    check_reply_to,
    cut,
)
from mind.conversation.records import history_message
from mind.core.view import provider_messages
from mind.errors import InvalidInput
from mind.providers.base import ImagePart
from mind.store import models
from mind.store.database import Database
from mind.store.migrate import upgrade
from mind.store.write_tx import WriteTx

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
GIF = b"GIF89a" + b"\x00" * 24
T = datetime(2026, 9, 10, 14, 0, 30, tzinfo=UTC)
STAMP = "[2026-09-10 14:00:30 GMT] "


def test_a_quoted_text_comes_first_as_a_quote_line_naming_its_speaker() -> None:
    quote = QuotedMessage(12, "alice", "meet at noon?", has_images=False)
    history = [HistoryMessage(13, "user", "yes, noon works", T, quote=quote)]
    message, _now = provider_messages(history, T)
    assert message.text == f"{STAMP}[quote alice: meet at noon?]\nyes, noon works"


def test_a_quoted_image_names_the_quoted_message_so_the_model_can_match_it() -> None:
    part = ImagePart("image/png", "iVBO")
    quote = QuotedMessage(41, "assistant", "", has_images=True)
    history = [
        HistoryMessage(41, "user", "", T, images=(part,)),
        HistoryMessage(42, "user", "and this one?", T, quote=quote, images=(part,)),
    ]
    _first, second, _now = provider_messages(history, T)
    assert second.text == f"{STAMP}[quote assistant's image #41]\n[image #42] and this one?"
    assert second.images == [part]


def test_a_forwarded_record_lists_its_items_with_each_items_images_after_its_text() -> None:
    own, first, second, third = (ImagePart("image/png", name) for name in "ABCD")
    record = (
        ForwardedEntry("bob", "look at these", images=(first, second)),
        ForwardedEntry("carol", "nice"),
        ForwardedEntry("bob", "and the last", images=(third,), unreadable_images=1),
    )
    history = [HistoryMessage(9, "user", "what do you think?", T, images=(own,), forwarded=record)]
    message, _now = provider_messages(history, T)
    assert message.text == (
        f"{STAMP}[image #9] what do you think?\n"
        "[forwarded chat record]\n"
        "bob: look at these\n[forwarded image 1]\n[forwarded image 2]\n"
        "carol: nice\n"
        "bob: and the last\n[image could not be read]\n[forwarded image 3]"
    )
    assert message.images == [own, first, second, third]
    # A model that sees images gets each item's images right after that item's text.
    assert message.parts == [
        f"{STAMP}[image #9] what do you think?\n[forwarded chat record]",
        own,
        "bob: look at these\n[forwarded image 1]\n[forwarded image 2]",
        first,
        second,
        "carol: nice\nbob: and the last\n[image could not be read]\n[forwarded image 3]",
        third,
    ]


def test_a_record_without_images_is_plain_text_and_needs_no_parts() -> None:
    record = (ForwardedEntry("bob", "hi"),)
    history = [HistoryMessage(9, "user", "fwd", T, forwarded=record)]
    message, _now = provider_messages(history, T)
    assert message.text == f"{STAMP}fwd\n[forwarded chat record]\nbob: hi"
    assert (message.images, message.parts) == ([], [])


def test_a_stored_payload_becomes_the_quote_and_the_record_with_images_by_digest() -> None:
    part = ImagePart("image/gif", "R0lG")
    row = SimpleNamespace(
        id=5,
        role="user",
        text="",
        created_at=T,
        run_id="r",
        payload={
            "principal": "alice",
            "reply_to": 3,
            "quote": {"message_id": 3, "speaker": "assistant", "text": "hi", "has_images": False},
            "forwarded": [
                {"speaker": "bob", "text": "x", "images": [{"digest": "d1"}, {"digest": "d2"}]}
            ],
        },
    )
    message = history_message(row, {"d1": part})  # type: ignore[arg-type]
    assert message.quote == QuotedMessage(3, "assistant", "hi", False)
    assert message.forwarded == (ForwardedEntry("bob", "x", (part,), unreadable_images=1),)


def test_a_long_quote_is_cut_on_one_line_with_a_marker() -> None:
    assert cut("a\nb  c") == "a b c"
    long = cut("word " * 100)
    assert len(long) == 200 and long.endswith("…")


def test_a_forwarded_record_is_bounded_and_its_images_checked_like_a_messages() -> None:
    limits = {"max_text_bytes": 100, "max_image_bytes": 64, "max_images": 2}
    [item] = check_forwarded(
        [ForwardUpload(" bob ", "", [ImageUpload("image/png", PNG)])], **limits
    )
    assert item.speaker == "bob" and item.images[0].media_type == "image/png"
    assert item.ref()["images"][0]["digest"] == item.images[0].digest
    too_many = [ForwardUpload("bob", "x")] * (MAX_FORWARDED_ITEMS + 1)
    with pytest.raises(InvalidInput, match="51 items; the maximum is 50"):
        check_forwarded(too_many, **limits)
    with pytest.raises(InvalidInput, match="carries 3 images; the maximum is 2"):
        check_forwarded([ForwardUpload("bob", "", [ImageUpload("image/gif", GIF)] * 3)], **limits)
    with pytest.raises(InvalidInput, match="forwarded item 0: speaker must be"):
        check_forwarded([ForwardUpload("", "x")], **limits)
    with pytest.raises(InvalidInput, match="forwarded item 1: text is empty"):
        check_forwarded([ForwardUpload("a", "x"), ForwardUpload("b", " ")], **limits)
    with pytest.raises(InvalidInput, match="forwarded item 0: text is 101 bytes"):
        check_forwarded([ForwardUpload("a", "x" * 101)], **limits)
    with pytest.raises(InvalidInput, match="forwarded item 0: image 0 is declared"):
        check_forwarded([ForwardUpload("a", "", [ImageUpload("image/png", GIF)])], **limits)


def test_reply_to_must_name_a_persons_or_the_assistants_message_of_the_same_conversation(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'tobe.db'}"
    upgrade(url)

    async def scenario() -> None:
        database = Database.open(url)
        try:

            def unit(tx: WriteTx) -> int:
                for key in ("p_mine", "p_other"):
                    tx.insert(models.Conversation(key=key, owner="alice", title=""))
                tx.insert(models.Message(conversation_key="p_mine", role="user", text="a"))
                tx.insert(models.Message(conversation_key="p_mine", role="tool", text="raw"))
                other = tx.insert(models.Message(conversation_key="p_other", role="user", text="b"))
                return other.id

            other = await database.write(unit)
            await database.read(lambda s: check_reply_to(s, "p_mine", 0))
            await database.read(lambda s: check_reply_to(s, "p_mine", other - 2))
            # Another conversation's message, a tool result, none at all.
            for wrong in (other, other - 1, other + 1, -1):
                with pytest.raises(InvalidInput, match=f"reply_to {wrong} is not a message"):
                    await database.read(lambda s, w=wrong: check_reply_to(s, "p_mine", w))
        finally:
            await database.close()

    asyncio.run(scenario())
