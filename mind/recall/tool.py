"""The model's `recall` tool: search what was said, summarised and remembered in the
conversations of the person whose conversation the run is in.

Read-only and offered in every conversation, like the memory tools. Its scope is the
conversation's owner (`mind.recall.search` with the owner as viewer): the owner's own
conversations and those they are a member of, never anyone else's, never a sealed turn. With
semantic recall on, it finds by meaning too (`mind.recall.semantic`). A query it cannot use
comes back as a tool error that says why, so the model can ask again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.conversation.access import Viewer
from mind.errors import InvalidInput
from mind.recall.entries import RECALL
from mind.recall.query import MAX_QUERY, parse
from mind.recall.search import Hit, Scope, search, snippet
from mind.recall.semantic import Semantic
from mind.store import models
from mind.store.database import Database
from mind.tools.base import Effect, ToolContext, ToolOutcome

DEFAULT_LIMIT = 8
MAX_LIMIT = 25
_DATE: dict[str, Any] = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}


class RecallTool:
    name = RECALL
    description = (
        "Search everything said in this person's conversations (also long ago, compacted away "
        "from your context), the tool results they were shown, conversation summaries and "
        'memory entries. Words are ANDed; use "an exact phrase", prefix* and OR. Returns '
        "snippets, best first, each with its conversation, date, role and message id."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "maxLength": MAX_QUERY, "description": "what to find"},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "description": f"at most this many results (default {DEFAULT_LIMIT})",
            },
            "conversation": {
                "type": "string",
                "description": "only this conversation's key; 'this' for the current one",
            },
            "since": _DATE | {"description": "only from this day on (YYYY-MM-DD, UTC)"},
            "until": _DATE | {"description": "only up to and including this day (YYYY-MM-DD)"},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    effect = Effect.READ_ONLY
    hand_id = ""

    def __init__(self, database: Database, semantic: Semantic | None = None) -> None:
        self._database = database
        self._semantic = semantic

    def render_decision(self, arguments: dict[str, Any]) -> str:
        return f"search past conversations for {arguments['query']!r}"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        try:
            query = parse(arguments["query"])
            scope = _scope(arguments, context.conversation_key)
        except (InvalidInput, ValueError) as exc:
            return ToolOutcome(ok=False, error=str(exc))
        limit = int(arguments.get("limit", DEFAULT_LIMIT))
        probe = await self._semantic.probe(arguments["query"]) if self._semantic else None

        def read(session: Session) -> list[dict[str, Any]]:
            owner = session.scalar(
                select(models.Conversation.owner).where(
                    models.Conversation.key == context.conversation_key
                )
            )
            if owner is None:
                return []
            hits = search(session, Viewer(owner), query, limit, scope, probe)
            return _results(session, hits, lambda text: snippet(text, query))

        results = await self._database.read(read)
        return ToolOutcome(
            ok=True,
            output=json.dumps({"results": results}, ensure_ascii=False, separators=(",", ":")),
        )


def _scope(arguments: dict[str, Any], current: str) -> Scope:
    conversation = arguments.get("conversation", "")
    since, until = arguments.get("since"), arguments.get("until")
    return Scope(
        conversation_key=current if conversation == "this" else conversation,
        since=_day(since) if since else None,
        until=_day(until) + timedelta(days=1) if until else None,
    )


def _day(text: str) -> datetime:
    return datetime.combine(date.fromisoformat(text), time(), tzinfo=UTC)


def _results(session: Session, hits: list[Hit], cut: Callable[[str], str]) -> list[dict[str, Any]]:
    keys = {hit.conversation_key for hit in hits}
    titles = {
        key: title
        for key, title in session.execute(
            select(models.Conversation.key, models.Conversation.title).where(
                models.Conversation.key.in_(keys)
            )
        )
    }
    return [
        {
            "conversation": hit.conversation_key,
            "title": titles.get(hit.conversation_key, ""),
            "date": hit.created_at.astimezone(UTC).isoformat(timespec="minutes"),
            "role": hit.role,
            "message_id": hit.message_id,
            "snippet": cut(hit.text),
        }
        for hit in hits
    ]
