"""Routes published observations from Awareness into conversations, each exactly once.

An observation's target (`target_of`) is the conversation its adapter's config names; else,
when it names its source within its instance (`source_key`: a chat, a mailbox), that source's
own conversation, keyed deterministically by (instance, source key) (`source_conversation`)
and created for the owner by the sink on its first note, titled `<instance>: <source title or
key>`; else the owner's default awareness conversation.

Loop: read the cursor (`cursors` row `awareness.publish_seq`), subscribe after it, and for each
batch: skip observations already in `seen_observations`, hand the rest to the sink as one note
per target conversation (the sink is idempotent per note key), show them with their targets to
the scheduler's conditions (`ObservationConditions`, idempotent per observation), then record
them as seen and advance the cursor in one transaction. A crash of either side at any point
replays from the last recorded batch; replayed notes and conditions are no-ops.

Several Minds sharing one PostgreSQL store each route every batch: a note for a conversation
another live Mind owns (`OwnedElsewhere`) is left to that Mind's router, and the batch is
tried again every `ELSEWHERE_POLL` seconds until each of its observations is seen, by
whichever Mind delivered it (a Mind that died meanwhile leaves its conversation to be taken
over here); only then does the shared cursor move past it. The link is
retried with the platform backoff (1 s doubling to 30 s). Awareness starts after the Mind
(`tobe up`, docker/compose.yaml), so while no batch has arrived yet in the first
`START_WINDOW` seconds a refused link is expected and logged at INFO; after that, or once
the stream has delivered, losing it is a WARNING.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Protocol

from sqlalchemy import case, select
from sqlalchemy.orm import Session

from mind.awareness.client import AwarenessClient
from mind.awareness.errors import AwarenessLinkError, JournalReset
from mind.awareness.notes import ObservationNote, Routed, build_note, instance_of
from mind.cluster.errors import OwnedElsewhere
from mind.conversation.access import MAX_KEY_LENGTH
from mind.conversation.limits import MAX_TITLE
from mind.store import models
from mind.store.database import Database
from mind.store.insert_once import conflict_insert
from mind.store.write_tx import WriteTx
from tobe import telemetry
from tobe.runtime.backoff import Backoff
from tobe.v1 import awareness_pb2 as pb

log = logging.getLogger(__name__)

CURSOR = "awareness.publish_seq"
# A source's conversation: `p_aw-<slug>-<digest>`; the digest tells sources apart, the slug
# tells a person which it is.
SOURCE_PREFIX = "p_aw-"
_DIGEST_CHARS = 16
_SLUG_CHARS = MAX_KEY_LENGTH - len(SOURCE_PREFIX) - 1 - _DIGEST_CHARS
# Seconds after the router starts in which Awareness not answering yet is the expected order.
START_WINDOW = 60.0
# Seconds between tries of a batch whose notes other Minds deliver (several Minds, one store).
ELSEWHERE_POLL = 0.5


def source_conversation(instance: str, source_key: str) -> str:
    """The key of the conversation of (instance, source key): the same on every start."""
    digest = hashlib.sha256(f"{instance}\n{source_key}".encode()).hexdigest()[:_DIGEST_CHARS]
    slug = re.sub(r"[^a-z0-9]+", "-", f"{instance} {source_key}".lower()).strip("-")
    slug = slug[:_SLUG_CHARS].rstrip("-") or "source"
    return f"{SOURCE_PREFIX}{slug}-{digest}"


def target_of(observation: pb.Observation, default: str) -> tuple[str, str]:
    """(conversation key, title to create it with: "" unless it is a source's own)."""
    if observation.conversation_key:
        return observation.conversation_key, ""
    if observation.source_key:
        instance = instance_of(observation)
        name = observation.source_title or observation.source_key
        title = f"{instance}: {name}"[:MAX_TITLE]
        return source_conversation(instance, observation.source_key), title
    return default, ""


class ObservationSink(Protocol):
    async def deliver(self, note: ObservationNote) -> str:
        """Deliver the note; idempotent per `note.idempotency_key`. Returns the conversation."""
        ...


class ObservationConditions(Protocol):
    async def observed(self, routed: Sequence[Routed]) -> None:
        """Fire what the delivered observations match; idempotent per observation. Raises when
        that could not be stored (the batch is then retried)."""
        ...


class ObservationRouter:
    def __init__(
        self,
        client: AwarenessClient,
        database: Database,
        sink: ObservationSink,
        *,
        default_conversation: str,
        conditions: ObservationConditions | None = None,
        start_window: float = START_WINDOW,
    ) -> None:
        self._client = client
        self._database = database
        self._sink = sink
        self._default = default_conversation
        self._conditions = conditions
        self._backoff = Backoff()
        self._start_window = start_window
        self._delivered = False

    async def run(self) -> None:
        """Subscribe and route until cancelled."""
        loop = asyncio.get_running_loop()
        starting_until = loop.time() + self._start_window
        while True:
            cursor = await self.cursor()
            try:
                async for batch in self._client.subscribe(cursor):
                    self._backoff.reset()
                    self._delivered = True
                    with (
                        telemetry.resumed(batch.trace_context),
                        telemetry.span(
                            "route observations",
                            kind="consumer",
                            attributes={
                                "tobe.publish_seq": batch.publish_seq,
                                "tobe.observations": len(batch.observations),
                            },
                        ),
                    ):
                        await self.route(batch)
                log.info("the Awareness observation stream ended; resubscribing")
            except JournalReset:
                # Awareness lost its journal: replay it all; seen observations are skipped.
                log.warning("Awareness journal was reset; resubscribing from the start")
                await self._reset_cursor()
                continue
            except AwarenessLinkError as exc:
                if self._delivered or loop.time() >= starting_until:
                    log.warning("Awareness observation stream: %s", exc.status)
                else:
                    log.info(
                        "Awareness observation stream: %s (Awareness is not up yet; retrying)",
                        exc.status,
                    )
            except Exception:  # the store or a conversation refused; retry from the cursor
                log.exception("routing an observation batch failed; retrying")
            await asyncio.sleep(self._backoff.next_delay())

    async def cursor(self) -> int:
        return await self._database.read(_cursor)

    async def _reset_cursor(self) -> None:
        def unit(tx: WriteTx) -> None:
            row = tx.session.get(models.Cursor, CURSOR)
            if row is not None:
                row.value = 0

        await self._database.write(unit)

    async def route(self, batch: pb.SubscribeObservationsResponse) -> None:
        """Deliver the batch and record it; returns once all of it is seen, here or by the
        other Minds that own its conversations."""
        while True:
            elsewhere = await self._route_once(batch)
            if not elsewhere:
                return
            log.debug("observations for %s wait for their Minds", ", ".join(sorted(elsewhere)))
            await asyncio.sleep(ELSEWHERE_POLL)

    async def _route_once(self, batch: pb.SubscribeObservationsResponse) -> set[str]:
        """Deliver what is not seen yet; the conversations other Minds own (whose notes
        they deliver). The cursor moves past the batch only when there are none."""
        ids = [o.id for o in batch.observations]
        seen = await self._database.read(lambda session: _seen(session, ids))
        groups: dict[str, list[pb.Observation]] = {}
        titles: dict[str, str] = {}
        for observation in batch.observations:
            if observation.id not in seen:
                key, title = target_of(observation, self._default)
                groups.setdefault(key, []).append(observation)
                titles.setdefault(key, title)
        delivered: dict[str, str] = {}
        routed: list[Routed] = []
        elsewhere: set[str] = set()
        for key, observations in groups.items():
            note = build_note(key, batch.publish_seq, observations, title=titles[key])
            try:
                target = await self._sink.deliver(note)
            except OwnedElsewhere:
                elsewhere.add(key)
                continue
            delivered.update({o.id: target for o in observations})
            routed += [Routed(target, o) for o in observations]
        if self._conditions is not None and routed:
            await self._conditions.observed(routed)

        def record(tx: WriteTx) -> None:
            # Nothing to do for one another Mind recorded (a note delivered on both sides of
            # a takeover, once: the sink is idempotent).
            now = datetime.now(UTC)
            for observation_id, target in delivered.items():
                tx.connection.execute(
                    conflict_insert(tx.connection.dialect.name, models.SeenObservation)
                    .values(
                        observation_id=observation_id,
                        conversation_key=target,
                        publish_seq=batch.publish_seq,
                        received_at=now,
                    )
                    .on_conflict_do_nothing()
                )
            if not elsewhere:
                _advance(tx, batch.publish_seq)

        if delivered or not elsewhere:
            await self._database.write(record)
        return elsewhere


def _cursor(session: Session) -> int:
    row = session.get(models.Cursor, CURSOR)
    return row.value if row else 0


def _seen(session: Session, observation_ids: list[str]) -> set[str]:
    return set(
        session.scalars(
            select(models.SeenObservation.observation_id).where(
                models.SeenObservation.observation_id.in_(observation_ids)
            )
        )
    )


def _advance(tx: WriteTx, seq: int) -> None:
    """Move the cursor to `seq` unless it is further already: one statement, so two Minds
    routing the same batch never race to create the row."""
    insert = conflict_insert(tx.connection.dialect.name, models.Cursor).values(
        name=CURSOR, value=seq
    )
    further = case(
        (insert.excluded.value > models.Cursor.value, insert.excluded.value),
        else_=models.Cursor.value,
    )
    tx.connection.execute(
        insert.on_conflict_do_update(index_elements=[models.Cursor.name], set_={"value": further})
    )
