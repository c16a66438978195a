"""Observations reach conversations owned by different Minds on one PostgreSQL database, each
exactly once: real Mind processes, a real Awareness process, a real server.

Both Minds link to the same Awareness and route every batch (mind/awareness/router.py): each
delivers the notes of the conversations it owns and leaves the others' to their owner, and the
shared cursor moves past a batch only once each of its observations is seen. The probe adapter
emits each observation for one of two sources, whose conversations (`source_conversation`) are
made through mind a and mind b beforehand, so each has its owner; a low-trust window gathers
observations of both sources into one batch. Throughout, the store is sampled: the cursor never
stands past a batch with an observation not yet seen. When mind b is killed, mind a takes its
conversation over once b's lease runs out and delivers what b left, once.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers.eventually import eventually_async
from helpers.face_process import MindDirect
from helpers.mind_process import MindProcess
from helpers.shared_database import SharedDatabase, shared_database
from helpers.store_backend import rows
from sqlalchemy import text

from mind.awareness.router import CURSOR, source_conversation, target_of
from mind.store.engine import create_migration_engine
from tobe.v1 import awareness_pb2 as pb

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "awareness"))
from awareness_harness import TOKEN, AwarenessProcess, Client, new_process

pytestmark = pytest.mark.e2e
LEASE_SECONDS = "2"
DEFAULT = "p_awareness"
# The probe's sources, and the conversations their observations go to.
KITCHEN, GARAGE = "kitchen", "garage"
ON_A = source_conversation("probe", KITCHEN)
ON_B = source_conversation("probe", GARAGE)
SCRIPT = """
runs:
  - match: ".*"
    steps:
      - text: "noted"
"""
WAIT = 30.0


@dataclass
class Cluster:
    database: SharedDatabase
    awareness: AwarenessProcess
    a: MindProcess
    b: MindProcess

    def logs(self) -> str:
        return "\n".join(
            ["mind a:", *self.a.output[-30:], "mind b:", *self.b.output[-30:]]
            + ["awareness:", self.awareness.stderr()[-3000:]]
        )

    def owner(self, key: str) -> tuple[str, int]:
        [(node_id, epoch)] = rows(
            self.database.url,
            "SELECT node_id, epoch FROM conversation_leases WHERE conversation_key = ?",
            key,
        )
        return str(node_id), int(epoch)

    def noted(self) -> dict[str, list[str]]:
        """The observation ids of every note message, by conversation, in order."""
        found = rows(
            self.database.url,
            "SELECT conversation_key, payload FROM messages WHERE role = 'note' ORDER BY id",
        )
        notes: dict[str, list[str]] = {}
        for key, payload in found:
            ids = json.loads(payload)["source"]["observation_ids"]
            notes.setdefault(str(key), []).extend(ids)
        return notes

    def seen(self) -> dict[str, str]:
        found = rows(
            self.database.url, "SELECT observation_id, conversation_key FROM seen_observations"
        )
        return {str(observation): str(key) for observation, key in found}

    def cursor(self) -> int:
        found = rows(self.database.url, "SELECT value FROM cursors WHERE name = ?", CURSOR)
        return int(found[0][0]) if found else 0


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Awareness with the probe adapter, and minds a and b on one database, both linked to it."""
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    with new_process() as awareness, shared_database() as database:
        awareness.start()
        minds = [
            database.mind(
                tmp_path / name,
                script,
                TOBE_MIND__NODE_ID=name,
                TOBE_MIND__LEASE_SECONDS=LEASE_SECONDS,
                TOBE_MIND__AWARENESS_ADDRESS=awareness.target,
                TOBE_AWARENESS__TOKEN=TOKEN,
                TOBE_MIND__AWARENESS_OWNER="alice",
            )
            for name in ("mind-a", "mind-b")
        ]
        try:
            for mind in minds:
                mind.start()
            yield Cluster(database, awareness, *minds)
        finally:
            for mind in minds:
                mind.kill()


@dataclass
class Published:
    """What Awareness published, read from its own stream: the ground truth of the batches."""

    batches: list[pb.SubscribeObservationsResponse] = field(default_factory=list)

    def target(self) -> dict[str, str]:
        """Each published observation's conversation."""
        return {
            o.id: target_of(o, DEFAULT)[0] for batch in self.batches for o in batch.observations
        }

    def last_seq(self) -> int:
        return max(batch.publish_seq for batch in self.batches)

    def holds(self, ids: list[str]) -> bool:
        return set(ids) <= set(self.target())

    def mixed(self) -> list[pb.SubscribeObservationsResponse]:
        """The batches with observations for both conversations."""
        return [
            batch
            for batch in self.batches
            if len({target_of(o, DEFAULT)[0] for o in batch.observations}) == 2
        ]


@asynccontextmanager
async def published(client: Client) -> AsyncIterator[Published]:
    """Follow every batch Awareness publishes, from the first, while the block runs."""
    found = Published()
    stream = client.subscribe(0)

    async def follow() -> None:
        async for batch in stream:
            found.batches.append(batch)

    following = asyncio.create_task(follow())
    try:
        yield found
    finally:
        stream.cancel()
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)


class CursorSamples:
    """Samples (cursor, seen observations) in one statement, so from one snapshot, until
    stopped; `violations` then names the samples with the cursor past an unseen observation."""

    def __init__(self, url: str) -> None:
        self._engine = create_migration_engine(url)
        self._stop = threading.Event()
        self.samples: list[tuple[int, frozenset[str]]] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CursorSamples:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._engine.dispose()

    def _run(self) -> None:
        query = text(
            "SELECT (SELECT value FROM cursors WHERE name = :cursor), "
            "(SELECT coalesce(string_agg(observation_id, ','), '') FROM seen_observations)"
        )
        while not self._stop.is_set():
            with self._engine.connect() as connection:
                cursor, seen = connection.execute(query, {"cursor": CURSOR}).one()
            self.samples.append((cursor or 0, frozenset(filter(None, seen.split(",")))))
            self._stop.wait(0.03)

    def violations(self, published: Published) -> list[tuple[int, list[str]]]:
        """(cursor, unseen observations of batches at or before it) of each bad sample."""
        bad = []
        for cursor, seen in self.samples:
            passed = [
                o.id
                for batch in published.batches
                if batch.publish_seq <= cursor
                for o in batch.observations
            ]
            unseen = [i for i in passed if i not in seen]
            if unseen:
                bad.append((cursor, unseen))
        return bad

    def cursors(self) -> list[int]:
        return [cursor for cursor, _seen in self.samples]


async def _emit(client: Client, probe: str, trust: str, source: str, n: int) -> str:
    result = await client.interact(
        probe, "emit", trust=trust, content={"n": n}, source_key=source, source_title=source
    )
    assert result["status"] == "success", result
    return str(result["result"]["observation_id"])


async def _make_conversations(cluster: Cluster) -> None:
    """ON_A through mind a and ON_B through mind b: each owns the one it made."""
    a, b = MindDirect(cluster.a), MindDirect(cluster.b)
    try:
        await a.create(ON_A, title=KITCHEN)
        await b.create(ON_B, title=GARAGE)
    finally:
        await a.close()
        await b.close()
    assert cluster.owner(ON_A) == ("mind-a", 1)
    assert cluster.owner(ON_B) == ("mind-b", 1)


async def _all_routed(cluster: Cluster, found: Published, ids: list[str]) -> None:
    """Every observation in `ids` published, seen, in a note, and the cursor at the last batch."""
    await eventually_async(
        lambda: (
            found.holds(ids)
            and set(ids) <= set(cluster.seen())
            and set(ids) <= {i for noted in cluster.noted().values() for i in noted}
            and cluster.cursor() == found.last_seq()
        ),
        WAIT,
        what="every observation routed and the cursor past the last batch",
        context=cluster.logs,
    )


def _check_exactly_once(cluster: Cluster, found: Published, ids: list[str]) -> None:
    """Each observation in one note, of its own conversation; seen once there; nothing else."""
    target = found.target()
    assert sorted(target) == sorted(ids)
    noted = cluster.noted()
    counts = Counter(i for notes in noted.values() for i in notes)
    assert counts == Counter(ids), "an observation was noted twice, or not at all"
    for key, notes in noted.items():
        assert all(target[i] == key for i in notes), f"an observation noted in the wrong {key}"
    assert cluster.seen() == target
    assert cluster.cursor() == found.last_seq()


async def test_each_mind_delivers_the_observations_of_its_own_conversations_exactly_once(
    cluster: Cluster,
) -> None:
    await _make_conversations(cluster)
    client = Client(cluster.awareness.target)
    try:
        probe = await client.adapter_id("probe")
        async with published(client) as found:
            with CursorSamples(cluster.database.url) as samples:
                ids = [
                    await _emit(client, probe, "high", source, n)
                    for n, source in enumerate([KITCHEN, GARAGE, GARAGE, KITCHEN])
                ]
                # One low window: a batch with observations of both Minds' conversations.
                ids += [
                    await _emit(client, probe, "low", source, n)
                    for n, source in enumerate([GARAGE, KITCHEN, GARAGE, KITCHEN], 10)
                ]
                await eventually_async(
                    lambda: found.holds(ids), WAIT, what="the low batch", context=cluster.logs
                )
                # Last, one batch for each Mind: once each Mind delivered its own, its router
                # is past every batch before it, so a late duplicate would be in the store.
                ids += [
                    await _emit(client, probe, "high", source, 20) for source in (GARAGE, KITCHEN)
                ]
                await _all_routed(cluster, found, ids)
            assert found.mixed(), "no batch held observations of both conversations"
            _check_exactly_once(cluster, found, ids)
            assert samples.violations(found) == []
            assert samples.cursors() == sorted(samples.cursors())
    finally:
        await client.close()
    # Each Mind delivered its own: neither conversation changed hands.
    assert cluster.owner(ON_A) == ("mind-a", 1)
    assert cluster.owner(ON_B) == ("mind-b", 1)


async def test_a_killed_minds_observations_are_delivered_once_by_the_mind_that_takes_over(
    cluster: Cluster,
) -> None:
    await _make_conversations(cluster)
    client = Client(cluster.awareness.target)
    try:
        probe = await client.adapter_id("probe")
        async with published(client) as found:
            with CursorSamples(cluster.database.url) as samples:
                ids = [await _emit(client, probe, "high", GARAGE, 0)]
                await _all_routed(cluster, found, ids)
                assert cluster.seen() == {ids[0]: ON_B}

                cluster.b.kill()
                ids += [await _emit(client, probe, "high", GARAGE, n) for n in (1, 2)]
                # A low batch of both conversations: the cursor passes it only once b's part,
                # too, is delivered.
                ids += [
                    await _emit(client, probe, "low", source, n)
                    for n, source in enumerate([KITCHEN, GARAGE, KITCHEN], 10)
                ]
                ids.append(await _emit(client, probe, "high", KITCHEN, 20))
                await _all_routed(cluster, found, ids)
            assert found.mixed(), "no batch held observations of both conversations"
            _check_exactly_once(cluster, found, ids)
            assert samples.violations(found) == []
            assert samples.cursors() == sorted(samples.cursors())
    finally:
        await client.close()
    assert cluster.owner(ON_B) == ("mind-a", 2)
    assert cluster.owner(ON_A) == ("mind-a", 1)
