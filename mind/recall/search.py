"""Searching the recall index: the viewer's entries that match a query, best first.

Both backends answer the same query (`mind.recall.query`) over the same words
(`mind.recall.terms`). Ranking is each backend's own: FTS5's `bm25` on SQLite, `ts_rank_cd`
(cover density) on PostgreSQL, ties broken newest first; the order of equally good matches
may differ between them, what matches never does.

With semantic recall on (`mind.recall.semantic`), a search given the query's vector (a
`Probe`) also ranks the viewer's entries by meaning, and the two rankings are merged by
reciprocal rank fusion: an entry found only by meaning is found too.

Only entries of conversations the viewer may read are searched (`queries.visible_keys`), and
never one of a sealed run or of a child run's conversation (`delegate`), which the person's
list leaves out too: the indexer does not index them, and the query leaves them out besides
(rows indexed before children were left out).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    ColumnElement,
    Select,
    bindparam,
    column,
    func,
    literal_column,
    or_,
    select,
    table,
)
from sqlalchemy.orm import Session

from mind.conversation import queries
from mind.conversation.access import Viewer
from mind.conversation.delegations import is_child
from mind.recall.query import Query, fts5, tsquery
from mind.recall.semantic import Probe, fused, nearest
from mind.recall.terms import words
from mind.store import models

SNIPPET_LENGTH = 160
# Entries each ranking contributes to the fusion, at least.
FUSION_POOL = 50
_ENTRY = models.RecallEntry
# The FTS5 table (SQLite): its rowid is the entry's id; its own name stands for the row in
# MATCH and bm25.
_FTS = table("recall_fts", column("rowid"))
# The expression of the GIN index `ix_recall_entries_terms`, spelled the same to use it.
_SIMPLE: ColumnElement[str] = literal_column("'simple'::regconfig")


@dataclass(frozen=True)
class Scope:
    """Which entries to search besides the viewer's: one conversation, a time range."""

    conversation_key: str = ""
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class Hit:
    """One entry that matched, with its text and where it is."""

    entry_id: int
    conversation_key: str
    source: str
    role: str
    message_id: int
    created_at: datetime
    text: str


_COLUMNS = (
    _ENTRY.id,
    _ENTRY.conversation_key,
    _ENTRY.source,
    _ENTRY.role,
    _ENTRY.message_id,
    _ENTRY.created_at,
    _ENTRY.text,
)


def search(
    session: Session,
    viewer: Viewer,
    query: Query,
    limit: int,
    scope: Scope | None = None,
    probe: Probe | None = None,
) -> list[Hit]:
    """The viewer's entries matching `query` (and, given the query's vector, those alike in
    meaning), best first, at most `limit`."""
    where = _scoped(viewer, scope or Scope())
    if probe is None:
        return _keyword(session, query, where, limit)
    pool = max(limit, FUSION_POOL)
    by_words = _keyword(session, query, where, pool)
    by_meaning = nearest(session, probe, where, pool)
    chosen = fused([hit.entry_id for hit in by_words], by_meaning, limit=limit)
    known = {hit.entry_id: hit for hit in by_words}
    missing = [entry_id for entry_id in chosen if entry_id not in known]
    if missing:
        rows = session.execute(select(*_COLUMNS).where(_ENTRY.id.in_(missing)))
        known.update((row[0], Hit(*row)) for row in rows)
    return [known[entry_id] for entry_id in chosen]


def _keyword(
    session: Session, query: Query, where: list[ColumnElement[bool]], limit: int
) -> list[Hit]:
    statement: Select[int, str, str, str, int, datetime, str]
    if session.get_bind().dialect.name == "sqlite":
        statement = (
            select(*_COLUMNS)
            .select_from(_ENTRY)
            .join(_FTS, _FTS.c.rowid == _ENTRY.id)
            .where(literal_column("recall_fts").op("MATCH")(bindparam("match", fts5(query))))
            .order_by(literal_column("bm25(recall_fts)"), _ENTRY.id.desc())
        )
    else:
        # Built here, not at import: SQLAlchemy types the full-text functions only once its
        # PostgreSQL dialect is loaded, which a Mind on SQLite never loads.
        vector = func.to_tsvector(_SIMPLE, _ENTRY.terms)
        wanted = func.to_tsquery(_SIMPLE, bindparam("tsquery", tsquery(query)))
        statement = (
            select(*_COLUMNS)
            .where(vector.op("@@")(wanted))
            .order_by(func.ts_rank_cd(vector, wanted).desc(), _ENTRY.id.desc())
        )
    statement = statement.where(*where).limit(limit)
    return [Hit(*row) for row in session.execute(statement)]


def _scoped(viewer: Viewer, scope: Scope) -> list[ColumnElement[bool]]:
    sealed_runs = select(models.Run.id).where(models.Run.sealed.is_not(None))
    where = [
        _ENTRY.conversation_key.in_(queries.visible_keys(viewer)),
        ~is_child(_ENTRY.conversation_key),
        or_(_ENTRY.run_id == "", _ENTRY.run_id.not_in(sealed_runs)),
    ]
    if scope.conversation_key:
        where.append(_ENTRY.conversation_key == scope.conversation_key)
    if scope.since is not None:
        where.append(_ENTRY.created_at >= scope.since)
    if scope.until is not None:
        where.append(_ENTRY.created_at < scope.until)
    return where


def snippet(text: str, query: Query, length: int = SNIPPET_LENGTH) -> str:
    """About `length` characters of `text` around the first word of `query` it contains, on
    one line, with "…" where it was cut."""
    flat = " ".join(text.split())
    lowered = flat.lower()
    found = [at for word in query.words if (at := lowered.find(word)) >= 0]
    at = min(found, default=0)
    start = max(0, min(at - length // 3, len(flat) - length))
    end = min(len(flat), start + length)
    return f"{'…' if start else ''}{flat[start:end]}{'…' if end < len(flat) else ''}"


def title_matches(title: str, query: Query) -> bool:
    """Whether a title matches `query` word by word (phrases as all their words)."""
    have = words(title)

    def has(word: str, prefix: bool) -> bool:
        return any(w.startswith(word) if prefix else w == word for w in have)

    return any(
        all(
            has(word, p.prefix and i == len(p.words) - 1)
            for p in group
            for i, word in enumerate(p.words)
        )
        for group in query.alternatives
    )
