"""The mailbox position: durable only up to mail handled in order; resumes as IMAP allows."""

from __future__ import annotations

import json
from collections.abc import Callable

from helpers.memory_state import MemoryState

from face.channels.email.cursor import KEY, MailboxCursor


def _now(action: Callable[[], None]) -> None:
    action()


def _saved(state: MemoryState) -> tuple[int, int]:
    document = json.loads(state.values[KEY])
    return document["uidvalidity"], document["next_uid"]


def test_a_new_mailbox_starts_at_the_servers_uidnext_and_saves_it() -> None:
    state = MemoryState()
    assert MailboxCursor(state, "INBOX", _now).resume("INBOX", 7, 40) == 40
    assert _saved(state) == (7, 40)


def test_the_position_moves_only_past_mail_handled_in_order() -> None:
    state = MemoryState()
    cursor = MailboxCursor(state, "INBOX", _now)
    cursor.resume("INBOX", 7, 10)
    cursor.fetched(10, "<a>", done=False)
    cursor.fetched(11, "<skipped>", done=True)
    cursor.fetched(12, "<b>", done=False)

    cursor.handled("<b>")
    assert _saved(state) == (7, 10)
    cursor.handled("<a>")
    assert _saved(state) == (7, 13)


def test_a_restart_resumes_at_the_saved_position_and_a_renumbered_mailbox_at_uidnext() -> None:
    state = MemoryState()
    cursor = MailboxCursor(state, "INBOX", _now)
    cursor.resume("INBOX", 7, 10)
    cursor.fetched(10, "<a>", done=True)

    assert MailboxCursor(state, "INBOX", _now).resume("INBOX", 7, 30) == 11
    assert MailboxCursor(state, "INBOX", _now).resume("INBOX", 8, 30) == 30
    assert _saved(state) == (8, 30)


def test_another_mailbox_than_the_saved_one_starts_at_its_uidnext() -> None:
    state = MemoryState()
    MailboxCursor(state, "INBOX", _now).resume("INBOX", 7, 10)
    assert MailboxCursor(state, "Agent", _now).resume("Agent", 7, 3) == 3


def test_a_reconnection_resumes_after_the_last_mail_fetched_not_the_last_handled() -> None:
    state = MemoryState()
    cursor = MailboxCursor(state, "INBOX", _now)
    cursor.resume("INBOX", 7, 10)
    cursor.fetched(10, "<a>", done=False)
    cursor.advance("INBOX", 7, 11)

    assert cursor.resume("INBOX", 7, 12) == 11
    assert _saved(state) == (7, 10)
