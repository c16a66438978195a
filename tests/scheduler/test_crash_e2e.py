"""An interval action under kill -9: a process running the scheduler's loop is killed at random
moments while time moves on, and every interval still fires exactly once (one claimed firing
per due time) and every claimed firing is delivered (again after a crash; the receiving side
dedupes by the firing's key)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.clock_file import set_clock
from helpers.eventually import eventually
from helpers.store_backend import database_url
from scheduling import START, schedule

from mind.events.action_views import TriggerKind, TriggerView
from mind.store import models
from mind.store.database import Database
from mind.store.migrate import upgrade

pytestmark = pytest.mark.e2e
HERE = Path(__file__).parent
INTERVALS = 12


class SchedulerProcess:
    def __init__(self, url: str, clock: Path, log: Path) -> None:
        self._args = [sys.executable, str(HERE / "scheduler_process.py"), url, str(clock), str(log)]
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self._process = subprocess.Popen(
            self._args, stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
        )
        assert self._process.stdout is not None
        assert "scheduler ready" in self._process.stdout.readline()

    def kill(self) -> None:
        if self._process is not None:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()
            self._process = None


@pytest.fixture
def store(tmp_path: Path) -> Iterator[str]:
    url = database_url(tmp_path)
    upgrade(url)
    yield url


def _seed(url: str) -> None:
    async def seed() -> None:
        database = Database.open(url)
        try:
            await database.write(
                lambda tx: tx.session.add(models.Conversation(key="g_team", owner="alice"))
            )
            await schedule(database, TriggerView(TriggerKind.INTERVAL, "UTC", every_seconds=3600))
        finally:
            await database.close()

    asyncio.run(seed())


def _firings(url: str) -> list[tuple[int, datetime]]:
    async def read() -> list[tuple[int, datetime]]:
        database = Database.open(url)
        try:
            return await database.read(
                lambda s: [(f.id, f.due_at) for f in s.query(models.Firing).order_by("id")]
            )
        finally:
            await database.close()

    return asyncio.run(read())


@pytest.mark.pg_e2e
def test_an_interval_action_fires_each_interval_once_across_kill_9s(
    store: str, tmp_path: Path
) -> None:
    _seed(store)
    clock, log = tmp_path / "clock", tmp_path / "delivered.log"
    set_clock(clock, START)
    process = SchedulerProcess(store, clock, log)
    process.start()
    chance = random.Random(20261203)
    kills = 0
    try:
        for hour in range(1, INTERVALS + 1):
            due = START + timedelta(hours=hour)
            set_clock(clock, due + timedelta(seconds=1))
            if chance.random() < 0.6:
                time.sleep(chance.uniform(0.0, 0.06))  # somewhere around the claim
                process.kill()
                kills += 1
                process.start()
            eventually(
                lambda due=due: due.isoformat() in log.read_text() if log.exists() else False,
                what=f"the firing due at {due} delivered",
            )
    finally:
        process.kill()
    firings = _firings(store)
    dues = [d.astimezone(UTC) for _, d in firings]
    assert dues == [START + timedelta(hours=h) for h in range(1, INTERVALS + 1)], (kills, dues)
    delivered = {int(line.split()[0]) for line in log.read_text().splitlines()}
    assert delivered == {firing_id for firing_id, _ in firings}
    assert kills > 0
