"""The scheduler's loop in-process, on each backend: time moved by a FileClock, firings
recorded by the `deliver` it is given."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from helpers.clock_file import set_clock
from helpers.eventually import eventually_async
from scheduling import CAROLS, KEY, START, schedule

from mind.awareness.notes import Routed
from mind.events.action_views import TriggerKind, TriggerView
from mind.events.bus import EventBus
from mind.memory.store import Memory
from mind.scheduler import records
from mind.scheduler.clock import FileClock
from mind.scheduler.model import FiringDelivery
from mind.scheduler.service import Scheduler, Serves
from mind.store.database import Database
from mind.store.models import OutboxEvent
from tobe.config import SchedulerSettings
from tobe.v1 import awareness_pb2 as pb

HOURLY = TriggerView(TriggerKind.INTERVAL, "UTC", every_seconds=3600)
# Long enough for a loop sleeping at most 0.05 s to take several turns.
QUIET = 0.4
pytestmark = pytest.mark.usefixtures("conversations")


class Harness:
    """A scheduler on the test's store whose clock is a file and whose deliveries are kept."""

    def __init__(self, database: Database, clock_file: Path) -> None:
        self.database = database
        self.clock_file = clock_file
        self.bus = EventBus()
        self.delivered: list[FiringDelivery] = []
        self.refuse = 0
        self.scheduler: Scheduler | None = None
        self.set_time(START)

    def set_time(self, moment: datetime) -> None:
        set_clock(self.clock_file, moment)

    async def deliver(self, firing: FiringDelivery) -> None:
        if self.refuse:
            self.refuse -= 1
            raise RuntimeError("the conversation refused")
        self.delivered.append(firing)
        # As a proactive run does when it starts: the firing is not delivered again.
        await self.database.write(
            lambda tx: records.firing_started(tx, firing.firing_id, f"run_{firing.firing_id}")
        )

    async def start(self, serves: Serves | None = None) -> Scheduler:
        """`serves`: as on a database several Minds share."""
        settings = SchedulerSettings(max_sleep=0.05)
        clock = FileClock(self.clock_file)
        self.scheduler = Scheduler(self.database, clock, self.deliver, settings, self.bus)
        self.scheduler.serves = serves
        await self.scheduler.start()
        return self.scheduler

    async def stop(self) -> None:
        if self.scheduler is not None:
            await self.scheduler.stop()
            self.scheduler = None

    async def delivered_count(self, count: int, what: str) -> list[FiringDelivery]:
        await eventually_async(lambda: self._count(), until=lambda n: n >= count, what=what)
        await asyncio.sleep(QUIET)  # and no more
        assert len(self.delivered) == count, self.delivered
        return self.delivered

    async def _count(self) -> int:
        return len(self.delivered)


@pytest.fixture
async def harness(
    database: Database, database_events: list[OutboxEvent], tmp_path: Path
) -> AsyncIterator[Harness]:
    made = Harness(database, tmp_path / "clock")

    def committed(events: list[OutboxEvent]) -> None:
        database_events.extend(events)
        made.bus.durable_committed(events)

    database.on_commit(committed)
    yield made
    await made.stop()


async def test_an_action_fires_at_its_time_and_not_before(harness: Harness) -> None:
    at = START + timedelta(minutes=5)
    await schedule(harness.database, TriggerView(TriggerKind.AT, "UTC", at=at))
    await harness.start()
    harness.set_time(at - timedelta(seconds=1))
    await asyncio.sleep(QUIET)
    assert harness.delivered == []
    harness.set_time(at)
    [firing] = await harness.delivered_count(1, "the firing at its time")
    assert firing.due_at == at and firing.conversation_key == KEY and firing.owner == "alice"


async def test_an_interval_action_fires_on_each_interval(harness: Harness) -> None:
    view = await schedule(harness.database, HOURLY)
    await harness.start()
    for hours in (1, 2, 3):
        harness.set_time(START + timedelta(hours=hours, seconds=1))
        await harness.delivered_count(hours, f"firing {hours}")
    assert [f.due_at for f in harness.delivered] == [START + timedelta(hours=n) for n in (1, 2, 3)]
    assert {f.schedule_id for f in harness.delivered} == {view.id}


async def test_a_due_time_passed_while_down_fires_once_at_start(harness: Harness) -> None:
    await schedule(harness.database, HOURLY)
    harness.set_time(START + timedelta(hours=5, minutes=30))
    await harness.start()
    [firing] = await harness.delivered_count(1, "the one firing for the downtime")
    assert firing.due_at == START + timedelta(hours=5)


async def test_a_new_schedule_wakes_the_loop_from_a_long_sleep(
    harness: Harness, database: Database
) -> None:
    scheduler = Scheduler(
        database, FileClock(harness.clock_file), harness.deliver, SchedulerSettings(), harness.bus
    )
    harness.scheduler = scheduler
    await scheduler.start()  # sleeps up to 30 s: only the commit can wake it in time
    await asyncio.sleep(0.1)
    await schedule(database, TriggerView(TriggerKind.AT, "UTC", at=START - timedelta(minutes=1)))
    await harness.delivered_count(1, "the firing of an action already due when scheduled")


async def test_a_firing_claimed_but_not_delivered_is_delivered_at_the_next_start(
    harness: Harness,
) -> None:
    await schedule(harness.database, HOURLY)
    harness.refuse = 1
    harness.set_time(START + timedelta(hours=1))
    await harness.start()
    await eventually_async(
        lambda: harness.database.read(records.undelivered),
        what="the claimed firing left undelivered",
    )
    assert harness.delivered == []
    await harness.stop()
    await harness.start()
    [firing] = await harness.delivered_count(1, "the redelivery")
    assert firing.due_at == START + timedelta(hours=1)


async def test_on_a_shared_store_a_firing_another_mind_claimed_and_left_is_delivered_once_served(
    harness: Harness,
) -> None:
    await schedule(harness.database, HOURLY)
    served: set[str] = set()

    async def serves(key: str) -> bool:
        return key in served

    await harness.start(serves)
    now = START + timedelta(hours=1, seconds=1)
    harness.set_time(now)
    # The conversation's owner claims the due time, then dies before delivering it.
    [left] = await harness.database.write(lambda tx: records.claim_due(tx, now))
    await asyncio.sleep(QUIET)
    assert harness.delivered == []  # the owner's, while its lease runs out
    served.add(KEY)  # ran out: this Mind takes the conversation over
    assert await harness.delivered_count(1, "the firing left behind") == [left]


def observation(observation_id: str, adapter: str, content: dict[str, object]) -> pb.Observation:
    return pb.Observation(id=observation_id, adapter_name=adapter, content_json=json.dumps(content))


async def test_an_observation_condition_fires_once_per_matching_observation(
    harness: Harness,
) -> None:
    condition = TriggerView(
        TriggerKind.OBSERVATION, "UTC", adapter="ci", observation_kind="build", match="FAIL"
    )
    view = await schedule(harness.database, condition)
    scheduler = await harness.start()
    batch = [
        Routed(KEY, observation("o1", "ci", {"kind": "build", "status": "failed"})),
        Routed(KEY, observation("o2", "ci", {"kind": "build", "status": "passed"})),
        Routed(KEY, observation("o3", "mail", {"kind": "build", "status": "failed"})),
        Routed(KEY, observation("o4", "ci", {"type": "deploy", "status": "failed"})),
        Routed(KEY, observation("o5", "ci", {"event": "build", "status": "Failed again"})),
    ]
    await scheduler.observed(batch)
    await scheduler.observed(batch)  # a replayed batch claims nothing new
    fired = await harness.delivered_count(2, "the two matching observations")
    assert [json.loads(f.matched)["observation_id"] for f in fired] == ["o1", "o5"]
    assert json.loads(fired[0].matched)["content"] == {"kind": "build", "status": "failed"}
    assert {f.schedule_id for f in fired} == {view.id}


async def test_an_observation_routed_to_another_owner_never_fires_a_schedule(
    harness: Harness,
) -> None:
    condition = TriggerView(TriggerKind.OBSERVATION, "UTC", match="failed")
    await schedule(harness.database, condition)  # alice's
    carols = await schedule(harness.database, condition, key=CAROLS, owner="carol")
    scheduler = await harness.start()
    await scheduler.observed([Routed(CAROLS, observation("o1", "ci", {"status": "failed"}))])
    [firing] = await harness.delivered_count(1, "carol's firing only")
    assert firing.schedule_id == carols.id


async def test_a_memory_condition_fires_once_on_a_matching_write_and_resumes_after_restart(
    harness: Harness, database: Database
) -> None:
    memory = Memory(database)
    trigger = TriggerView(TriggerKind.MEMORY, "UTC", memory_key="build", match="fail")
    await schedule(database, trigger)
    await harness.start()
    await memory.write(KEY, "build", "all green", run_id="")
    await memory.write(KEY, "other", "failed", run_id="")
    await memory.write(KEY, "build", "it failed", run_id="")
    [firing] = await harness.delivered_count(1, "the matching write's firing")
    assert json.loads(firing.matched) == {"key": "build", "text": "it failed"}
    await harness.stop()
    await memory.write(KEY, "build", "failed twice", run_id="")
    await harness.start()
    fired = await harness.delivered_count(2, "the write made while the loop was stopped, once")
    assert json.loads(fired[1].matched) == {"key": "build", "text": "failed twice"}
    await memory.delete(KEY, "build", run_id="")
    await asyncio.sleep(QUIET)
    assert len(harness.delivered) == 2  # a deletion fires nothing


async def test_a_failing_delivery_never_stops_the_loop(harness: Harness) -> None:
    await schedule(harness.database, HOURLY)
    await harness.start()
    harness.refuse = 1
    harness.set_time(START + timedelta(hours=1))
    await eventually_async(
        lambda: harness.database.read(records.undelivered), what="the refused firing"
    )
    harness.set_time(START + timedelta(hours=2))
    [firing] = await harness.delivered_count(1, "the next firing")
    assert firing.due_at == START + timedelta(hours=2)


class Deadlines:
    """A deadline source (like expiring confirmations) with one deadline."""

    def __init__(self, at: datetime) -> None:
        self.at: datetime | None = at
        self.ran: list[datetime] = []

    async def next_deadline(self) -> datetime | None:
        return self.at

    async def run_due(self, now: datetime) -> None:
        self.ran.append(now)
        self.at = None


async def test_a_deadline_source_runs_once_its_deadline_passed(harness: Harness) -> None:
    deadline = START + timedelta(minutes=10)
    source = Deadlines(deadline)
    scheduler = Scheduler(
        harness.database,
        FileClock(harness.clock_file),
        harness.deliver,
        SchedulerSettings(max_sleep=0.05),
        harness.bus,
    )
    scheduler.add_deadlines(source)
    harness.scheduler = scheduler
    await scheduler.start()
    await asyncio.sleep(QUIET)
    assert source.ran == []
    harness.set_time(deadline)
    await eventually_async(lambda: _ran(source), what="the deadline's run")
    await asyncio.sleep(QUIET)
    assert source.ran == [deadline]


async def _ran(source: Deadlines) -> list[datetime]:
    return source.ran
