"""Semantic recall: the index's entries embedded by the configured provider, searched by
meaning and merged with the keyword rank.

Off unless `[recall] embeddings` names a provider. Then:

* the indexer's second step (`Semantic.step`) embeds, newest first and a batch at a time, the
  entries whose vector is missing or was made by another model (`embedding_model` records
  "kind:model", so a changed model re-embeds everything); it runs only when the keyword
  index is up to date and never holds it up: while the server is down it answers 0 and tries
  again later, waiting longer after each failure (up to a minute). A text the server refuses
  outright (too long, say) is recorded with no vector, so it cannot block the others;
* a search embeds the query (`Semantic.probe`; without an answer it is a keyword search) and
  ranks the viewer's entries by cosine similarity to it (`nearest`): vectors are stored as
  little-endian float32, normalised, in the entry's row, and compared in Python over the
  viewer's newest `max_vectors` entries, keeping those at least `min_similarity` alike (this
  Python has no SQLite extension loading for sqlite-vec, and pgvector is not assumed on the
  server: one way for both stores);
* the two ranked lists are merged by reciprocal rank fusion (`fused`, k = 60).
"""

from __future__ import annotations

import array
import logging
import math
import operator
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, bindparam, func, select, update
from sqlalchemy.orm import Session

from mind.providers.embeddings import Embedder, EmbeddingError
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from tobe.api_keys import KeyLookup, api_key
from tobe.config import ProviderSettings, RecallSettings
from tobe.runtime.backoff import Backoff

log = logging.getLogger(__name__)

RRF_K = 60
# Characters of an entry's text sent to be embedded (within every model's input limit).
MAX_CHARS = 8000
_ENTRY = models.RecallEntry


@dataclass(frozen=True)
class Probe:
    """A query's vector and how to compare it."""

    model: str
    vector: tuple[float, ...]
    max_vectors: int
    min_similarity: float


@dataclass
class Semantic:
    database: Database
    embedder: Embedder
    batch: int = 64
    max_vectors: int = 5000
    min_similarity: float = 0.35
    backoff: Backoff = field(default_factory=lambda: Backoff(initial=2.0, maximum=60.0))
    _retry_at: float = field(default=0.0, init=False)
    # Entries up to this id all have this model's vector (or were refused): only the indexer
    # adds entries, one unit at a time under its cursor's lock, so later ones are higher.
    _done_through: int = field(default=0, init=False)

    async def step(self) -> int:
        """Embed one batch of entries lacking this model's vector; how many were done (0 when
        none is left, or while waiting to ask a server that failed)."""
        if time.monotonic() < self._retry_at:
            return 0
        model = self.embedder.name
        rows, top = await self.database.read(
            lambda session: _unembedded(session, model, self._done_through, self.batch)
        )
        if not rows:
            self._done_through = top
            return 0
        try:
            vectors = await self._vectors([text for _id, text in rows])
        except EmbeddingError as exc:
            delay = self.backoff.next_delay()
            self._retry_at = time.monotonic() + delay
            log.warning("recall: embedding failed (%s); trying again in %.0fs", exc, delay)
            return 0
        self.backoff.reset()
        done = [(entry_id, vector) for (entry_id, _text), vector in zip(rows, vectors, strict=True)]
        await self.database.write(lambda tx: _store(tx, model, done))
        return len(done)

    async def probe(self, text: str) -> Probe | None:
        """The query's vector; None (a keyword search) when the server gives none."""
        try:
            [vector] = await self.embedder.embed([text])
        except EmbeddingError as exc:
            log.warning("recall: the query could not be embedded (%s); keywords only", exc)
            return None
        return Probe(
            self.embedder.name, tuple(_normalised(vector)), self.max_vectors, self.min_similarity
        )

    async def _vectors(self, texts: list[str]) -> list[list[float] | None]:
        """The texts' vectors; one by one after a refused batch, a refused text getting None."""
        cut = [text[:MAX_CHARS] for text in texts]
        try:
            return list(await self.embedder.embed(cut))
        except EmbeddingError as exc:
            if not exc.rejected:
                raise
        found: list[list[float] | None] = []
        for text in cut:
            try:
                found.append((await self.embedder.embed([text]))[0])
            except EmbeddingError as exc:
                if not exc.rejected:
                    raise
                log.warning("recall: an entry could not be embedded (%s); keywords only", exc)
                found.append(None)
        return found


def _unembedded(
    session: Session, model: str, after: int, limit: int
) -> tuple[list[tuple[int, str]], int]:
    """The newest entries after id `after` lacking the model's vector, and the highest id."""
    rows = session.execute(
        select(_ENTRY.id, _ENTRY.text)
        .where(_ENTRY.id > after, _ENTRY.embedding_model != model)
        .order_by(_ENTRY.id.desc())
        .limit(limit)
    )
    top = session.scalar(select(func.max(_ENTRY.id))) or 0
    return [(entry_id, text) for entry_id, text in rows], top


def _store(tx: WriteTx, model: str, done: list[tuple[int, list[float] | None]]) -> None:
    statement = (
        update(_ENTRY)
        .where(_ENTRY.id == bindparam("entry_id"))
        .values(embedding=bindparam("vector"), embedding_model=model)
    )
    rows = [
        {"entry_id": entry_id, "vector": None if vector is None else pack(vector)}
        for entry_id, vector in done
    ]
    tx.session.connection().execute(statement, rows)


def pack(vector: Sequence[float]) -> bytes:
    """The vector, normalised, as little-endian float32."""
    values = array.array("f", _normalised(vector))
    if sys.byteorder != "little":
        values.byteswap()
    return values.tobytes()


def unpack(blob: bytes) -> array.array[float]:
    values = array.array("f")
    values.frombytes(blob)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def _normalised(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def nearest(
    session: Session, probe: Probe, where: list[ColumnElement[bool]], limit: int
) -> list[int]:
    """The ids of the entries `where` selects most alike to the probe, best first."""
    rows = session.execute(
        select(_ENTRY.id, _ENTRY.embedding)
        .where(*where, _ENTRY.embedding_model == probe.model, _ENTRY.embedding.is_not(None))
        .order_by(_ENTRY.id.desc())
        .limit(probe.max_vectors)
    )
    size = len(probe.vector)
    scored = []
    for entry_id, blob in rows:
        vector = unpack(blob or b"")
        if len(vector) != size:
            continue
        similarity = sum(map(operator.mul, probe.vector, vector))
        if similarity >= probe.min_similarity:
            scored.append((similarity, entry_id))
    scored.sort(key=lambda item: (-item[0], -item[1]))
    return [entry_id for _similarity, entry_id in scored[:limit]]


def fused(*rankings: Sequence[int], limit: int) -> list[int]:
    """Reciprocal rank fusion: each id scored by the sum of 1 / (k + rank) over the lists it
    is in (rank from 1), best first; a tie goes to the earlier list's better rank (the
    keyword ranking comes first: the words asked for beat mere likeness)."""
    scores: dict[int, float] = {}
    first: dict[int, tuple[int, int]] = {}
    for order, ranking in enumerate(rankings):
        for rank, entry_id in enumerate(ranking, start=1):
            scores[entry_id] = scores.get(entry_id, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(entry_id, (order, rank))
    return sorted(scores, key=lambda entry_id: (-scores[entry_id], first[entry_id]))[:limit]


def configured(
    settings: RecallSettings, database: Database, stored_key: KeyLookup | None = None
) -> Semantic | None:
    """Semantic recall as `[recall]` sets it up; None while `embeddings` is empty. The key
    is found as `[provider]`'s is (`tobe.api_keys`), Ollama taking none."""
    if not settings.embeddings:
        return None
    key = None
    if settings.embeddings != "ollama":
        provider = ProviderSettings(kind=settings.embeddings, api_key=settings.api_key)
        key = api_key(provider, stored_key)
    embedder = Embedder(
        settings.embeddings,
        settings.model,
        base_url=settings.base_url,
        api_key=key or "",
        timeout=settings.timeout,
    )
    return Semantic(
        database,
        embedder,
        batch=settings.batch,
        max_vectors=settings.max_vectors,
        min_similarity=settings.min_similarity,
    )
