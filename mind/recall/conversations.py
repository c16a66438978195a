"""The viewer's conversations that match a query, for `SearchConversations` and the web
client's search box: those whose title has the query's words (`search.title_matches`), and
those with an indexed entry that matches (`mind.recall.search`, by meaning too given the
query's vector), each with its best entry's
snippet. Newest conversation first. Like the list, never a child run's conversation
(`delegate`): its result is found in its parent, where it was given.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.conversation import queries
from mind.conversation.access import Viewer
from mind.conversation.delegations import is_child
from mind.events.views import ConversationView
from mind.recall.query import Query
from mind.recall.search import Hit, search, snippet, title_matches
from mind.recall.semantic import Probe
from mind.store import models

MAX_MATCHES = 50
# Entries read to find the conversations they belong to: a conversation with many matches
# should not hide the others.
_HITS_READ = 500


@dataclass(frozen=True)
class Match:
    """A conversation that matches: by its title, by an entry, or both."""

    conversation: ConversationView
    in_title: bool
    # The message of the best matching entry (the last one a summary covers; 0 for a memory
    # entry or a title only) and the text around the match ("" for a title only).
    message_id: int = 0
    snippet: str = ""


def matching(
    session: Session, viewer: Viewer, query: Query, limit: int, probe: Probe | None = None
) -> list[Match]:
    best: dict[str, Hit] = {}
    for hit in search(session, viewer, query, _HITS_READ, probe=probe):
        best.setdefault(hit.conversation_key, hit)
    titles = session.execute(
        select(models.Conversation.key, models.Conversation.title).where(
            models.Conversation.key.in_(queries.visible_keys(viewer)),
            ~is_child(models.Conversation.key),
        )
    )
    titled = {key for key, title in titles if title and title_matches(title, query)}
    rows = list(
        session.scalars(
            select(models.Conversation)
            .where(models.Conversation.key.in_(titled | set(best)))
            .order_by(*queries.NEWEST_FIRST)
            .limit(limit)
        )
    )
    return [
        Match(
            conversation=view,
            in_title=row.key in titled,
            message_id=found.message_id if (found := best.get(row.key)) else 0,
            snippet=snippet(found.text, query) if found else "",
        )
        for row, view in zip(rows, queries.views_of(session, rows), strict=True)
    ]
