"""Searching the conversations a person may read, by title and by the text of their messages.

A case-insensitive substring match (`LIKE` with the query's wildcards escaped; SQLite folds
only ASCII letters), over titles and the text of user and assistant messages. Tool results and
notes are not searched, and neither is any message of a sealed run (`runs.sealed`): a sealed
turn's text is never searched or shown, whether or not its key still exists. A full-text
index is future work; this scans the caller's messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from mind.conversation import queries
from mind.conversation.access import Viewer
from mind.errors import InvalidInput
from mind.events.views import ConversationView
from mind.store import models

MAX_QUERY = 200
MAX_MATCHES = 50
# Characters of a message shown around its first match.
SNIPPET_LENGTH = 160
SEARCHED_ROLES = ("user", "assistant")
_ESCAPE = "\\"


@dataclass(frozen=True)
class Match:
    """A conversation that contains the query: in its title, in a message, or both."""

    conversation: ConversationView
    in_title: bool
    # The message with the first match and the text around it; 0 and "" for a title only.
    message_id: int = 0
    snippet: str = ""


def checked_query(query: str) -> str:
    """The query trimmed; InvalidInput when that is empty or longer than `MAX_QUERY`."""
    trimmed = query.strip()
    if not trimmed:
        raise InvalidInput("query is empty: give the text to search for")
    if len(trimmed) > MAX_QUERY:
        raise InvalidInput(f"query is {len(trimmed)} characters; the maximum is {MAX_QUERY}")
    return trimmed


def like_pattern(query: str) -> str:
    """`%query%` in lower case, its `%`, `_` and escape characters taken literally."""
    escaped = (
        query.lower()
        .replace(_ESCAPE, _ESCAPE * 2)
        .replace("%", _ESCAPE + "%")
        .replace("_", _ESCAPE + "_")
    )
    return f"%{escaped}%"


def snippet(text: str, query: str, length: int = SNIPPET_LENGTH) -> str:
    """About `length` characters of `text` around the first `query` (any case), on one line,
    with "…" where it was cut."""
    flat = " ".join(text.split())
    at = max(flat.lower().find(query.lower()), 0)
    start = max(0, min(at - (length - len(query)) // 2, len(flat) - length))
    end = min(len(flat), start + length)
    return f"{'…' if start else ''}{flat[start:end]}{'…' if end < len(flat) else ''}"


def search(session: Session, viewer: Viewer, query: str, limit: int) -> list[Match]:
    """The viewer's conversations (archived ones too) whose title or searchable messages
    contain `query`, newest conversation first, at most `limit`."""
    pattern = like_pattern(query)
    visible = queries.visible_keys(viewer)
    sealed_runs = select(models.Run.id).where(models.Run.sealed.is_not(None))
    first_messages = (
        select(models.Message.conversation_key, func.min(models.Message.id))
        .where(
            models.Message.conversation_key.in_(visible),
            models.Message.role.in_(SEARCHED_ROLES),
            func.lower(models.Message.text).like(pattern, escape=_ESCAPE),
            or_(models.Message.run_id.is_(None), models.Message.run_id.not_in(sealed_runs)),
        )
        .group_by(models.Message.conversation_key)
    )
    first: dict[str, int] = {key: message_id for key, message_id in session.execute(first_messages)}
    titled = func.lower(models.Conversation.title).like(pattern, escape=_ESCAPE)
    rows = list(
        session.scalars(
            select(models.Conversation)
            .where(
                models.Conversation.key.in_(visible),
                or_(titled, models.Conversation.key.in_(list(first))),
            )
            .order_by(*queries.NEWEST_FIRST)
            .limit(limit)
        )
    )
    texts = _texts(session, [first[row.key] for row in rows if row.key in first])
    lowered = query.lower()
    return [
        Match(
            conversation=view,
            in_title=lowered in row.title.lower(),
            message_id=first.get(row.key, 0),
            snippet=snippet(texts[first[row.key]], query) if row.key in first else "",
        )
        for row, view in zip(rows, queries.views_of(session, rows), strict=True)
    ]


def _texts(session: Session, ids: Sequence[int]) -> dict[int, str]:
    if not ids:
        return {}
    rows = session.execute(
        select(models.Message.id, models.Message.text).where(models.Message.id.in_(ids))
    )
    return {message_id: text for message_id, text in rows}
